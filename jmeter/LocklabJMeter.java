/*
 * LocklabJMeter.java - start Debian's JMeter 2.13 with XStream allowed to
 * read JMeter's own classes.
 *
 * Why. Debian bookworm ships JMeter 2.13 with XStream 1.4.20. Since 1.4.18
 * XStream refuses to deserialise any class not explicitly allowed, and
 * JMeter 2.13 predates that and allows nothing, so loading ANY .jmx fails:
 *     ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper
 * XStream reads no system property or configuration file for its
 * permissions; they can only be added in code, on the XStream instances
 * that JMeter keeps in SaveService (JMXSAVER for plans, JTLSAVER for XML
 * results). JMeter 3.x+ adds exactly this permission itself.
 *
 * How. Loading org.apache.jmeter.NewDriver runs its static initialiser,
 * which builds JMeter's class loader over lib/ and lib/ext/ as usual. We
 * take that loader, initialise SaveService through it and add one
 * permission to both XStream instances: the types of the packages
 * org.apache.jmeter.** and org.apache.jorphan.** (nothing else: XStream's
 * default allow list stays in force for the rest). Then we call
 * NewDriver.main with the command line unchanged, so everything after this
 * point is stock JMeter: it reads the .jmx, runs its engine and its HTTP
 * sampler, writes the results file.
 *
 * Build (bench/jmeter does it once, into build/jmeter/):
 *     javac -d DIR jmeter/LocklabJMeter.java
 *     java -Djmeter.home=/usr/share/jmeter \
 *          -cp DIR:/usr/share/jmeter/bin/ApacheJMeter.jar LocklabJMeter -n -t ...
 * Only reflection is used, so it compiles without JMeter on the classpath.
 */
import java.io.File;
import java.lang.reflect.Field;

public final class LocklabJMeter {
    private static final String[] ALLOWED = { "org.apache.jmeter.**", "org.apache.jorphan.**" };

    private LocklabJMeter() {
    }

    private static Object staticField(Class<?> cls, String name) throws ReflectiveOperationException {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(null);
    }

    public static void main(String[] args) throws Exception {
        Class<?> driver = Class.forName("org.apache.jmeter.NewDriver");
        ClassLoader loader = (ClassLoader) staticField(driver, "loader");
        Thread.currentThread().setContextClassLoader(loader);

        /* SaveService's initialiser reads saveservice.properties through
         * JMeterUtils: load jmeter.properties first, as JMeter.main would
         * (it loads them again itself, from -p or the default). */
        String home = (String) driver.getMethod("getJMeterDir").invoke(null);
        Class<?> utils = Class.forName("org.apache.jmeter.util.JMeterUtils", true, loader);
        utils.getMethod("loadJMeterProperties", String.class)
             .invoke(null, home + File.separator + "bin" + File.separator + "jmeter.properties");
        utils.getMethod("setJMeterHome", String.class).invoke(null, home);

        Class<?> save = Class.forName("org.apache.jmeter.save.SaveService", true, loader);
        Class<?> perm = Class.forName("com.thoughtworks.xstream.security.TypePermission", true, loader);
        Object allow = Class.forName("com.thoughtworks.xstream.security.WildcardTypePermission", true, loader)
                            .getConstructor(String[].class).newInstance((Object) ALLOWED);
        for (String name : new String[] { "JMXSAVER", "JTLSAVER" }) {
            Object xstream = staticField(save, name);
            Class<?> xc = Class.forName("com.thoughtworks.xstream.XStream", true, loader);
            xc.getMethod("addPermission", perm).invoke(xstream, allow);
        }
        driver.getMethod("main", String[].class).invoke(null, (Object) args);
    }
}
