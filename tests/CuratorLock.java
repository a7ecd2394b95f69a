// tests/CuratorLock.java — a Java client holding Apache Curator's
// InterProcessMutex, for tests/zookeeper.sh to show that Curator and
// locklab's `curator` strategy exclude each other on one path.
//
//   java -cp <curator-recipes.jar:slf4j-nop.jar> tests/CuratorLock.java \
//        CONNECT PATH hold MS      acquire (30 s at most), print "held",
//                                  hold MS or until a line (or the end) on
//                                  stdin, release
//        CONNECT PATH try  MS      print "acquired" or "busy" after waiting MS at most
//        CONNECT PATH try-held MS  connect and print "ready"; once the lock
//                                  has a holder (60 s at most), try as `try`
//
// The stdin of `hold` and the "ready" of `try-held` let the test order what
// it needs by events, whatever a JVM takes to start: the holder is asked to
// release once the other side has tried, and the other side tries once it
// sees the holder. tests/zookeeper.sh compiles it with javac -cp <same
// jars>; it also runs as a single-file source program (Java 11+). Debian's
// libcurator-recipes-java provides the jars.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLock {
    // Whether the lock at PATH has a holder now (no node yet: none).
    static boolean held(InterProcessMutex mutex) {
        try {
            return !mutex.getParticipantNodes().isEmpty();
        } catch (Exception e) {
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], mode = args[2];
        long ms = Long.parseLong(args[3]);
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect).sessionTimeoutMs(6000).connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build()) {
            client.start();
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            if (mode.equals("try-held")) {
                client.blockUntilConnected(30, TimeUnit.SECONDS);
                System.out.println("ready");
                System.out.flush();
                long until = System.currentTimeMillis() + 60000;
                while (!held(mutex) && System.currentTimeMillis() < until)
                    Thread.sleep(20);
            }
            boolean got = mutex.acquire(mode.equals("hold") ? 30000 : ms, TimeUnit.MILLISECONDS);
            if (!mode.equals("hold")) {
                System.out.println(got ? "acquired" : "busy");
            } else if (got) {
                System.out.println("held " + String.join(",", mutex.getParticipantNodes()));
                System.out.flush();
                CountDownLatch told = new CountDownLatch(1);
                Thread reader = new Thread(() -> {
                    try {
                        System.in.read();
                    } catch (Exception e) {
                        // the end of stdin says the same
                    }
                    told.countDown();
                });
                reader.setDaemon(true);
                reader.start();
                told.await(ms, TimeUnit.MILLISECONDS);
            } else {
                System.out.println("not acquired");
            }
            if (got)
                mutex.release();
            System.out.println("released");
        }
    }
}
