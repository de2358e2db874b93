package org.tensorflow.ignite.launcher;

import static org.tensorflow.ignite.launcher.TfJobService.MAX_BACKOFF_MS;
import static org.tensorflow.ignite.launcher.TfJobService.MAX_EVENTS;
import static org.tensorflow.ignite.launcher.TfJobService.POLL_MS;
import static org.tensorflow.ignite.launcher.TfJobService.STOPPED_EXIT_CODE;
import static org.tensorflow.ignite.launcher.TfJobService.terminal;
import static org.tensorflow.ignite.launcher.TfJobService.hostPort;
import static org.tensorflow.ignite.launcher.TfJobService.list;
import static org.tensorflow.ignite.launcher.TfJobService.lng;
import static org.tensorflow.ignite.launcher.TfJobService.signalNote;
import static org.tensorflow.ignite.launcher.TfJobService.str;
import static org.tensorflow.ignite.launcher.TfJobService.taskName;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

import javax.cache.Cache;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteCompute;
import org.apache.ignite.IgniteLogger;
import org.apache.ignite.cache.query.QueryCursor;
import org.apache.ignite.cache.query.ScanQuery;
import org.apache.ignite.cluster.ClusterNode;

/**
 * The reconcile loop of {@link TfJobService}: for every job not yet finished it plans one worker
 * per server node holding primary partitions of the job's cache ({@link JobPlan}), starts the
 * workers through each node's {@link WorkerAgent}, watches their exits, the topology and the
 * partition map, and restarts all workers on a new plan -- with bounded retries and exponential
 * backoff -- when a worker fails, a node leaves or joins, or primaries move.
 *
 * <p>One instance per deployed service instance, made at {@link TfJobService#init}; it holds no job
 * state of its own beyond the settle timers (the records live in the caches). Job records are
 * changed under {@code lock}, the service's own monitor, which the client API holds too.
 */
final class JobSupervisor {
    private final Ignite ignite;

    private final IgniteLogger log;

    private final LauncherPolicy policy;

    /** The monitor every change of a job record holds (the service's, shared with its client API). */
    private final Object lock;

    private final Object wake = new Object();

    /** Per job: the partition-map fingerprint last seen and since when (for the settle delay). */
    private final Map<String, Object[]> settle = new HashMap<>();

    private volatile boolean cancelled;

    /** Per job: the decision fields last written to the vault (saves a vault write when nothing changed). */
    private final Map<String, HashMap<String, Object>> saved = new HashMap<>();

    /** Most keys reported as not being job ids (bounds the memory a client's writes can claim). */
    static final int MAX_IGNORED_REPORTED = 10_000;

    /** Keys of the jobs cache already reported as not being job ids (one audit line each). */
    private final Set<String> ignored = new HashSet<>();

    JobSupervisor(Ignite ignite, IgniteLogger log, LauncherPolicy policy, Object lock) {
        this.ignite = ignite;
        this.log = log;
        this.policy = policy;
        this.lock = lock;
    }

    /** Runs the loop until {@link #cancel}. */
    void run() {
        while (!cancelled) {
            try {
                reconcileAll();
            }
            catch (Throwable e) {
                if (cancelled)
                    break;
                warnOnce("tf-ignite launcher: reconcile failed, will retry: " + e, e);
            }
            synchronized (wake) {
                try {
                    wake.wait(POLL_MS);
                }
                catch (InterruptedException e) {
                    break;
                }
            }
        }
    }

    /** Ends {@link #run}; from now on this instance writes no job record ({@link #save} refuses). */
    void cancel() {
        cancelled = true;
        wakeUp();
    }

    /** Whether {@link #cancel} was called (Ignite moved the singleton: the successor owns the records). */
    boolean cancelled() {
        return cancelled;
    }

    /** Reconciles now rather than at the next poll (a job was submitted or stopped). */
    void wakeUp() {
        synchronized (wake) {
            wake.notifyAll();
        }
    }

    /** Drops the settle timer of a removed job. */
    void forget(String id) {
        synchronized (lock) {
            settle.remove(id);
            saved.remove(id);
        }
    }


