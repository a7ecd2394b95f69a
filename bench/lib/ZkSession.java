/* ZkSession.java — a ZooKeeper session ended from outside, by the server
 * that holds its connection (bench/fault expire app:PORT zk).
 *
 *     java -cp DIR ZkSession PID SESSION     PID: the server's JVM; SESSION:
 *                                            the id as `cons` shows it (0x…)
 *
 * ZooKeeper registers a bean for every client connection in its JVM's
 * platform MBean server (…,Connections,<address>,<session id>,
 * standalone or in an ensemble), whose operation terminateSession()
 * closes the session as the server's own expiry does: its ephemeral
 * nodes are deleted, its watches fire, and the client, on its next
 * contact, hears SESSION_EXPIRED. That is what Curator's tests do with
 * the session's id and password from inside the client (KillSession);
 * from outside, without the password, the server's own management
 * interface is the way. The tool attaches to the server's JVM (the
 * JDK's attach API: same user), starts its local management agent (no
 * port, no configuration of the server), finds the bean and calls it.
 * Exit status: 0 when the session was ended, 1 when no connection of the
 * server carries it, 2 on bad usage.
 */
import com.sun.tools.attach.VirtualMachine;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public final class ZkSession {
    private ZkSession() { }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java ZkSession PID SESSION");
            System.exit(2);
        }
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        String suffix = "=" + args[1].toLowerCase();
        try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = c.getMBeanServerConnection();
            ObjectName all = new ObjectName("org.apache.ZooKeeperService:*");
            for (ObjectName n : server.queryNames(all, null)) {
                String name = n.toString();
                if (name.contains("=Connections,") && name.toLowerCase().endsWith(suffix)) {
                    server.invoke(n, "terminateSession", null, null);
                    System.out.println("ended session " + args[1] + " (" + name + ")");
                    return;
                }
            }
        }
        System.err.println("no connection of this server carries session " + args[1]);
        System.exit(1);
    }
}
