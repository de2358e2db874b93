package org.tensorflow.ignite;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.ignite.Ignite;
import org.apache.ignite.Ignition;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.cluster.ClusterState;
import org.apache.ignite.configuration.ClientConnectorConfiguration;
import org.apache.ignite.configuration.DataRegionConfiguration;
import org.apache.ignite.configuration.DataStorageConfiguration;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.configuration.ThinClientConfiguration;
import org.apache.ignite.spi.communication.tcp.TcpCommunicationSpi;
import org.apache.ignite.spi.discovery.tcp.TcpDiscoverySpi;
import org.apache.ignite.spi.discovery.tcp.ipfinder.vm.TcpDiscoveryVmIpFinder;
import org.apache.ignite.ssl.SslContextFactory;
import org.tensorflow.ignite.launcher.TfLauncherModule;

/**
 * Starts one Apache Ignite server node configured entirely from command-line flags.
 *
 * <p>Used by {@code ignite-tf node start} and by the test fixtures. Everything binds
 * to loopback unless {@code --host} says otherwise; discovery uses a static IP finder
 * over a port range so that independent clusters on one machine never meet.
 *
 * <p>Readiness is published through a small JSON status file (written atomically)
 * that the Python side polls together with a thin-client handshake: no fixed sleeps.
 * Secrets (keystore and truststore passwords) are read from environment variables,
 * never from argv, so they do not show up in {@code ps}.
 *
 * <p>Every node carries the tensorflow-ignite module exactly as a user's node does
 * ({@link TfLauncherModule#configure}: the module attribute and the launcher service in
 * its configuration), unless started with {@code --no-launcher-service}.
 * {@code --launcher-service-config} is accepted and means the same as the default.
 * {@code --follow-log CACHE[,CACHE]} (and {@code --follow-log-retention-s}) adds the module's
 * follow log of those caches ({@link org.tensorflow.ignite.follow.FollowLog#configure}).
 */
public final class NodeLauncher {
    private NodeLauncher() {
    }

    /** Parsed command-line options. */
    static final class Options {
        String host = "127.0.0.1";
        String name = "tf-ignite-node";
        String consistentId;
        int clientPort = 10800;
        int discoveryPort = 47500;
        int discoveryBase = -1;
        int discoveryPortCount = 10;
        int communicationPort = 47100;
        Path workDir = Paths.get("ignite-work");
        Path statusFile;
        boolean persistence;
        long regionMb = 512;
        boolean auth;
        /** The launcher's security settings ({@code --launcher-*}); refuses every job by default. */
        final org.tensorflow.ignite.launcher.LauncherPolicy policy = new org.tensorflow.ignite.launcher.LauncherPolicy();
        int computeTasks = 64;
        int activateAt;
        String tlsKeystore;
        String tlsTruststore;
        boolean tlsClientAuth;
        String storeType = "PKCS12";
        long failureDetectionMs = 10_000;
        boolean launcherService = true;
        long exitWith = -1;
        /** Caches whose updates the module logs for exactly-once followers ({@code --follow-log a,b}). */
        final List<String> followLog = new ArrayList<>();
        long followLogRetentionS = org.tensorflow.ignite.follow.FollowLog.DEFAULT_RETENTION_SECONDS;
    }