    /**
     * The record fields that decide what the supervisor does next. They live in the vault
     * ({@link LauncherVault#putState}); the record in the cache shows them and is restored when a
     * client changed them.
     */
    static final String[] DECISION_FIELDS = {"state", "attempt", "restarts", "workers", "plan", "next_start_ms",
        "exit_code", "finished_ms", "attempt_started_ms", "message", "stop_requested"};

    private void reconcileAll() {
        IgniteCache<String, HashMap<String, Object>> jobs = LauncherCaches.existing(ignite, LauncherCaches.JOBS);
        if (jobs == null)
            return;
        // What runs is what the vault says runs; the cache is scanned only for records that differ from it.
        Map<String, HashMap<String, Object>> states = LauncherVault.states(ignite);
        Set<String> ids = new TreeSet<>();
        for (Map.Entry<String, HashMap<String, Object>> e : states.entrySet()) {
            if (!terminal(e.getValue().get("state")))
                ids.add(e.getKey());
        }
        // Kept binary: a client may have put anything there (another key type, a value of a class this
        // node does not have); such entries are no job records and must not stop the loop.
        IgniteCache<Object, Object> raw = jobs.withKeepBinary();
        try (QueryCursor<Cache.Entry<Object, Object>> cur = raw.query(new ScanQuery<>())) {
            for (Cache.Entry<Object, Object> e : cur) {
                String key = e.getKey() instanceof String ? (String)e.getKey() : String.valueOf(e.getKey());
                Map<?, ?> value = e.getValue() instanceof Map ? (Map<?, ?>)e.getValue() : null;
                if (!(e.getKey() instanceof String) || !validId(key)) {
                    if (ignored.size() < MAX_IGNORED_REPORTED && ignored.add(key))
                        audit("reconcile", LauncherPolicy.printable(key), "ignored: the key of this record in "
                            + LauncherCaches.JOBS + " is not a valid job id (written by a client, not the launcher)");
                    continue;
                }
                Object recState = value == null ? null : value.get("state");
                HashMap<String, Object> st = states.get(key);
                boolean differs = st == null ? !terminal(recState)
                    : !Objects.equals(recState, st.get("state"));
                if (differs || !key.equals(str(value == null ? null : value.get("id"))))
                    ids.add(key);
            }
        }
        for (String id : ids) {
            if (cancelled)
                return;
            synchronized (lock) {
                try {
                    reconcileOne(jobs, id);
                }
                catch (RuntimeException e) {
                    if (cancelled)
                        return;
                    // One job's trouble (a record a client made unreadable, say) must not stop the others.
                    warnOnce("tf-ignite launcher: job " + id + ": " + e, e);
                }
            }
        }
    }

    /** The last failure reported by {@link #warnOnce}. */
    private volatile String lastWarning;

    /**
     * A warning in the node's log, and on its console in Ignite's quiet mode, unless it repeats the
     * previous one (the loop retries every {@link TfJobService#POLL_MS}).
     */
    private void warnOnce(String line, Throwable e) {
        if (line.equals(lastWarning))
            return;
        lastWarning = line;
        log.warning(line, e);
        TfJobService.quietEcho(log, line);
    }

