package org.tensorflow.ignite.launcher;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteException;

/**
 * The per-node half of the launcher: spawns TensorFlow worker processes on this
 * node, captures their output into the {@link LauncherCaches#LOGS} cache, records
 * their state in {@link LauncherCaches#WORKERS}, and kills them on request.
 *
 * <p>It is driven by small compute callables ({@link AgentTasks}) that the
 * supervisor sends to exactly the node that must run a worker. Running processes
 * are kept in a node-local registry (static: one Ignite node per JVM here).
 *
 * <p>Each worker runs under {@code python -m tensorflow_ignite.launcher.shim}, which
 * makes the worker a new session, asks the kernel to SIGTERM it when the thread
 * that started it dies (so a killed node leaves no orphan), and forwards signals to
 * the whole process group. That thread is the worker's own pump thread, alive
 * until the worker exits.
 */
public final class WorkerAgent {
    private WorkerAgent() {
    }

    /** Output is written to the cache in chunks of at most this many lines ... */
    static final int CHUNK_LINES = 256;
    /** ... or bytes, at least every {@link #FLUSH_MS}. */
    static final int CHUNK_BYTES = 64 * 1024;
    static final long FLUSH_MS = 200;
    /** Longest line kept; the rest is cut (a progress bar without newlines, say). */
    static final int MAX_LINE = 16 * 1024;

    /** Running (or just exited) workers of this node by {@code job/attempt/index}. */
    static final ConcurrentHashMap<String, WorkerProcess> RUNNING = new ConcurrentHashMap<>();

    /** Ports handed out recently, so two probes never return the same one. */
    private static final Map<Integer, Long> RESERVED = new ConcurrentHashMap<>();

