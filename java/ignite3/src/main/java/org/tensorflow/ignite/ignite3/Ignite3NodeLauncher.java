package org.tensorflow.ignite.ignite3;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.ignite.IgniteServer;
import org.apache.ignite.InitParameters;
import org.apache.ignite.InitParametersBuilder;

/**
 * Starts one embedded Apache Ignite 3 server node for tests (tensorflow_ignite.local.ignite3).
 *
 * <pre>
 *   Ignite3NodeLauncher --name N --config node.conf --work-dir DIR --status-file F
 *                       [--init CLUSTER --meta-storage N1,N2 [--cluster-config cluster.conf]]
 *                       [--exit-with PID]
 * </pre>
 *
 * The node reads its HOCON file (ports, node finder, storage profiles; written by the Python
 * side). With {@code --init} this node initialises the cluster once it has started (the
 * meta-storage group is the named nodes; {@code --cluster-config} is cluster-wide HOCON such as
 * security). The status file says {@code started}, then {@code ready} when the cluster is
 * initialised (every node waits for that), or {@code failed: ...}. With {@code --exit-with} the
 * node stops when that process ends, so a test run killed without clean-up leaves no JVM behind.
 */
public final class Ignite3NodeLauncher {
    private Ignite3NodeLauncher() {
    }

    public static void main(String[] args) throws Exception {
        String name = null;
        Path config = null;
        Path workDir = null;
        Path status = null;
        String cluster = null;
        List<String> metaStorage = new ArrayList<>();
        Path clusterConfig = null;
        long exitWith = -1;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--name": name = value; i++; break;
                case "--config": config = Path.of(value); i++; break;
                case "--work-dir": workDir = Path.of(value); i++; break;
                case "--status-file": status = Path.of(value); i++; break;
                case "--init": cluster = value; i++; break;
                case "--meta-storage": metaStorage.addAll(List.of(value.split(","))); i++; break;
                case "--cluster-config": clusterConfig = Path.of(value); i++; break;
                case "--exit-with": exitWith = Long.parseLong(value); i++; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (name == null || config == null || workDir == null || status == null) {
            throw new IllegalArgumentException("--name, --config, --work-dir and --status-file are required");
        }
        final Path statusFile = status;
        if (exitWith > 0) {
            watchOwner(exitWith);
        }
        IgniteServer server;
        try {
            server = IgniteServer.start(name, config, workDir);
            writeStatus(statusFile, "started");
            if (cluster != null) {
                InitParametersBuilder init = InitParameters.builder().clusterName(cluster)
                        .metaStorageNodeNames(metaStorage.isEmpty() ? List.of(name) : metaStorage);
                if (clusterConfig != null) {
                    init.clusterConfiguration(Files.readString(clusterConfig, StandardCharsets.UTF_8));
                }
                server.initCluster(init.build());
            }
            server.waitForInitAsync().get(10, TimeUnit.MINUTES);
            writeStatus(statusFile, "ready");
        } catch (Throwable e) {
            writeStatus(statusFile, "failed: " + e);
            e.printStackTrace();
            System.exit(1);
            return;
        }
        final IgniteServer node = server;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.shutdown();
            } catch (Throwable ignored) {
                // the JVM is ending anyway
            }
        }, "ignite3-shutdown"));
        Thread.currentThread().join();
    }

    private static void watchOwner(long pid) {
        Optional<ProcessHandle> owner = ProcessHandle.of(pid);
        if (owner.isEmpty()) {
            System.exit(2);
        }
        Thread watcher = new Thread(() -> {
            owner.get().onExit().join();
            System.exit(0);
        }, "owner-watcher");
        watcher.setDaemon(true);
        watcher.start();
    }

    private static void writeStatus(Path file, String state) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, state + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