    private static boolean validId(String key) {
        try {
            LauncherPolicy.jobId(key);
            return true;
        }
        catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** One job, by the key it is stored under (the only id the supervisor uses; never a record's id field). */
    private void reconcileOne(IgniteCache<String, HashMap<String, Object>> jobs, String id) {
        HashMap<String, Object> spec = LauncherVault.spec(ignite, id);
        if (spec == null) {
            HashMap<String, Object> stored = record(jobs, id);
            if (stored != null && !terminal(stored.get("state")))
                refuseUnsealed(jobs, id, stored);
            return;
        }
        HashMap<String, Object> rec = view(jobs, id, spec);
        if (terminal(rec.get("state")))
            return;
        try {
            reconcile(jobs, rec, str(spec.get("output_nonce")));
        }
        catch (RuntimeException e) {
            if (cancelled)
                return;
            log.warning("tf-ignite launcher: job " + id + ": " + e, e);
            event(rec, "supervisor error (will retry): " + e);
            save(jobs, rec);
        }
    }

    /**
     * The record of job {@code id} as the supervisor decided it: the cache's copy (for what is only
     * shown: events, failures, audit) with the sealed spec's fields and the vault's decision fields
     * over it. When the cache's copy differed -- a client rewrote or deleted it -- the record is
     * restored and an audit line names the fields that were changed.
     */
    HashMap<String, Object> view(IgniteCache<String, HashMap<String, Object>> jobs, String id,
        HashMap<String, Object> spec) {
        HashMap<String, Object> stored = record(jobs, id);
        HashMap<String, Object> rec = stored == null ? new HashMap<>() : new HashMap<>(stored);
        HashMap<String, Object> st = LauncherVault.state(ignite, id);
        if (st == null) {
            // Accepted by a module version that kept no state in the vault: adopted once from the record;
            // without a record there is nothing to adopt, and the job is not run again.
            st = decisions(rec);
            if (stored == null || st.get("state") == null) {
                st.put("state", "FAILED");
                st.put("exit_code", 1L);
                st.put("message", "the job's record was lost before the launcher kept its state; not run again");
            }
        }
        else
            saved.put(id, st);
        List<String> changed = new ArrayList<>();
        for (String k : TfJobService.SEALED_FIELDS) {
            if (!Objects.equals(rec.get(k), spec.get(k))) {
                changed.add(k);
                rec.put(k, spec.get(k));
            }
        }
        for (String k : DECISION_FIELDS) {
            if (!Objects.equals(rec.get(k), st.get(k))) {
                changed.add(k);
                rec.put(k, st.get(k));
            }
        }
        if (!changed.isEmpty() && !cancelled) {
            String why = stored == null ? "the record was deleted from " + LauncherCaches.JOBS
                : "the record in " + LauncherCaches.JOBS + " was changed by a client (" + String.join(", ", changed)
                + ")";
            audit("restore", id, "refused: " + why + "; restored from the launcher's sealed spec and state"
                + (terminal(rec.get("state")) ? " (the job is " + rec.get("state") + " and stays so)"
                : ""));
            event(rec, "record restored: " + why);
            save(jobs, rec);
        }
        return rec;
    }

    /**
     * The record stored under {@code id}, or null when there is none or what is there is no record
     * (a client may put any value under any key): such a value is treated as a deleted record.
     */
    @SuppressWarnings("unchecked")
    static HashMap<String, Object> record(IgniteCache<String, HashMap<String, Object>> jobs, String id) {
        Object v;
        try {
            v = ((IgniteCache<String, Object>)(IgniteCache<?, ?>)jobs).get(id);
        }
        catch (RuntimeException e) {
            return null; // a value of a class this node cannot read
        }
        if (!(v instanceof Map))
            return null;
        HashMap<String, Object> out = new HashMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>)v).entrySet())
            out.put(String.valueOf(e.getKey()), e.getValue());
        return out;
    }

    private static HashMap<String, Object> decisions(Map<String, Object> rec) {
        HashMap<String, Object> st = new HashMap<>();
        for (String k : DECISION_FIELDS)
            st.put(k, rec.get(k));
        return st;
    }

    /** A record no submit accepted (no sealed spec): marked FAILED at its own key; nothing runs. */
    private void refuseUnsealed(IgniteCache<String, HashMap<String, Object>> jobs, String id,
        HashMap<String, Object> stored) {
        audit("start", id, "refused: the job record was written into " + LauncherCaches.JOBS + " without going "
            + "through submit (no sealed spec)");
        if (cancelled)
            return;
        HashMap<String, Object> rec = new HashMap<>(stored);
        rec.put("id", id);
        rec.put("state", "FAILED");
        rec.put("exit_code", 1L);
        rec.put("finished_ms", System.currentTimeMillis());
        rec.put("message", "refused: this job record was not accepted by the launcher (it was written into the "
            + "cache directly); nothing was run");
        event(rec, "failed: " + rec.get("message"));
        rec.put("updated_ms", System.currentTimeMillis());
        jobs.put(id, rec);
    }

    private void audit(String action, String job, String decision) {
        String line = "tf-ignite audit: action=" + action + " job=" + job + " user=(none) from=(unknown) decision="
            + decision;
        log.warning(line);
        TfJobService.quietEcho(log, line);
    }

    private void reconcile(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec,
        String nonce) {
        String state = str(rec.get("state"));
        if (Boolean.TRUE.equals(rec.get("stop_requested")) && !"STOPPING".equals(state)) {
            rec.put("state", state = "STOPPING");
            rec.put("message", "stopping");
            save(jobs, rec);
        }
        switch (state) {
            case "PENDING":
            case "RESTARTING":
                maybeLaunch(jobs, rec, nonce);
                break;
            case "STARTING":
                // Only seen after a supervisor failover in the middle of a start.
                restart(jobs, rec, "start_interrupted", "the supervisor moved to another node while attempt "
                    + rec.get("attempt") + " was starting", 0);
                break;
            case "RUNNING":
                monitor(jobs, rec, nonce);
                break;
            case "STOPPING":
                stopEverywhere(str(rec.get("id")), -1, lng(rec.get("grace_ms"), 10_000));
                rec.put("state", "STOPPED");
                rec.put("exit_code", STOPPED_EXIT_CODE);
                rec.put("finished_ms", System.currentTimeMillis());
                rec.put("message", "stopped by request");
                event(rec, "stopped: every worker process is gone");
                save(jobs, rec);
                break;
            default:
                break;
        }
    }

    private void maybeLaunch(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec,
        String nonce) {
        // rec is the view (reconcileOne): the sealed spec's fields are already over it.
        String id = str(rec.get("id"));
        long now = System.currentTimeMillis();
        if (now < lng(rec.get("next_start_ms"), 0))
            return;
        JobPlan plan;
        try {
            plan = JobPlan.compute(ignite, str(rec.get("cache")));
        }
        catch (IllegalArgumentException e) {
            fail(jobs, rec, e.getMessage(), 1);
            return;
        }
        if (plan.nodes.isEmpty()) {
            rec.put("message", "no server node holds primary partitions of cache " + rec.get("cache") + "; waiting");
            save(jobs, rec);
            return;
        }
        // Rebalancing moves primaries in steps: start only on a map that held still for settle_ms.
        Object[] seen = settle.get(id);
        if (seen == null || !plan.fingerprint.equals(seen[0])) {
            settle.put(id, new Object[] {plan.fingerprint, now});
            return;
        }
        if (now - (Long)seen[1] < lng(rec.get("settle_ms"), 1000))
            return;
        launch(jobs, rec, plan, nonce);
    }

    private void launch(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec, JobPlan plan,
        String nonce) {
        String id = str(rec.get("id"));
        long attempt = lng(rec.get("attempt"), 0) + 1;
        rec.put("attempt", attempt);
        rec.put("state", "STARTING");
        rec.put("workers", new ArrayList<>());
        rec.put("plan", plan.fingerprint);
        rec.put("message", "starting attempt " + attempt);
        long startedAt = System.currentTimeMillis();
        save(jobs, rec);
        ArrayList<HashMap<String, Object>> workers = new ArrayList<>();
        try {
            String strategy = TaskLayout.strategy(str(rec.get("strategy")));
            List<TaskLayout.Task> tasks = TaskLayout.plan(plan.nodes.size(), strategy, (int)lng(rec.get("num_ps"), 0));
            long numWorkers = tasks.stream().filter(TaskLayout.Task::readsPartitions).count();
            List<HashMap<String, Object>> probes = new ArrayList<>();
            List<String> addresses = new ArrayList<>();
            for (TaskLayout.Task t : tasks) {
                // Each node's JVM picks its port alone; nodes sharing a host (and one address) may pick
                // the same one, so a node is asked again until every task's address is its own.
                HashMap<String, Object> p;
                String address;
                int asked = 0;
                do {
                    p = compute(plan.nodes.get(t.node)).call(new AgentTasks.ProbeNode());
                    address = hostPort(str(p.get("host")), lng(p.get("port"), 0));
                }
                while (addresses.contains(address) && ++asked < 20);
                if (addresses.contains(address))
                    throw new IllegalStateException("no port of its own for task " + t.type + ":" + t.typeIndex
                        + " on " + JobPlan.label(plan.nodes.get(t.node)) + " (" + address + " is taken by another task)");
                probes.add(p);
                addresses.add(address);
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> userEnv = (Map<String, Object>)rec.get("env");
            @SuppressWarnings("unchecked")
            List<String> command = (List<String>)rec.get("command");
            for (int i = 0; i < tasks.size(); i++) {
                TaskLayout.Task t = tasks.get(i);
                ClusterNode n = plan.nodes.get(t.node);
                HashMap<String, Object> probe = probes.get(i);
                List<Integer> parts = t.readsPartitions() ? plan.partitions.get(n.id()) : new ArrayList<>();
                String ranges = JobPlan.ranges(parts);
                Map<String, String> env = new HashMap<>();
                if (userEnv != null)
                    userEnv.forEach((k, v) -> env.put(k, String.valueOf(v)));
                env.put("TF_CONFIG", TaskLayout.tfConfig(tasks, addresses, i));
                env.put("IGNITE_DATASET_HOST", str(probe.get("client_host")));
                env.put("IGNITE_DATASET_PORT", Long.toString(lng(probe.get("client_port"), 10800)));
                // Chief and ps read no training data of their own: without a partition list a
                // dataset they open (say, for evaluation) reads the whole cache.
                if (t.readsPartitions())
                    env.put("IGNITE_DATASET_PARTS", ranges);
                env.put("TF_IGNITE_JOB_ID", id);
                env.put("TF_IGNITE_ATTEMPT", Long.toString(attempt));
                env.put("TF_IGNITE_WORKER_INDEX", Integer.toString(i));
                env.put("TF_IGNITE_NUM_WORKERS", Long.toString(numWorkers));
                env.put("TF_IGNITE_TASK_TYPE", t.type);
                env.put("TF_IGNITE_TASK_INDEX", Integer.toString(t.typeIndex));
                env.put("TF_IGNITE_STRATEGY", strategy);
                env.put("TF_IGNITE_NODE", JobPlan.label(n));
                env.put("TF_IGNITE_NODE_ID", n.id().toString());
                env.put("TF_IGNITE_CACHE", str(rec.get("cache")));
                String ckpt = str(rec.get("checkpoint_dir"));
                if (ckpt != null && !ckpt.isEmpty())
                    env.put("TF_IGNITE_CHECKPOINT_DIR", ckpt);
                env.put("PYTHONUNBUFFERED", "1");
                AgentTasks.StartWorker task = new AgentTasks.StartWorker(id, attempt, i, JobPlan.label(n),
                    str(rec.get("python")), command, env, (int)lng(rec.get("file_chunks"), 0),
                    str(rec.get("files_sha256")), policy.getMaxJobBytes(), policy.getWorkRoot(), nonce);
                long pid = compute(n).call(task);
                HashMap<String, Object> w = new HashMap<>();
                w.put("index", (long)i);
                w.put("task_type", t.type);
                w.put("task_index", (long)t.typeIndex);
                w.put("node", JobPlan.label(n));
                w.put("node_id", n.id().toString());
                w.put("host", str(probe.get("host")));
                w.put("port", lng(probe.get("port"), 0));
                w.put("dataset_host", str(probe.get("client_host")));
                w.put("dataset_port", lng(probe.get("client_port"), 0));
                w.put("partitions", ranges);
                w.put("partition_count", (long)parts.size());
                w.put("pid", pid);
                workers.add(w);
            }
        }
        catch (RuntimeException e) {
            rec.put("workers", workers);
            restart(jobs, rec, "start_failed", "attempt " + attempt + " could not start: " + rootMessage(e), 1);
            return;
        }
        rec.put("workers", workers);
        rec.put("state", "RUNNING");
        rec.put("attempt_started_ms", System.currentTimeMillis());
        rec.put("message", "running attempt " + attempt + " on " + workers.size() + " workers");
        event(rec, startedAt, "attempt " + attempt + ": started " + workers.size() + " workers on " + plan.summary()
            + " of " + plan.partitionCount + " partitions");
        save(jobs, rec);
    }

    private void monitor(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec,
        String nonce) {
        String id = str(rec.get("id"));
        long attempt = lng(rec.get("attempt"), 0);
        List<Map<String, Object>> workers = list(rec.get("workers"));
        Set<String> keys = new LinkedHashSet<>();
        for (Map<String, Object> w : workers)
            keys.add(LauncherCaches.workerKey(id, attempt, (int)lng(w.get("index"), 0)));
        IgniteCache<String, Object> wc = LauncherCaches.cache(ignite, LauncherCaches.WORKERS);
        Map<String, Object> states = wc.getAll(keys);
        int ok = 0;
        boolean chiefDone = false;
        String failure = null;
        String kind = null;
        long code = 0;
        for (Map<String, Object> w : workers) {
            int idx = (int)lng(w.get("index"), 0);
            String wkey = LauncherCaches.workerKey(id, attempt, idx);
            // Only what the worker's node sealed counts: a worker record a client wrote says nothing.
            String[] sealedState = WorkerAgent.openState(ignite, nonce, wkey, states.get(wkey));
            String st = sealedState == null ? "UNKNOWN" : sealedState[0];
            if ("EXITED".equals(st) || "FAILED_TO_START".equals(st)) {
                long c = lng(sealedState[1], 1);
                if (c == 0) {
                    ok++;
                    chiefDone |= "chief".equals(str(w.get("task_type")));
                }
                else if (failure == null) {
                    failure = taskName(w) + " on " + w.get("node") + " exited with code " + c + signalNote(c);
                    kind = "worker_exit";
                    code = c;
                }
            }
            else if (failure == null && ignite.cluster().node(UUID.fromString(str(w.get("node_id")))) == null) {
                failure = "node " + w.get("node") + " (worker " + idx + ") left the cluster";
                kind = "node_left";
                code = 1;
            }
        }
        if (failure != null) {
            restart(jobs, rec, kind, failure, code);
            return;
        }
        if (chiefDone && ok < workers.size()) {
            // ParameterServerStrategy: the chief (coordinator) decides; ps and worker
            // tasks serve forever (server.join()) and are stopped now.
            stopEverywhere(id, attempt, lng(rec.get("grace_ms"), 10_000));
            rec.put("state", "SUCCEEDED");
            rec.put("exit_code", 0L);
            rec.put("finished_ms", System.currentTimeMillis());
            rec.put("message", "the chief exited with code 0; the other " + (workers.size() - ok) + " task(s) were stopped");
            event(rec, "succeeded: " + rec.get("message"));
            save(jobs, rec);
            return;
        }
        if (ok == workers.size()) {
            rec.put("state", "SUCCEEDED");
            rec.put("exit_code", 0L);
            rec.put("finished_ms", System.currentTimeMillis());
            rec.put("message", "all " + ok + " workers exited with code 0");
            event(rec, "succeeded: all " + ok + " workers exited with code 0");
            save(jobs, rec);
            return;
        }
        if (ok > 0 && !TaskLayout.PS.equals(TaskLayout.strategy(str(rec.get("strategy")))))
            return; // finishing: a map change now would only throw finished work away
        JobPlan now;
        try {
            now = JobPlan.compute(ignite, str(rec.get("cache")));
        }
        catch (IllegalArgumentException e) {
            restart(jobs, rec, "cache_gone", e.getMessage(), 1);
            return;
        }
        if (!now.fingerprint.equals(str(rec.get("plan"))))
            restart(jobs, rec, "partitions_moved", describeChange(workers, now), 0);
    }

    private static String describeChange(List<Map<String, Object>> workers, JobPlan now) {
        Set<String> before = new LinkedHashSet<>();
        for (Map<String, Object> w : workers)
            before.add(str(w.get("node")));
        Set<String> after = new LinkedHashSet<>();
        for (ClusterNode n : now.nodes)
            after.add(JobPlan.label(n));
        Set<String> joined = new LinkedHashSet<>(after);
        joined.removeAll(before);
        Set<String> left = new LinkedHashSet<>(before);
        left.removeAll(after);
        StringBuilder sb = new StringBuilder("primary partitions of the cache moved");
        if (!joined.isEmpty())
            sb.append("; joined: ").append(String.join(", ", joined));
        if (!left.isEmpty())
            sb.append("; left: ").append(String.join(", ", left));
        if (joined.isEmpty() && left.isEmpty())
            sb.append(" between the same nodes (rebalancing)");
        sb.append("; new plan: ").append(now.summary());
        return sb.toString();
    }

    /** Stops the current attempt everywhere, records why, and schedules a restart or gives up. */
    private void restart(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec,
        String kind, String reason, long code) {
        String id = str(rec.get("id"));
        long attempt = lng(rec.get("attempt"), 0);
        rec.put("message", "stopping attempt " + attempt + ": " + reason);
        stopEverywhere(id, attempt, lng(rec.get("grace_ms"), 10_000));
        long restarts = lng(rec.get("restarts"), 0);
        long max = lng(rec.get("max_restarts"), 3);
        long now = System.currentTimeMillis();
        HashMap<String, Object> f = new HashMap<>();
        f.put("attempt", attempt);
        f.put("t", now);
        f.put("kind", kind);
        f.put("reason", reason);
        f.put("exit_code", code);
        List<Map<String, Object>> failures = new ArrayList<>(list(rec.get("failures")));
        if (restarts >= max) {
            f.put("action", "gave up");
            failures.add(f);
            rec.put("failures", failures);
            fail(jobs, rec, "gave up after " + restarts + " restart(s): " + reason, code != 0 ? code : 1);
            return;
        }
        long backoff = Math.min(MAX_BACKOFF_MS, lng(rec.get("backoff_ms"), 1000) << Math.min(restarts, 20));
        f.put("action", "restart " + (restarts + 1) + " of " + max + " in " + backoff + " ms");
        failures.add(f);
        rec.put("failures", failures);
        rec.put("restarts", restarts + 1);
        rec.put("state", "RESTARTING");
        rec.put("next_start_ms", now + backoff);
        rec.put("message", "restarting (" + (restarts + 1) + "/" + max + "): " + reason);
        event(rec, "attempt " + attempt + " stopped: " + reason + "; restart " + (restarts + 1) + " of " + max
            + " in " + backoff + " ms");
        settle.remove(id);
        save(jobs, rec);
    }

    private void fail(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec, String why,
        long code) {
        stopEverywhere(str(rec.get("id")), -1, lng(rec.get("grace_ms"), 10_000));
        rec.put("state", "FAILED");
        rec.put("exit_code", code);
        rec.put("finished_ms", System.currentTimeMillis());
        rec.put("message", why);
        event(rec, "failed: " + why);
        save(jobs, rec);
    }

    /** Kills the job's workers (attempts ≤ attempt; all when negative) on every server node, waiting for each. */
    void stopEverywhere(String id, long attempt, long graceMs) {
        RuntimeException last = null;
        for (int i = 0; i < 5; i++) {
            try {
                ignite.compute(ignite.cluster().forServers()).withNoFailover().withTimeout(graceMs + 60_000)
                    .broadcast(new AgentTasks.StopWorkers(id, attempt, graceMs));
                return;
            }
            catch (RuntimeException e) {
                // A node left during the broadcast: its workers died with it; ask the others again.
                last = e;
            }
        }
        log.warning("tf-ignite launcher: could not confirm that job " + id + "'s workers stopped: " + last);
    }

    private IgniteCompute compute(ClusterNode n) {
        return ignite.compute(ignite.cluster().forNodeId(n.id())).withNoFailover().withTimeout(120_000);
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        Set<Throwable> seen = new HashSet<>();
        while (t.getCause() != null && seen.add(t))
            t = t.getCause();
        return t == e ? String.valueOf(e.getMessage()) : e.getMessage() + " (" + t + ")";
    }

    void event(HashMap<String, Object> rec, String message) {
        event(rec, System.currentTimeMillis(), message);
    }

    void event(HashMap<String, Object> rec, long t, String message) {
        List<Map<String, Object>> events = new ArrayList<>(list(rec.get("events")));
        HashMap<String, Object> e = new HashMap<>();
        e.put("t", t);
        e.put("message", message);
        events.add(e);
        while (events.size() > MAX_EVENTS)
            events.remove(0);
        rec.put("events", events);
        if (log != null)
            log.info("tf-ignite job " + rec.get("id") + ": " + message);
    }

    /**
     * Writes job record {@code rec}: its decision fields to the vault (when they changed), then the
     * record, under its id, to the cache as the view of them.
     */
    void save(IgniteCache<String, HashMap<String, Object>> jobs, HashMap<String, Object> rec) {
        // Ignite cancels this instance when it moves the singleton; from then on the
        // new instance owns the job records and this one must not overwrite them.
        if (cancelled)
            throw new IllegalStateException("supervisor instance cancelled; its successor takes over");
        String id = LauncherPolicy.jobId(str(rec.get("id")));
        rec.put("updated_ms", System.currentTimeMillis());
        HashMap<String, Object> st = decisions(rec);
        if (!st.equals(saved.get(id))) {
            LauncherVault.putState(ignite, id, st);
            saved.put(id, st);
        }
        jobs.put(id, rec);
    }
}
