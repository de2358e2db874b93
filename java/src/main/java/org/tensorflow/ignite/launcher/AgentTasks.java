package org.tensorflow.ignite.launcher;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.ignite.Ignite;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.configuration.ClientConnectorConfiguration;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.lang.IgniteCallable;
import org.apache.ignite.resources.IgniteInstanceResource;

/**
 * The compute callables the supervisor sends to one node's {@link WorkerAgent}.
 * They are on every node's classpath (the launcher jar), so no peer class loading.
 * Each checks the job id it carries ({@link LauncherPolicy#jobId}) before the agent uses it.
 */
final class AgentTasks {
    private AgentTasks() {
    }

    /**
     * The operator's choice of the address a job's TensorFlow servers listen on (in the node's
     * environment, which workers inherit): an address or host name of this node, or {@code *} for
     * every interface. The worker's shim pins its listeners to the address it advertises
     * ({@code tensorflow_ignite/launcher/fence.py}); TensorFlow itself would listen on every interface.
     */
    static final String BIND_HOST_ENV = "TF_IGNITE_WORKER_BIND_HOST";

    /**
     * The address a worker on this node advertises in TF_CONFIG (and, fenced, listens on): the
     * operator's {@link #BIND_HOST_ENV} when it names one, else the client connector's host when it
     * names one (the address clients already reach this node at), else the node's {@code localHost};
     * null when none applies (the caller picks a non-loopback address of the node).
     */
    static String workerHost(String setting, String connectorHost, String localHost) {
        if (setting != null && !setting.isBlank() && !"*".equals(setting.trim()))
            return setting.trim();
        if (specific(connectorHost))
            return connectorHost;
        return localHost == null || localHost.isEmpty() ? null : localHost;
    }

    /** True for an address that names one interface (not empty, {@code 0.0.0.0} or {@code ::}). */
    static boolean specific(String host) {
        return host != null && !host.isBlank() && !host.equals("0.0.0.0") && !host.equals("::")
            && !host.equals("[::]") && !host.equals("0:0:0:0:0:0:0:0");
    }

    /** Where a worker on this node listens and where its dataset connects: a free port, the client endpoint. */
    static final class ProbeNode implements IgniteCallable<HashMap<String, Object>> {
        private static final long serialVersionUID = 1L;

        @IgniteInstanceResource
        private transient Ignite ignite;

        @Override public HashMap<String, Object> call() throws Exception {
            IgniteConfiguration cfg = ignite.configuration();
            ClusterNode local = ignite.cluster().localNode();
            ClientConnectorConfiguration cli = cfg.getClientConnectorConfiguration();
            String connectorHost = cli == null ? null : cli.getHost();
            String host = workerHost(System.getenv(BIND_HOST_ENV), specific(connectorHost) ? connectorHost : null,
                cfg.getLocalHost());
            if (host == null) {
                List<String> addrs = new ArrayList<>(local.addresses());
                host = addrs.stream().filter(a -> !a.startsWith("127.") && !a.contains(":")).findFirst()
                    .orElse(addrs.isEmpty() ? "127.0.0.1" : addrs.get(0));
            }
            String clientHost = specific(connectorHost) ? connectorHost : host;
            Object attrPort = local.attribute("clientListenerPort");
            int clientPort = attrPort instanceof Integer ? (Integer)attrPort
                : cli != null ? cli.getPort() : ClientConnectorConfiguration.DFLT_PORT;
            HashMap<String, Object> out = new HashMap<>();
            out.put("host", host);
            out.put("port", (long)WorkerAgent.freePort(host));
            out.put("client_host", clientHost);
            out.put("client_port", (long)clientPort);
            out.put("node", JobPlan.label(local));
            out.put("node_id", local.id().toString());
            return out;
        }
    }

    /** Start one worker of one attempt of a job on this node; returns its pid. */
    static final class StartWorker implements IgniteCallable<Long> {
        private static final long serialVersionUID = 1L;

        final String job;
        final long attempt;
        final int index;
        final String nodeLabel;
        final String python;
        final ArrayList<String> command;
        final HashMap<String, String> env;
        final int fileChunks;
        /** SHA-256 of the job's archive as the supervisor accepted it (from the sealed spec). */
        final String filesSha256;
        final long maxJobBytes;
        /** {@link LauncherPolicy#getWorkRoot()}: where job directories go (null: the node's work directory). */
        final String workRoot;
        /** The job's {@code output_nonce} (sealed spec): part of the associated data of its sealed output. */
        final String outputNonce;

        @IgniteInstanceResource
        private transient Ignite ignite;

        StartWorker(String job, long attempt, int index, String nodeLabel, String python, List<String> command,
            Map<String, String> env, int fileChunks, String filesSha256, long maxJobBytes, String workRoot,
            String outputNonce) {
            this.job = job;
            this.attempt = attempt;
            this.index = index;
            this.nodeLabel = nodeLabel;
            this.python = python;
            this.command = new ArrayList<>(command);
            this.env = new HashMap<>(env);
            this.fileChunks = fileChunks;
            this.filesSha256 = filesSha256;
            this.maxJobBytes = maxJobBytes;
            this.workRoot = workRoot;
            this.outputNonce = outputNonce;
        }

        @Override public Long call() throws Exception {
            LauncherPolicy.jobId(job);
            return WorkerAgent.start(ignite, this);
        }
    }

    /** Stop this node's workers of a job (attempts ≤ {@code attempt}; all when negative); returns how many. */
    static final class StopWorkers implements IgniteCallable<Integer> {
        private static final long serialVersionUID = 1L;

        final String job;
        final long attempt;
        final long graceMs;

        @IgniteInstanceResource
        private transient Ignite ignite;

        StopWorkers(String job, long attempt, long graceMs) {
            this.job = job;
            this.attempt = attempt;
            this.graceMs = graceMs;
        }

        @Override public Integer call() {
            LauncherPolicy.jobId(job);
            return WorkerAgent.stop(ignite, job, attempt, graceMs);
        }
    }

    /** Delete this node's copy of a job's files and worker logs (none of its workers may run). */
    static final class RemoveJobDir implements IgniteCallable<Boolean> {
        private static final long serialVersionUID = 1L;

        final String job;
        final String workRoot;

        @IgniteInstanceResource
        private transient Ignite ignite;

        RemoveJobDir(String job, String workRoot) {
            this.job = job;
            this.workRoot = workRoot;
        }

        @Override public Boolean call() throws Exception {
            LauncherPolicy.jobId(job);
            return WorkerAgent.removeJobDir(ignite, job, workRoot);
        }
    }
}