    private static final ScheduledExecutorService FLUSHER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "tf-ignite-output-flusher");
        t.setDaemon(true);
        return t;
    });

    static {
        FLUSHER.scheduleWithFixedDelay(() -> {
            for (WorkerProcess w : RUNNING.values()) {
                try {
                    w.flush(false);
                }
                catch (RuntimeException e) {
                    // The cache is unreachable for a moment (topology change): keep the lines, retry.
                }
            }
        }, FLUSH_MS, FLUSH_MS, TimeUnit.MILLISECONDS);
    }

    /** Node environment variable: the port range {@code LOW-HIGH} the workers' TF servers listen on. */
    static final String PORTS_ENV = "TF_IGNITE_WORKER_PORTS";

    /**
     * A free TCP port on {@code host} for a TF server, not handed out in the last minute.
     *
     * <p>The server binds it seconds later, after the worker has imported TensorFlow. A port
     * the kernel picks for {@code bind(0)} lies in its ephemeral range, which it also hands to
     * outgoing connections, so one of those could take it meanwhile and the worker would fail
     * to start. So the port comes from {@link #PORTS_ENV} of the node's environment if set, else
     * from above the kernel's ephemeral range (never given to outgoing connections), and only
     * when that has no free port from the kernel.
     */
    static synchronized int freePort(String host) throws IOException {
        long now = System.currentTimeMillis();
        RESERVED.values().removeIf(t -> now - t > 60_000);
        int[] range = portRange(System.getenv(PORTS_ENV), ephemeralRange());
        if (range != null) {
            java.util.concurrent.ThreadLocalRandom rnd = java.util.concurrent.ThreadLocalRandom.current();
            int span = range[1] - range[0] + 1;
            for (int attempt = 0; attempt < Math.min(200, 4 * span); attempt++) {
                int port = range[0] + rnd.nextInt(span);
                if (!RESERVED.containsKey(port) && bindable(host, port)) {
                    RESERVED.put(port, now);
                    return port;
                }
            }
            if (System.getenv(PORTS_ENV) != null)
                throw new IOException("no free port on " + host + " in " + PORTS_ENV + "=" + range[0] + "-"
                    + range[1] + "; widen the range or stop what listens there");
        }
        for (int attempt = 0; attempt < 50; attempt++) {
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(false);
                s.bind(new InetSocketAddress(host, 0));
                int port = s.getLocalPort();
                if (RESERVED.putIfAbsent(port, now) == null)
                    return port;
            }
        }
        throw new IOException("no free port found on " + host);
    }

    /**
     * The ports to pick TF servers' ports from: {@code setting} ({@code LOW-HIGH}) if given,
     * else the ports above the kernel's ephemeral range {@code ephemeral} when there are at
     * least 100 of them; null for "let the kernel pick".
     *
     * @throws IOException if {@code setting} is not a range of ports.
     */
    static int[] portRange(String setting, int[] ephemeral) throws IOException {
        if (setting != null && !setting.isBlank()) {
            String[] parts = setting.trim().split("-");
            try {
                int low = Integer.parseInt(parts[0].trim());
                int high = parts.length == 2 ? Integer.parseInt(parts[1].trim()) : -1;
                if (parts.length == 2 && 1024 <= low && low <= high && high <= 65535)
                    return new int[] {low, high};
            }
            catch (NumberFormatException e) {
                // reported below
            }
            throw new IOException(PORTS_ENV + "=" + setting + " is not a port range LOW-HIGH within 1024-65535");
        }
        if (ephemeral != null && 65535 - ephemeral[1] >= 100)
            return new int[] {ephemeral[1] + 1, 65535};
        return null;
    }

    /** The kernel's ephemeral port range (Linux), or null where it cannot be read. */
    static int[] ephemeralRange() {
        try {
            // Read as a stream: procfs reports a size of 0, and Files.readString then returns a stub.
            String line;
            try (BufferedReader r = Files.newBufferedReader(Paths.get("/proc/sys/net/ipv4/ip_local_port_range"))) {
                line = r.readLine();
            }
            String[] f = line.trim().split("\\s+");
            return new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])};
        }
        catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static boolean bindable(String host, int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress(host, port));
            return true;
        }
        catch (IOException e) {
            return false;
        }
    }

    /** Environment variables of the node process that hold its own secrets; never passed to workers. */
    static final java.util.Set<String> NODE_SECRETS = java.util.Set.of(
        "TF_IGNITE_KEYSTORE_PASSWORD", "TF_IGNITE_TRUSTSTORE_PASSWORD");

    /**
     * Prefix of the node-local worker credentials: {@code TF_IGNITE_WORKER_USERNAME},
     * {@code _PASSWORD}, {@code _CAFILE}, {@code _CERTFILE}, {@code _KEYFILE},
     * {@code _CERT_PASSWORD} in the node's environment (set where the node is started,
     * e.g. by {@code LocalCluster} for secured local clusters).
     */
    static final String WORKER_CREDENTIAL_PREFIX = "TF_IGNITE_WORKER_";

    static final String[] CREDENTIAL_SETTINGS = {"USERNAME", "PASSWORD", "CAFILE", "CERTFILE", "KEYFILE",
        "CERT_PASSWORD"};

    /**
     * The credentials a worker uses to reach its own node, from the node's configuration
     * (never from the job: job records are readable by every client), as the
     * {@code IGNITE_DATASET_*} variables that {@code IgniteDataset}, the {@code ignite://}
     * filesystem and {@code report()} read.
     */
    static Map<String, String> nodeCredentials(Map<String, String> nodeEnv) {
        Map<String, String> out = new HashMap<>();
        for (String s : CREDENTIAL_SETTINGS) {
            String v = nodeEnv.get(WORKER_CREDENTIAL_PREFIX + s);
            if (v != null && !v.isEmpty())
                out.put("IGNITE_DATASET_" + s, v);
        }
        return out;
    }

    /** Deletes this node's directory of a job; false when a worker of the job still runs here. */
    static boolean removeJobDir(Ignite ignite, String job, String workRoot) throws IOException {
        LauncherPolicy.jobId(job);
        for (WorkerProcess w : RUNNING.values()) {
            if (w.req.job.equals(job) && !w.exited)
                return false;
        }
        synchronized (WorkerAgent.class) {
            JobArchive.deleteTree(jobDir(ignite, job, workRoot));
        }
        return true;
    }

    /** Where this node keeps job {@code job}'s files and worker logs (a valid id, strictly inside the root). */
    static Path jobDir(Ignite ignite, String job, String workRoot) {
        String base = ignite.configuration().getWorkDirectory();
        if (base == null)
            base = System.getProperty("java.io.tmpdir");
        return LauncherPolicy.jobDir(workRoot, base, job);
    }

    /**
     * Writes the job's files (shipped through the FILES cache) under {@code jobDir/files}, once
     * per node, after checking that they are the archive the supervisor accepted (its digest).
     * The marker {@code .files-complete} holds that digest: a directory already on disk is used
     * only when its marker names the digest of this job's sealed spec; anything else (a leftover of
     * an earlier job with the same id, a partial unpack) is deleted and unpacked again.
     */
    static Path materialize(Ignite ignite, AgentTasks.StartWorker req) throws IOException {
        Path dir = jobDir(ignite, req.job, req.workRoot);
        Path files = LauncherPolicy.inside(dir, dir.resolve("files"));
        Path done = LauncherPolicy.inside(dir, dir.resolve(".files-complete"));
        if (req.filesSha256 == null || req.filesSha256.isEmpty())
            throw new IOException("job " + req.job + " has no archive digest in its sealed spec; refusing to run it");
        synchronized (WorkerAgent.class) {
            ownerOnlyDirectory(dir);
            if (Files.isRegularFile(done, LinkOption.NOFOLLOW_LINKS)
                && req.filesSha256.equals(new String(Files.readAllBytes(done), StandardCharsets.UTF_8).trim()))
                return files;
            Files.deleteIfExists(done);
            byte[] zip = JobArchive.read(ignite, req.job, req.fileChunks, req.maxJobBytes);
            if (!req.filesSha256.equals(JobArchive.sha256(zip)))
                throw new IOException("the files of job " + req.job + " in " + LauncherCaches.FILES + " are not the "
                    + "ones the launcher accepted (their digest differs): they were changed after submission; "
                    + "refusing to run them");
            JobArchive.deleteTree(files);
            JobArchive.unzip(zip, files, req.maxJobBytes);
            Files.write(done, req.filesSha256.getBytes(StandardCharsets.UTF_8));
            return files;
        }
    }

    /** Creates {@code dir} (and its parents) when missing; the directory itself is readable by its owner only. */
    static void ownerOnlyDirectory(Path dir) throws IOException {
        Files.createDirectories(dir);
        try {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        }
        catch (UnsupportedOperationException e) {
            // not a POSIX file system: its own permissions apply
        }
    }

    /**
     * The state and exit code a worker's node sealed into its record ({@code seal}), or null when the
     * record is missing, was written by someone else or belongs to an earlier job of the same id.
     */
    static String[] openState(Ignite ignite, String nonce, String workerKey, Object record) {
        Object sealed = record instanceof Map ? ((Map<?, ?>)record).get("seal") : null;
        if (!(sealed instanceof byte[]))
            return null;
        String text = LauncherVault.open(ignite, LauncherVault.aad(nonce, "worker:" + workerKey), (byte[])sealed);
        if (text == null)
            return null;
        String[] parts = text.split("\\|", 2);
        return parts.length == 2 ? parts : null;
    }

    /** Starts one worker and returns its pid once the process exists. */
    static long start(Ignite ignite, AgentTasks.StartWorker req) throws Exception {
        LauncherPolicy.jobId(req.job);
        String key = LauncherCaches.workerKey(req.job, req.attempt, req.index);
        // A leftover of an older attempt of this job must not share the node with the new one.
        stop(ignite, req.job, req.attempt - 1, 5_000);
        WorkerProcess existing = RUNNING.get(key);
        if (existing != null && !existing.exited)
            return existing.pid;
        Path files = materialize(ignite, req);
        Path dir = jobDir(ignite, req.job, req.workRoot);

        List<String> cmd = new ArrayList<>();
        cmd.add(req.python);
        // Isolated (-I): no current directory (the job's files) or PYTHON* variables on the shim's path,
        // so a tensorflow_ignite/ shipped with the job cannot stand in for the module's shim. The
        // worker the shim starts is the job's own command, with its directory importable as usual.
        cmd.add("-I");
        cmd.add("-m");
        cmd.add("tensorflow_ignite.launcher.shim");
        cmd.add("--job");
        cmd.add(req.job);
        cmd.add("--attempt");
        cmd.add(Long.toString(req.attempt));
        cmd.add("--worker");
        cmd.add(Integer.toString(req.index));
        cmd.add("--");
        cmd.addAll(req.command);

        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.directory(files.toFile());
        pb.redirectErrorStream(true);
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Map<String, String> env = pb.environment();
        // The node's own secrets (keystore passwords) are not the worker's business.
        env.keySet().removeIf(k -> NODE_SECRETS.contains(k));
        env.putAll(req.env);
        env.putAll(nodeCredentials(System.getenv()));
        for (String c : CREDENTIAL_SETTINGS)
            env.remove(WORKER_CREDENTIAL_PREFIX + c); // passed on under their dataset names only
        env.put("TF_IGNITE_WORK_DIR", files.toString());
        // `python` in the command means the interpreter the job was submitted with.
        Path bin = Paths.get(req.python).getParent();
        if (bin != null)
            env.put("PATH", bin + java.io.File.pathSeparator + env.getOrDefault("PATH", "/usr/bin:/bin"));

        HashMap<String, Object> record = new HashMap<>();
        record.put("job", req.job);
        record.put("attempt", req.attempt);
        record.put("index", (long)req.index);
        record.put("node", req.nodeLabel);
        record.put("task_type", req.env.getOrDefault("TF_IGNITE_TASK_TYPE", "worker"));
        record.put("node_id", ignite.cluster().localNode().id().toString());
        record.put("state", "STARTING");
        record.put("chunks", 0L);
        record.put("pid", null);
        record.put("exit_code", null);
        record.put("log_file", LauncherPolicy.inside(dir, dir.resolve("worker-" + req.attempt + "-" + req.index
            + ".log")).toString());

        WorkerProcess w = new WorkerProcess(ignite, key, req, pb, record);
        RUNNING.put(key, w);
        w.thread.start();
        try {
            return w.started.get(60, TimeUnit.SECONDS);
        }
        catch (ExecutionException e) {
            throw new IgniteException("cannot start worker " + req.index + " of job " + req.job + " ("
                + String.join(" ", cmd) + "): " + e.getCause(), e.getCause());
        }
        catch (TimeoutException e) {
            throw new IgniteException("worker " + req.index + " of job " + req.job + " did not start within 60 s");
        }
    }

    /**
     * Stops this node's workers of {@code job} with attempt ≤ {@code attempt} (all
     * attempts when negative): SIGTERM (the shim forwards it to the worker's process
     * group), then SIGKILL to the worker and every descendant left after {@code graceMs}.
     * Returns once each is gone and its exit is recorded.
     */
    static int stop(Ignite ignite, String job, long attempt, long graceMs) {
        LauncherPolicy.jobId(job);
        List<WorkerProcess> victims = new ArrayList<>();
        for (WorkerProcess w : RUNNING.values()) {
            if (w.req.job.equals(job) && (attempt < 0 || w.req.attempt <= attempt))
                victims.add(w);
        }
        List<ProcessHandle> tree = new ArrayList<>();
        for (WorkerProcess w : victims) {
            Process p = w.process;
            if (p == null)
                continue;
            p.descendants().forEach(tree::add);
            w.stopRequested = true;
            p.destroy();
        }
        long deadline = System.currentTimeMillis() + graceMs;
        for (WorkerProcess w : victims) {
            Process p = w.process;
            if (p == null)
                continue;
            try {
                p.waitFor(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (p.isAlive()) {
                p.descendants().forEach(tree::add);
                p.destroyForcibly();
            }
        }
        for (ProcessHandle h : tree) {
            if (h.isAlive())
                h.destroyForcibly();
        }
        for (WorkerProcess w : victims) {
            if (w.pid > 0)
                killProcessGroup(w.pid);
        }
        for (WorkerProcess w : victims) {
            try {
                w.thread.join(15_000);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return victims.size();
    }

    /** One worker process: its pump thread, buffered output and state record. */
    static final class WorkerProcess {
        final Ignite ignite;
        final String key;
        final AgentTasks.StartWorker req;
        final ProcessBuilder pb;
        final HashMap<String, Object> record;
        final CompletableFuture<Long> started = new CompletableFuture<>();
        final Thread thread;
        volatile Process process;
        volatile long pid;
        volatile boolean exited;
        volatile boolean stopRequested;

        private final List<String> pending = new ArrayList<>();
        private int pendingBytes;
        private long pendingSince;
        private long chunks;
        private BufferedWriter localLog;

        WorkerProcess(Ignite ignite, String key, AgentTasks.StartWorker req, ProcessBuilder pb,
            HashMap<String, Object> record) {
            this.ignite = ignite;
            this.key = key;
            this.req = req;
            this.pb = pb;
            this.record = record;
            // The kernel's parent-death signal to the worker is tied to this thread
            // (it forks the process), which therefore lives exactly as long as the worker.
            this.thread = new Thread(this::run, "tf-ignite-worker-" + key);
            this.thread.setDaemon(true);
        }

        private void run() {
            try {
                localLog = openLog(Paths.get((String)record.get("log_file")));
            }
            catch (IOException e) {
                localLog = null;
            }
            Process p;
            try {
                p = pb.start();
            }
            catch (IOException | RuntimeException e) {
                synchronized (this) {
                    record.put("state", "FAILED_TO_START");
                    record.put("exit_code", 127L);
                    record.put("error", e.toString());
                    record.put("ended_ms", System.currentTimeMillis());
                    putRecord();
                }
                exited = true;
                RUNNING.remove(key, this);
                started.completeExceptionally(e);
                return;
            }
            process = p;
            pid = p.pid();
            // A background child holding the output pipe open must not keep this
            // thread (and the worker's EXITED record) waiting once the worker is gone.
            long group = pid;
            p.onExit().thenRun(() -> killProcessGroup(group));
            synchronized (this) {
                record.put("state", "RUNNING");
                record.put("pid", pid);
                record.put("started_ms", System.currentTimeMillis());
                putRecord();
            }
            started.complete(pid);
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null)
                    append(line);
            }
            catch (IOException e) {
                append("[tf-ignite] output of the worker could not be read further: " + e);
            }
            // The shim is gone (it may have been SIGKILLed itself): nothing of its
            // process group may outlive it.
            killProcessGroup(pid);
            int code;
            while (true) {
                try {
                    code = p.waitFor();
                    break;
                }
                catch (InterruptedException e) {
                    // Keep waiting: the exit code must be recorded.
                }
            }
            for (int i = 0; i < 50; i++) {
                try {
                    flush(true);
                    break;
                }
                catch (RuntimeException e) {
                    sleepQuietly(200);
                }
            }
            synchronized (this) {
                record.put("state", "EXITED");
                record.put("exit_code", (long)code);
                record.put("stopped", stopRequested);
                record.put("ended_ms", System.currentTimeMillis());
                for (int i = 0; i < 50; i++) {
                    try {
                        putRecord();
                        break;
                    }
                    catch (RuntimeException e) {
                        sleepQuietly(200);
                    }
                }
            }
            exited = true;
            RUNNING.remove(key, this);
            try {
                if (localLog != null)
                    localLog.close();
            }
            catch (IOException ignored) {
                // best effort
            }
        }

        private synchronized void append(String line) {
            if (line.length() > MAX_LINE)
                line = line.substring(0, MAX_LINE) + " [line cut at " + MAX_LINE + " characters]";
            if (pending.isEmpty())
                pendingSince = System.currentTimeMillis();
            pending.add(line);
            pendingBytes += line.length() + 1;
            if (localLog != null) {
                try {
                    localLog.write(line);
                    localLog.write('\n');
                }
                catch (IOException ignored) {
                    // the cache copy is the one that matters
                }
            }
            if (pending.size() >= CHUNK_LINES || pendingBytes >= CHUNK_BYTES)
                flush(true);
        }

        /** Writes buffered lines as the next chunk (when due, or always with {@code force}). */
        synchronized void flush(boolean force) {
            if (pending.isEmpty())
                return;
            if (!force && System.currentTimeMillis() - pendingSince < FLUSH_MS)
                return;
            IgniteCache<String, HashMap<String, Object>> logs = ignite.cache(LauncherCaches.LOGS);
            HashMap<String, Object> chunk = new HashMap<>();
            chunk.put("t", pendingSince);
            String chunkKey = LauncherCaches.logKey(req.job, req.attempt, req.index, chunks);
            // Encrypted: the logs cache is readable by every client; the supervisor hands the
            // text to the job's submitter (TfJobService.output). The job's nonce in the associated
            // data: output of an earlier job with the same id does not open as this one's.
            chunk.put("sealed", LauncherVault.seal(ignite, LauncherVault.aad(req.outputNonce, chunkKey),
                String.join("\n", pending)));
            logs.put(chunkKey, chunk);
            chunks++;
            pending.clear();
            pendingBytes = 0;
            record.put("chunks", chunks);
            putRecord();
            if (localLog != null) {
                try {
                    localLog.flush();
                }
                catch (IOException ignored) {
                    // best effort
                }
            }
        }

        private void putRecord() {
            IgniteCache<String, HashMap<String, Object>> workers = ignite.cache(LauncherCaches.WORKERS);
            HashMap<String, Object> out = new HashMap<>(record);
            // What the supervisor acts on (state, exit code), sealed: a worker record a client writes is ignored.
            out.put("seal", LauncherVault.seal(ignite, LauncherVault.aad(req.outputNonce, "worker:" + key),
                record.get("state") + "|" + record.get("exit_code")));
            workers.put(key, out);
        }
    }

    /** A worker's log file on this node, created readable and writable by the node's OS user only. */
    static BufferedWriter openLog(Path file) throws IOException {
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            }
            catch (UnsupportedOperationException e) {
                Files.createFile(file);
            }
        }
        return Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.APPEND,
            LinkOption.NOFOLLOW_LINKS);
    }

    /**
     * SIGKILLs every process of process group {@code pgid} (the shim makes its pid the
     * group id of the worker and all it starts). Linux does not reuse a pid while it
     * still names a group, so this never hits a stranger.
     */
    static int killProcessGroup(long pgid) {
        int killed = 0;
        java.io.File[] procs = new java.io.File("/proc").listFiles();
        if (procs == null)
            return 0;
        for (java.io.File f : procs) {
            String name = f.getName();
            if (name.isEmpty() || !Character.isDigit(name.charAt(0)))
                continue;
            try {
                String stat = new String(Files.readAllBytes(f.toPath().resolve("stat")), StandardCharsets.UTF_8);
                String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                // fields: state, ppid, pgrp, ...
                if (fields.length > 2 && !"Z".equals(fields[0]) && Long.parseLong(fields[2]) == pgid) {
                    long pid = Long.parseLong(name);
                    if (pid == ProcessHandle.current().pid())
                        continue;
                    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                    killed++;
                }
            }
            catch (IOException | RuntimeException e) {
                // the process went away while we looked
            }
        }
        return killed;
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
