package org.tensorflow.ignite.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.services.ServiceConfiguration;
import org.apache.ignite.util.AttributeNodeFilter;

/**
 * The tensorflow-ignite module, for nodes configured in Java: what the XML fragment of
 * {@code ignite-tf module config} declares for Spring-configured nodes, and what the
 * project's own {@code NodeLauncher} uses.
 *
 * <pre>
 * IgniteConfiguration cfg = new IgniteConfiguration();
 * ...
 * TfLauncherModule.configure(cfg);
 * Ignition.start(cfg);
 * </pre>
 *
 * It adds two things to the configuration, keeping what is there:
 * <ul>
 *   <li>the user attribute {@value #ATTRIBUTE} = {@link #VERSION}: the module's version on
 *   this node, which clients read (thin-client node details) to tell which nodes have the
 *   module and whether its version matches theirs;</li>
 *   <li>the launcher service {@link TfJobService} ({@value LauncherCaches#SERVICE_NAME}): one
 *   instance in the cluster, restricted by an {@link AttributeNodeFilter} to nodes whose
 *   attribute names this version, so it never lands on a node without the jar.</li>
 * </ul>
 */
public final class TfLauncherModule {
    /** The node attribute that carries the module's version. */
    public static final String ATTRIBUTE = "tensorflow-ignite.module";

    /** This module's version (the same as the Python package's). */
    public static final String VERSION = readVersion();

    private TfLauncherModule() {
    }

    /**
     * Add the module's attribute and service to {@code cfg} with the default {@link LauncherPolicy}
     * (every job refused until the policy allows someone); returns {@code cfg}.
     */
    public static IgniteConfiguration configure(IgniteConfiguration cfg) {
        return configure(cfg, new LauncherPolicy());
    }

    /** Add the module's attribute and service, run under {@code policy}, to {@code cfg}; returns {@code cfg}. */
    public static IgniteConfiguration configure(IgniteConfiguration cfg, LauncherPolicy policy) {
        Map<String, Object> attrs = new HashMap<>();
        if (cfg.getUserAttributes() != null)
            attrs.putAll(cfg.getUserAttributes());
        attrs.put(ATTRIBUTE, VERSION);
        cfg.setUserAttributes(attrs);
        List<ServiceConfiguration> services = new ArrayList<>();
        if (cfg.getServiceConfiguration() != null) {
            for (ServiceConfiguration s : Arrays.asList(cfg.getServiceConfiguration())) {
                if (!LauncherCaches.SERVICE_NAME.equals(s.getName()))
                    services.add(s);
            }
        }
        services.add(serviceConfiguration(policy));
        cfg.setServiceConfiguration(services.toArray(new ServiceConfiguration[0]));
        return cfg;
    }

    /**
     * The launcher service's configuration: a cluster singleton (at most one per node) on
     * nodes that carry this version of the module.
     */
    public static ServiceConfiguration serviceConfiguration(LauncherPolicy policy) {
        ServiceConfiguration svc = new ServiceConfiguration();
        svc.setName(LauncherCaches.SERVICE_NAME);
        svc.setMaxPerNodeCount(1);
        svc.setTotalCount(1);
        svc.setNodeFilter(new AttributeNodeFilter(ATTRIBUTE, VERSION));
        TfJobService service = new TfJobService();
        service.setPolicy(policy);
        svc.setService(service);
        return svc;
    }

    private static String readVersion() {
        Properties props = new Properties();
        try (InputStream in = TfLauncherModule.class.getResourceAsStream("module.properties")) {
            if (in == null)
                throw new IllegalStateException("module.properties is missing from the tensorflow-ignite jar");
            props.load(in);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return props.getProperty("version");
    }
}