    public static void main(String[] args) throws Exception {
        Options o = parse(args);
        if (o.exitWith > 0)
            exitWithOwner(o.exitWith);
        IgniteConfiguration cfg = configure(o);
        Ignite ignite = Ignition.start(cfg);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Ignite's own hook stops the node; we only mark the status file.
            writeStatus(o, ignite, "stopped");
        }, "tf-ignite-status-on-exit"));
        watch(o, ignite);
    }

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--host": o.host = args[++i]; break;
                case "--name": o.name = args[++i]; break;
                case "--consistent-id": o.consistentId = args[++i]; break;
                case "--client-port": o.clientPort = Integer.parseInt(args[++i]); break;
                case "--discovery-port": o.discoveryPort = Integer.parseInt(args[++i]); break;
                case "--discovery-base": o.discoveryBase = Integer.parseInt(args[++i]); break;
                case "--discovery-port-count": o.discoveryPortCount = Integer.parseInt(args[++i]); break;
                case "--communication-port": o.communicationPort = Integer.parseInt(args[++i]); break;
                case "--work-dir": o.workDir = Paths.get(args[++i]); break;
                case "--status-file": o.statusFile = Paths.get(args[++i]); break;
                case "--persistence": o.persistence = true; break;
                case "--region-mb": o.regionMb = Long.parseLong(args[++i]); break;
                case "--auth": o.auth = true; break;
                case "--compute-tasks": o.computeTasks = Integer.parseInt(args[++i]); break;
                case "--activate-at": o.activateAt = Integer.parseInt(args[++i]); break;
                case "--tls-keystore": o.tlsKeystore = args[++i]; break;
                case "--tls-truststore": o.tlsTruststore = args[++i]; break;
                case "--tls-client-auth": o.tlsClientAuth = true; break;
                case "--store-type": o.storeType = args[++i]; break;
                case "--failure-detection-ms": o.failureDetectionMs = Long.parseLong(args[++i]); break;
                case "--no-launcher-service": o.launcherService = false; break;
                case "--launcher-allow-unauthenticated": o.policy.setAllowUnauthenticated(true); break;
                case "--launcher-submitters": o.policy.setSubmitters(java.util.List.of(args[++i])); break;
                case "--launcher-admins": o.policy.setAdmins(java.util.List.of(args[++i])); break;
                case "--launcher-allowed-commands": o.policy.setAllowedCommands(java.util.List.of(args[++i].split(","))); break;
                case "--launcher-max-job-bytes": o.policy.setMaxJobBytes(Long.parseLong(args[++i])); break;
                case "--launcher-work-root": o.policy.setWorkRoot(args[++i]); break;
                case "--launcher-service-config": break; // the default (kept for older callers)
                case "--exit-with": o.exitWith = Long.parseLong(args[++i]); break;
                case "--follow-log": o.followLog.add(args[++i]); break;
                case "--follow-log-retention-s": o.followLogRetentionS = Long.parseLong(args[++i]); break;
                default:
                    System.err.println("NodeLauncher: unknown flag " + a);
                    System.exit(2);
            }
        }
        if (o.discoveryBase < 0)
            o.discoveryBase = o.discoveryPort;
        if (o.consistentId == null)
            o.consistentId = o.name;
        if (o.auth && !o.persistence) {
            System.err.println("NodeLauncher: --auth needs --persistence (Ignite stores users in the persistent store)");
            System.exit(2);
        }
        return o;
    }

    static IgniteConfiguration configure(Options o) {
        IgniteConfiguration cfg = new IgniteConfiguration();
        cfg.setIgniteInstanceName(o.name);
        cfg.setConsistentId(o.consistentId);
        cfg.setLocalHost(o.host);
        cfg.setWorkDirectory(o.workDir.toAbsolutePath().toString());
        cfg.setMetricsLogFrequency(0);
        cfg.setPeerClassLoadingEnabled(false);
        cfg.setFailureDetectionTimeout(o.failureDetectionMs);
        cfg.setClientFailureDetectionTimeout(o.failureDetectionMs);

        TcpDiscoveryVmIpFinder finder = new TcpDiscoveryVmIpFinder();
        List<String> addrs = new ArrayList<>();
        // Every member of the cluster lists the same slot range, so nodes added
        // later (a rebalancing test, `node start --join`) find the others.
        addrs.add(o.host + ":" + o.discoveryBase + ".." + (o.discoveryBase + o.discoveryPortCount - 1));
        finder.setAddresses(addrs);
        TcpDiscoverySpi disco = new TcpDiscoverySpi();
        disco.setIpFinder(finder);
        disco.setLocalAddress(o.host);
        disco.setLocalPort(o.discoveryPort);
        disco.setLocalPortRange(0);
        cfg.setDiscoverySpi(disco);

        TcpCommunicationSpi comm = new TcpCommunicationSpi();
        comm.setLocalAddress(o.host);
        comm.setLocalPort(o.communicationPort);
        comm.setLocalPortRange(0);
        cfg.setCommunicationSpi(comm);

        ClientConnectorConfiguration cli = new ClientConnectorConfiguration();
        cli.setHost(o.host);
        cli.setPort(o.clientPort);
        cli.setPortRange(0);
        cli.setThinClientConfiguration(
            new ThinClientConfiguration().setMaxActiveComputeTasksPerConnection(o.computeTasks));
        if (o.tlsKeystore != null) {
            SslContextFactory ssl = new SslContextFactory();
            ssl.setKeyStoreType(o.storeType);
            ssl.setKeyStoreFilePath(o.tlsKeystore);
            ssl.setKeyStorePassword(secret("TF_IGNITE_KEYSTORE_PASSWORD").toCharArray());
            if (o.tlsTruststore != null) {
                ssl.setTrustStoreType(o.storeType);
                ssl.setTrustStoreFilePath(o.tlsTruststore);
                ssl.setTrustStorePassword(secret("TF_IGNITE_TRUSTSTORE_PASSWORD").toCharArray());
            }
            else
                ssl.setTrustManagers(SslContextFactory.getDisabledTrustManager());
            cli.setSslEnabled(true);
            cli.setUseIgniteSslContextFactory(false);
            cli.setSslContextFactory(ssl);
            cli.setSslClientAuth(o.tlsClientAuth);
        }
        cfg.setClientConnectorConfiguration(cli);

        DataRegionConfiguration region = new DataRegionConfiguration();
        region.setName("default");
        region.setInitialSize(Math.min(256L, o.regionMb) * 1024 * 1024);
        region.setMaxSize(o.regionMb * 1024 * 1024);
        region.setPersistenceEnabled(o.persistence);
        DataStorageConfiguration storage = new DataStorageConfiguration();
        storage.setDefaultDataRegionConfiguration(region);
        if (o.persistence) {
            // Small WAL segments keep a test node's disk footprint modest.
            storage.setWalSegmentSize(16 * 1024 * 1024);
            storage.setWalSegments(4);
        }
        cfg.setDataStorageConfiguration(storage);
        cfg.setAuthenticationEnabled(o.auth);
        if (o.launcherService) {
            TfLauncherModule.configure(cfg, o.policy);
            org.tensorflow.ignite.follow.FollowLog.configure(cfg, o.followLog, o.followLogRetentionS);
        }
        return cfg;
    }

    private static String secret(String env) {
        String v = System.getenv(env);
        if (v == null) {
            System.err.println("NodeLauncher: environment variable " + env + " must hold the store password");
            System.exit(2);
        }
        return v;
    }

    /** Keeps the status file current and activates a persistent cluster once it is complete. */
    /**
     * Stops this node when process {@code pid} ends, however it ends (a test run
     * killed by a timeout must not leave its nodes running).  Java polls processes
     * that are not its children, so this also works across {@code setsid}.
     */
    static void exitWithOwner(long pid) {
        Optional<ProcessHandle> owner = ProcessHandle.of(pid);
        if (owner.isEmpty() || !owner.get().isAlive()) {
            System.err.println("NodeLauncher: owner process " + pid + " is not running; not starting");
            System.exit(3);
        }
        owner.get().onExit().thenRun(() -> {
            System.out.println("NodeLauncher: owner process " + pid + " ended; stopping the node");
            System.exit(0);
        });
    }

    static void watch(Options o, Ignite ignite) throws InterruptedException {
        String last = null;
        while (true) {
            if (o.activateAt > 0 && ignite.cluster().state() != ClusterState.ACTIVE
                && ignite.cluster().forServers().nodes().size() >= o.activateAt) {
                try {
                    ignite.cluster().state(ClusterState.ACTIVE);
                }
                catch (RuntimeException e) {
                    System.err.println("NodeLauncher: activation failed, will retry: " + e);
                }
            }
            String now = writeStatus(o, ignite, "running");
            if (now != null && !now.equals(last)) {
                System.out.println("NodeLauncher: status " + now);
                last = now;
            }
            Thread.sleep(200); // polling interval of the status file, not a readiness wait
        }
    }

    static String writeStatus(Options o, Ignite ignite, String state) {
        if (o.statusFile == null)
            return null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("state", state);
        m.put("pid", ProcessHandle.current().pid());
        m.put("name", o.name);
        m.put("host", o.host);
        m.put("client_port", o.clientPort);
        m.put("discovery_port", o.discoveryPort);
        m.put("communication_port", o.communicationPort);
        try {
            m.put("node_id", ignite.cluster().localNode().id().toString());
            m.put("cluster_state", ignite.cluster().state().toString());
            List<String> servers = new ArrayList<>();
            for (ClusterNode n : ignite.cluster().forServers().nodes())
                servers.add(n.id().toString());
            m.put("topology_version", ignite.cluster().topologyVersion());
            m.put("servers", servers);
        }
        catch (RuntimeException e) {
            m.put("error", e.toString());
        }
        String json = toJson(m);
        try {
            Path tmp = o.statusFile.resolveSibling(o.statusFile.getFileName() + ".tmp");
            Files.write(tmp, json.getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, o.statusFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        catch (IOException e) {
            System.err.println("NodeLauncher: cannot write status file: " + e);
        }
        return json;
    }

    private static String toJson(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!first)
                sb.append(", ");
            first = false;
            sb.append('"').append(e.getKey()).append("\": ").append(jsonValue(e.getValue()));
        }
        return sb.append('}').toString();
    }

    private static String jsonValue(Object v) {
        if (v instanceof Number || v instanceof Boolean)
            return v.toString();
        if (v instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            List<?> l = (List<?>)v;
            for (int i = 0; i < l.size(); i++) {
                if (i > 0)
                    sb.append(", ");
                sb.append(jsonValue(l.get(i)));
            }
            return sb.append(']').toString();
        }
        String s = String.valueOf(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
        return '"' + s + '"';
    }
}
