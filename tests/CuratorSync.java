// tests/CuratorSync.java — Java clients of Apache Curator's own recipes,
// for tests/sync.sh to show that locklab's Curator synchronizers (sync/)
// cooperate with them on the same paths.
//
//   java -cp <curator jars> CuratorSync CONNECT MODE PATH ARGS…
//     rw-write PATH HOLD_MS            write lock (30 s at most): "held T",
//                                      hold, release: "released T"
//     rw-try   PATH read|write WAIT_MS "acquired" or "busy"
//     sem-hold PATH MAX QTY HOLD_MS    qty leases of InterProcessSemaphoreV2(MAX):
//                                      "held T", hold, return: "released T"
//     sem-try  PATH MAX QTY WAIT_MS    "acquired" or "busy"
//     sem-run  PATH MAX THREADS N HOLD_MS
//                                      THREADS threads × N times: one lease,
//                                      hold, return; a line "lease A R" each
//                                      (wall ms acquired, returned)
//     atomic   PATH LOCKPATH THREADS N THREADS × N increments of a
//                                      DistributedAtomicLong promoted to the
//                                      mutex LOCKPATH: "value V" per success,
//                                      "failed" per failure
//     atomic-set PATH LOCKPATH VALUE   forceSet(VALUE) of that counter: "set V"
//
// T, A and R are System.currentTimeMillis(), comparable with locklab's
// answers (the same machine's clock). Debian's libcurator-recipes-java
// (5.4) provides the jars; tests/sync.sh compiles this with javac.
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorSync {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static long now() {
        return System.currentTimeMillis();
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], mode = args[1], path = args[2];
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect).sessionTimeoutMs(6000).connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build()) {
            client.start();
            switch (mode) {
            case "rw-write": {
                InterProcessMutex w = new InterProcessReadWriteLock(client, path).writeLock();
                if (!w.acquire(30, TimeUnit.SECONDS)) {
                    say("not acquired");
                    return;
                }
                say("held " + now());
                Thread.sleep(Long.parseLong(args[3]));
                say("released " + now());
                w.release();
                break;
            }
            case "rw-try": {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                InterProcessMutex m = args[3].equals("read") ? rw.readLock() : rw.writeLock();
                boolean got = m.acquire(Long.parseLong(args[4]), TimeUnit.MILLISECONDS);
                say(got ? "acquired" : "busy");
                if (got)
                    m.release();
                break;
            }
            case "sem-hold":
            case "sem-try": {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(client, path,
                        Integer.parseInt(args[3]));
                int qty = Integer.parseInt(args[4]);
                long ms = Long.parseLong(args[5]);
                Collection<Lease> leases = s.acquire(qty, mode.equals("sem-try") ? ms : 30000,
                        TimeUnit.MILLISECONDS);
                if (mode.equals("sem-try")) {
                    say(leases != null ? "acquired" : "busy");
                } else if (leases != null) {
                    say("held " + now());
                    Thread.sleep(ms);
                    say("released " + now());
                } else {
                    say("not acquired");
                }
                if (leases != null)
                    s.returnAll(leases);
                break;
            }
            case "sem-run": {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(client, path,
                        Integer.parseInt(args[3]));
                int threads = Integer.parseInt(args[4]), n = Integer.parseInt(args[5]);
                long hold = Long.parseLong(args[6]);
                List<Thread> all = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Thread th = new Thread(() -> {
                        try {
                            for (int i = 0; i < n; i++) {
                                Lease l = s.acquire(30, TimeUnit.SECONDS);
                                if (l == null) {
                                    say("failed");
                                    continue;
                                }
                                long a = now();
                                Thread.sleep(hold);
                                long r = now();
                                s.returnLease(l);
                                say("lease " + a + " " + r);
                            }
                        } catch (Exception e) {
                            say("failed " + e);
                        }
                    });
                    th.start();
                    all.add(th);
                }
                for (Thread th : all)
                    th.join();
                break;
            }
            case "atomic": {
                DistributedAtomicLong counter = new DistributedAtomicLong(client, path,
                        new RetryNTimes(3, 1),
                        PromotedToLock.builder().lockPath(args[3]).timeout(30, TimeUnit.SECONDS)
                                .retryPolicy(new RetryNTimes(1000, 1)).build());
                int threads = Integer.parseInt(args[4]), n = Integer.parseInt(args[5]);
                List<Thread> all = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Thread th = new Thread(() -> {
                        try {
                            for (int i = 0; i < n; i++) {
                                AtomicValue<Long> v = counter.increment();
                                say(v.succeeded() ? "value " + v.postValue() : "failed");
                            }
                        } catch (Exception e) {
                            say("failed " + e);
                        }
                    });
                    th.start();
                    all.add(th);
                }
                for (Thread th : all)
                    th.join();
                break;
            }
            case "atomic-set": {
                DistributedAtomicLong counter = new DistributedAtomicLong(client, path,
                        new RetryNTimes(3, 1),
                        PromotedToLock.builder().lockPath(args[3]).build());
                counter.forceSet(Long.parseLong(args[4]));
                say("set " + counter.get().postValue());
                break;
            }
            default:
                say("unknown mode " + mode);
            }
        }
    }
}
