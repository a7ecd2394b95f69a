// tests/CuratorLock.java — a Java client holding Apache Curator's
// InterProcessMutex, for tests/zookeeper.sh to show that Curator and
// locklab's `curator` strategy exclude each other on one path.
//
//   java -cp <curator-recipes.jar:slf4j-nop.jar> tests/CuratorLock.java \
//        CONNECT PATH hold MS     acquire (30 s at most), print "held", hold MS, release
//        CONNECT PATH try  MS     print "acquired" or "busy" after waiting MS at most
//
// tests/zookeeper.sh compiles it with javac -cp <same jars>; it also runs
// as a single-file source program (Java 11+). Debian's
// libcurator-recipes-java provides the jars.
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLock {
    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], mode = args[2];
        long ms = Long.parseLong(args[3]);
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect).sessionTimeoutMs(6000).connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5)).build()) {
            client.start();
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            boolean got = mutex.acquire(mode.equals("hold") ? 30000 : ms, TimeUnit.MILLISECONDS);
            if (mode.equals("try")) {
                System.out.println(got ? "acquired" : "busy");
            } else if (got) {
                System.out.println("held " + String.join(",", mutex.getParticipantNodes()));
                System.out.flush();
                Thread.sleep(ms);
            } else {
                System.out.println("not acquired");
            }
            if (got)
                mutex.release();
            System.out.println("released");
        }
    }
}
