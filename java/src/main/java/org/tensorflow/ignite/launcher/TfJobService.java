package org.tensorflow.ignite.launcher;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import javax.cache.Cache;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteLogger;
import org.apache.ignite.cache.query.QueryCursor;
import org.apache.ignite.cache.query.ScanQuery;
import org.apache.ignite.lang.IgniteBiPredicate;
import org.apache.ignite.resources.IgniteInstanceResource;
import org.apache.ignite.resources.LoggerResource;
import org.apache.ignite.services.Service;
import org.apache.ignite.services.ServiceContext;

/**
 * The TensorFlow job supervisor: a cluster-singleton Ignite service.
 *
 * <p>Clients (the {@code ignite-tf} CLI, over the thin client's service-invoke
 * operation) call {@link #submit}, {@link #stop} and {@link #ping}. Everything
 * else happens in {@link #execute}: the reconcile loop ({@link JobSupervisor}) that, for every job not yet
 * finished, plans one worker per server node holding primary partitions of the
 * job's cache ({@link JobPlan}), starts the workers through each node's
 * {@link WorkerAgent}, watches their exits, the topology and the partition map,
 * and restarts all workers on a new plan — with bounded retries and exponential
 * backoff — when a worker fails, a node leaves or joins, or primaries move.
 *
 * <p>What decides -- each accepted job's sealed spec and its state as the supervisor decided it --
 * lives in Ignite's distributed metastorage ({@link LauncherVault}), which thin clients cannot
 * reach; the caches of {@link LauncherCaches} (one backup, FULL_SYNC) hold views of it that every
 * client may read (and, Ignite having no authorization, write: a changed record is restored). So
 * when the node running the singleton dies, Ignite deploys it on another node and the new instance
 * simply continues the loop.
 *
 * <p>A thin client can invoke every public method of a deployed service by name: each is either a
 * client call that checks its caller ({@link #submit}, {@link #stop}, {@link #remove}, {@link #output};
 * {@link #ping}, {@link #securitySummary} and {@link #regions} only read) or refuses once deployed
 * (the setters, {@link #getPolicy}, the lifecycle methods).
 */
public class TfJobService implements Service {
    private static final long serialVersionUID = 1L;

    static final String VERSION = "1";

    /** Reconcile period when nothing wakes the loop earlier. */
    static final long POLL_MS = 300;

    static final long MAX_BACKOFF_MS = 30_000;

    static final int MAX_EVENTS = 200;

    static final String DEFAULT_STRATEGY = TaskLayout.MWMS;

    /**
     * Job environment variable names that look like secrets (refused: a job record is readable by
     * every client; workers get credentials from their node). A name matches when it contains one
     * of PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL, APIKEY, API_KEY, ACCESS_KEY,
     * ACCESSKEY, PRIVATE_KEY, PRIVATEKEY, AUTHORIZATION, SESSION, COOKIE, or has one of the words
     * PASS, PWD, PW, KEY, AUTH, OAUTH between separators ({@code DB_PASS}, {@code MYSQL_PWD},
     * {@code STRIPE_KEY}); case does not matter. {@code jobs.py}'s {@code SECRET_ENV_NAME} is the
     * same list.
     */
    static final Pattern SECRET_NAME = Pattern.compile("(?i)(?:.*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|"
        + "CREDENTIAL|APIKEY|API_KEY|ACCESS_KEY|ACCESSKEY|PRIVATE_KEY|PRIVATEKEY|AUTHORIZATION|SESSION|COOKIE).*"
        + "|(?:.*[^A-Z0-9])?(?:PASS|PWD|PW|KEY|AUTH|OAUTH)(?:[^A-Z0-9].*)?)");


    static final Set<String> TERMINAL = Set.of("SUCCEEDED", "FAILED", "STOPPED");

    /** Whether {@code state} (any value: records are written by clients too) is a finished job's. */
    static boolean terminal(Object state) {
        return state != null && TERMINAL.contains(state.toString());
    }

    /** Exit code of a job stopped by the user (as if SIGTERM'd). */
    static final long STOPPED_EXIT_CODE = 143;

    /** Bounds of the timing fields of a submission (each sealed with the job). */
    static final long MAX_GRACE_MS = 600_000;
    static final long MAX_SETTLE_MS = 600_000;
    static final long MAX_RESTARTS = 1000;

    @IgniteInstanceResource
    private transient Ignite ignite;

    @LoggerResource
    private transient IgniteLogger log;

    /** The reconcile loop of the deployed instance (made by {@link #init}). */
    private transient volatile JobSupervisor supervisor;

    /** Set by {@link #init}: this instance is the deployed service, whose settings no caller may change. */
    private transient volatile boolean deployed;

    /** The context Ignite deployed this instance with ({@link #init}). */
    private transient volatile ServiceContext context;

    /** The operator's settings (the bean properties below); serialized with the service to its node. */
    private LauncherPolicy policy = new LauncherPolicy();

    // ------------------------------------------------------------------ configuration (XML bean properties)

    /** See {@link LauncherPolicy#setAllowUnauthenticated}. */
    public void setAllowUnauthenticated(boolean allow) {
        configurable();
        policy.setAllowUnauthenticated(allow);
    }

    /** See {@link LauncherPolicy#setSubmitters}. */
    public void setSubmitters(List<String> users) {
        configurable();
        policy.setSubmitters(users);
    }

    /** See {@link LauncherPolicy#setAdmins}. */
    public void setAdmins(List<String> users) {
        configurable();
        policy.setAdmins(users);
    }

    /** See {@link LauncherPolicy#setAllowedCommands}. */
    public void setAllowedCommands(List<String> paths) {
        configurable();
        policy.setAllowedCommands(paths);
    }

    /** See {@link LauncherPolicy#setMaxJobBytes}. */
    public void setMaxJobBytes(long bytes) {
        configurable();
        policy.setMaxJobBytes(bytes);
    }

    /** See {@link LauncherPolicy#setWorkRoot}. */
    public void setWorkRoot(String dir) {
        configurable();
        policy.setWorkRoot(dir);
    }

    /** Replaces every setting at once (Java configuration: {@link TfLauncherModule#configure}). */
    public void setPolicy(LauncherPolicy policy) {
        configurable();
        this.policy = policy == null ? new LauncherPolicy() : policy;
    }

    /** The settings (Java configuration); refused once deployed, like the setters. */
    public LauncherPolicy getPolicy() {
        configurable();
        return policy;
    }

    /**
     * The settings are the node configuration's: a thin client can invoke any public method of a
     * deployed service by name, so once deployed ({@link #init}) the setters refuse.
     */
    private void configurable() {
        if (deployed)
            throw LauncherPolicy.denied("the launcher's settings belong to the node configuration and cannot be "
                + "changed through the service; change the node's configuration and restart it");
    }

    /*
     * Lifecycle. Ignite calls the ServiceContext forms, once, on the instance it deploys. A thin client can
     * invoke any public method of a deployed service by name, so every lifecycle method refuses a call
     * once the instance is deployed unless it carries the context Ignite deployed this instance with (its
     * execution id is not known to clients): a client's init(null) would otherwise replace the supervisor.
     */

    @Override public void init(ServiceContext ctx) {
        if (deployed)
            throw lifecycleRefusal("init");
        context = ctx;
        deployed = true;
        supervisor = new JobSupervisor(ignite, log, policy, this);
    }

    @Override public void cancel(ServiceContext ctx) {
        if (!ours(ctx)) {
            if (deployed)
                throw lifecycleRefusal("cancel");
            return;
        }
        supervisor.cancel();
    }

    @Override public void execute(ServiceContext ctx) {
        if (!ours(ctx)) {
            if (deployed)
                throw lifecycleRefusal("execute");
            return;
        }
        String summary = "tf-ignite launcher supervisor running on " + JobPlan.label(ignite.cluster().localNode())
            + "; " + securitySummary();
        if (Caller.authenticationEnabled(ignite))
            log.info(summary);
        else
            log.warning(summary);
        quietEcho(log, summary);
        supervisor.run();
    }

    /** Service's argument-less forms: Ignite never calls them on this class; a client's call is refused. */
    @Override public void init() {
        if (deployed)
            throw lifecycleRefusal("init");
    }

    @Override public void cancel() {
        if (deployed)
            throw lifecycleRefusal("cancel");
    }

    @Override public void execute() {
        if (deployed)
            throw lifecycleRefusal("execute");
    }

    private SecurityException lifecycleRefusal(String method) {
        String line = "tf-ignite audit: action=" + method + " job=(service) decision=refused: a client called the "
            + "service's lifecycle method";
        if (log != null) {
            log.warning(line);
            quietEcho(log, line);
        }
        return LauncherPolicy.denied(method + " belongs to Ignite's deployment of the launcher service and cannot "
            + "be called through the service; undeploy or restart the node instead");
    }

    private boolean ours(ServiceContext ctx) {
        ServiceContext mine = context;
        return ctx != null && mine != null && (ctx == mine || (ctx.executionId() != null
            && ctx.executionId().equals(mine.executionId()) && String.valueOf(ctx.name()).equals(mine.name())));
    }

    // ------------------------------------------------------------------ client API

    /** Liveness and version, e.g. for the CLI to check that the launcher is deployed. */
    public String ping() {
        return "tf-ignite-launcher " + VERSION + " on " + JobPlan.label(ignite.cluster().localNode());
    }

    /** How this launcher decides who may run jobs, in one line (the node log, {@code ignite-tf module check}). */
    public String securitySummary() {
        if (!Caller.authenticationEnabled(ignite)) {
            return policy.isAllowUnauthenticated()
                ? "WARNING: authentication is off and allowUnauthenticated is set: anyone who reaches a thin-client "
                    + "port may run programs on every server node"
                : "authentication is off: every job request is refused (enable authentication, or set "
                    + LauncherPolicy.ALLOW_UNAUTHENTICATED + " on a trusted network)";
        }
        return "authentication is on; submitters: " + (policy.getSubmitters().isEmpty() ? "(none)"
            : String.join(", ", policy.getSubmitters())) + "; admins: " + (policy.getAdmins().isEmpty() ? "(none)"
            : String.join(", ", policy.getAdmins()))
            + (policy.getAllowedCommands().isEmpty() ? "" : "; allowed commands: "
            + String.join(", ", policy.getAllowedCommands()));
    }

    /**
     * Every server node's data regions (one map per node and region, see {@link RegionReport}), for
     * the client's capacity guard. Only nodes carrying this module version are asked (the others
     * lack the class); the client compares the node ids it gets with the server nodes it knows.
     */
    public ArrayList<HashMap<String, Object>> regions() {
        ArrayList<HashMap<String, Object>> out = new ArrayList<>();
        Collection<ArrayList<HashMap<String, Object>>> perNode =
            ignite.compute(ignite.cluster().forServers().forAttribute(TfLauncherModule.ATTRIBUTE, TfLauncherModule.VERSION))
                .withNoFailover().withTimeout(15_000).broadcast(new RegionReport());
        for (ArrayList<HashMap<String, Object>> rows : perNode)
            out.addAll(rows);
        return out;
    }

    /**
     * Accepts a job. {@code spec}: {@code id}, {@code cache}, {@code command} (list),
     * {@code python}, optional {@code env} (map), {@code strategy}, {@code checkpoint_dir},
     * {@code file_chunks} (chunks already written to the files cache),
     * {@code max_restarts}, {@code backoff_ms}, {@code settle_ms}, {@code grace_ms}.
     * Returns the new job record.
     */
    public HashMap<String, Object> submit(Map<String, Object> spec) {
        Caller caller = Caller.current(ignite);
        String id = str(spec.get("id"));
        try {
            return accept(caller, spec);
        }
        catch (RuntimeException e) {
            audit(caller, "submit", id, spec.get("command"), "refused: " + e.getMessage());
            throw e;
        }
    }

    private HashMap<String, Object> accept(Caller caller, Map<String, Object> spec) {
        policy.checkSubmitter(caller, Caller.authenticationEnabled(ignite));
        String id = LauncherPolicy.jobId(str(spec.get("id")));
        String cache = str(spec.get("cache"));
        if (cache == null || cache.isEmpty())
            throw new IllegalArgumentException("the job needs a cache name");
        if (!ignite.cacheNames().contains(cache))
            throw new IllegalArgumentException("cache '" + cache + "' does not exist on the cluster; load it first "
                + "(ignite-tf load or tensorflow_ignite.write)");
        Object cmdObj = spec.get("command");
        if (!(cmdObj instanceof Collection) || ((Collection<?>)cmdObj).isEmpty())
            throw new IllegalArgumentException("the job needs a command (e.g. python train.py)");
        ArrayList<String> command = new ArrayList<>();
        for (Object o : (Collection<?>)cmdObj)
            command.add(String.valueOf(o));
        String python = str(spec.get("python"));
        if (python == null || python.isEmpty())
            throw new IllegalArgumentException("the job needs the Python interpreter to run workers with");
        String strategy = TaskLayout.strategy(str(spec.get("strategy")));
        if (strategy == null)
            throw new IllegalArgumentException("strategy '" + spec.get("strategy") + "' is not supported; use "
                + TaskLayout.MWMS + " or " + TaskLayout.PS);
        long numPs = lng(spec.get("num_ps"), TaskLayout.PS.equals(strategy) ? 1 : 0);
        if (TaskLayout.PS.equals(strategy) && (numPs < 1 || numPs > 16))
            throw new IllegalArgumentException("the " + TaskLayout.PS + " strategy needs 1 to 16 ps tasks (--num-ps), not "
                + numPs);
        if (TaskLayout.MWMS.equals(strategy) && numPs != 0)
            throw new IllegalArgumentException("--num-ps is for the " + TaskLayout.PS + " strategy only");
        HashMap<String, Object> env = new HashMap<>();
        Object envObj = spec.get("env");
        if (envObj instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>)envObj).entrySet())
                env.put(String.valueOf(e.getKey()), e.getValue() == null ? "" : String.valueOf(e.getValue()));
        }
        LauncherPolicy.checkEnv(env);
        policy.checkCommand(python, command);
        long maxRestarts = bounded(spec, "max_restarts", 3, MAX_RESTARTS);
        long backoffMs = bounded(spec, "backoff_ms", 1000, MAX_BACKOFF_MS);
        long settleMs = bounded(spec, "settle_ms", 1000, MAX_SETTLE_MS);
        long graceMs = bounded(spec, "grace_ms", 10_000, MAX_GRACE_MS);
        long fileChunks = lng(spec.get("file_chunks"), 0);
        String sent = str(spec.get("files_sha256"));
        if (fileChunks > 0 && (sent == null || sent.isEmpty()))
            throw new IllegalArgumentException("the submission does not say which archive it uploaded (files_sha256, "
                + "the SHA-256 of the zip written to " + LauncherCaches.FILES + "); submit with this version's "
                + "JobClient / ignite-tf, which sends it");
        String digest;
        long archiveBytes;
        try {
            byte[] archive = JobArchive.read(ignite, id, fileChunks, policy.getMaxJobBytes());
            digest = JobArchive.sha256(archive);
            // The archive is bound to the call: another client may have rewritten the chunks since the upload.
            if (fileChunks > 0 && !digest.equalsIgnoreCase(sent))
                throw new IllegalArgumentException("the job's files in " + LauncherCaches.FILES + " changed between "
                    + "upload and submit (their SHA-256 is not the one the submitter uploaded); nothing was accepted; "
                    + "submit again (if it happens again, another client is writing to the files cache)");
            JobArchive.check(archive, policy.getMaxJobBytes());
            archiveBytes = archive.length;
        }
        catch (java.io.IOException e) {
            throw new IllegalArgumentException("the job directory is refused: " + e.getMessage());
        }

        long now = System.currentTimeMillis();
        HashMap<String, Object> rec = new HashMap<>();
        rec.put("id", id);
        rec.put("cache", cache);
        rec.put("command", command);
        rec.put("python", python);
        rec.put("env", env);
        rec.put("strategy", strategy);
        rec.put("num_ps", numPs);
        rec.put("checkpoint_dir", str(spec.get("checkpoint_dir")));
        rec.put("file_chunks", fileChunks);
        rec.put("files_sha256", digest);
        rec.put("files_bytes", archiveBytes);
        rec.put("submitted_by", caller.login);
        rec.put("submitted_from", caller.address);
        rec.put("max_restarts", maxRestarts);
        rec.put("backoff_ms", backoffMs);
        rec.put("settle_ms", settleMs);
        rec.put("grace_ms", graceMs);
        rec.put("state", "PENDING");
        rec.put("attempt", 0L);
        rec.put("restarts", 0L);
        rec.put("exit_code", null);
        rec.put("message", "waiting for a stable partition map");
        rec.put("workers", new ArrayList<>());
        rec.put("plan", "");
        rec.put("failures", new ArrayList<>());
        rec.put("events", new ArrayList<>());
        rec.put("created_ms", now);
        rec.put("updated_ms", now);
        rec.put("next_start_ms", 0L);
        rec.put("stop_requested", false);
        supervisor.event(rec, "job submitted by " + caller.describe() + ": cache " + cache + ", command " + String.join(" ", command));
        rec.put("audit", new ArrayList<>(List.of(audit(caller, "submit", id, command, "accepted"))));

        LauncherCaches.ensure(ignite);
        IgniteCache<String, HashMap<String, Object>> jobs = LauncherCaches.cache(ignite, LauncherCaches.JOBS);
        synchronized (this) {
            // A job exists when the launcher accepted it (its sealed spec); a record someone wrote into the
            // cache under this name is no job and is replaced.
            if (LauncherVault.spec(ignite, id) != null)
                throw new IllegalArgumentException("a job named '" + id + "' exists already; choose another --name");
            HashMap<String, Object> sealed = sealedSpec(rec);
            sealed.put("output_nonce", LauncherVault.nonce());
            LauncherVault.putSpec(ignite, id, sealed);
            try {
                supervisor.save(jobs, rec);
            }
            catch (RuntimeException e) {
                // Not accepted after all (this instance was cancelled, say): no spec without a state.
                LauncherVault.removeSpec(ignite, id);
                throw e;
            }
        }
        supervisor.wakeUp();
        return rec;
    }

    /** A whole number field of the submission within [0, max], or its default; refuses anything else. */
    private static long bounded(Map<String, Object> spec, String field, long dflt, long max) {
        Object v = spec.get(field);
        if (v == null)
            return dflt;
        long n = lng(v, -1);
        if (n < 0 || n > max)
            throw new IllegalArgumentException(field + " must be a whole number from 0 to " + max + ", not " + v);
        return n;
    }

    /** Asks for a job to stop; returns its record. Idempotent; a finished job is left as it is. */
    public HashMap<String, Object> stop(String id) {
        Caller caller = Caller.current(ignite);
        gate(caller, "stop", str(id));
        String job = LauncherPolicy.jobId(id);
        IgniteCache<String, HashMap<String, Object>> jobs = LauncherCaches.cache(ignite, LauncherCaches.JOBS);
        synchronized (this) {
            HashMap<String, Object> spec = sealed(job);
            authorizeOwner(jobs, job, spec, caller, "stop");
            // The request is the supervisor's (kept with the job's state in the vault): a client setting
            // stop_requested in the record stops nothing.
            HashMap<String, Object> rec = supervisor.view(jobs, job, spec);
            if (!terminal(rec.get("state")) && !Boolean.TRUE.equals(rec.get("stop_requested"))) {
                rec.put("stop_requested", true);
                supervisor.event(rec, "stop requested by " + caller.describe());
                supervisor.save(jobs, rec);
            }
            supervisor.wakeUp();
            return rec;
        }
    }

    /**
     * Deletes a finished job (with {@code force}: any job, stopped first) and everything
     * it left in the launcher's caches -- record, worker records, output, results, job
     * files -- and the job's files on every node. Checkpoints are the user's and stay.
     * Returns what was removed: {@code {id, state, entries}}.
     *
     * <p>A name the launcher never accepted (no sealed spec) is no job: only an admin may remove
     * what is left under it in the caches and on the nodes (leftovers, records written by hand);
     * anyone else is told there is no such job.
     */
    public HashMap<String, Object> remove(String id, boolean force) {
        Caller caller = Caller.current(ignite);
        gate(caller, "remove", str(id));
        String job = LauncherPolicy.jobId(id);
        IgniteCache<String, HashMap<String, Object>> jobs = LauncherCaches.cache(ignite, LauncherCaches.JOBS);
        Object state;
        synchronized (this) {
            HashMap<String, Object> spec = LauncherVault.spec(ignite, job);
            if (spec == null) {
                try {
                    policy.checkOwner(caller, Caller.authenticationEnabled(ignite), job, null,
                        "remove the leftovers of");
                }
                catch (SecurityException e) {
                    audit(caller, "remove", job, null, "refused: no sealed spec; " + e.getMessage());
                    throw noSuchJob(job);
                }
                HashMap<String, Object> left = JobSupervisor.record(jobs, job);
                state = left == null ? null : left.get("state");
                jobs.remove(job);
                LauncherVault.removeState(ignite, job);
            }
            else {
                authorizeOwner(jobs, job, spec, caller, "remove");
                HashMap<String, Object> rec = supervisor.view(jobs, job, spec);
                state = rec.get("state");
                if (!terminal(state)) {
                    if (!force)
                        throw new IllegalArgumentException("job '" + job + "' is " + state + "; stop it first "
                            + "(ignite-tf stop " + job + ") or remove it with --force, which stops it");
                    // Holding the lock: the reconcile loop cannot start a new attempt meanwhile.
                    supervisor.stopEverywhere(job, -1, lng(spec.get("grace_ms"), 10_000));
                }
                LauncherVault.removeState(ignite, job);
                LauncherVault.removeSpec(ignite, job);
                jobs.remove(job);
            }
            supervisor.forget(job);
        }
        long removed = 1;
        for (String name : new String[] {LauncherCaches.WORKERS, LauncherCaches.LOGS, LauncherCaches.RESULTS,
            LauncherCaches.FILES})
            removed += removeByPrefix(name, job + "/");
        try {
            ignite.compute(ignite.cluster().forServers()).withNoFailover().withTimeout(60_000)
                .broadcast(new AgentTasks.RemoveJobDir(job, policy.getWorkRoot()));
        }
        catch (RuntimeException e) {
            // A node left meanwhile: its copy went with it. Leftovers elsewhere are only disk.
            log.warning("tf-ignite launcher: could not remove the node-local files of job " + job + ": " + e);
        }
        HashMap<String, Object> out = new HashMap<>();
        out.put("id", job);
        out.put("state", state);
        out.put("entries", removed);
        log.info("tf-ignite job " + job + ": removed (" + removed + " cache entries)");
        audit(caller, "remove", job, null, "accepted");
        return out;
    }

    /**
     * The output chunks {@code keys} (each {@code id/attempt/worker/chunk}) of job {@code id},
     * decrypted, for its submitter or an admin: {@code key -> {t, text}}; chunks not (yet)
     * stored are absent, and a chunk altered in the cache (or left by an earlier job of the same
     * name) reads as a line saying so.
     */
    public HashMap<String, HashMap<String, Object>> output(String id, List<String> keys) {
        Caller caller = Caller.current(ignite);
        gate(caller, "output", str(id));
        String job = LauncherPolicy.jobId(id);
        HashMap<String, Object> spec = sealed(job);
        IgniteCache<String, HashMap<String, Object>> jobs = LauncherCaches.cache(ignite, LauncherCaches.JOBS);
        authorizeOwner(jobs, job, spec, caller, "read the output of");
        Set<String> wanted = new LinkedHashSet<>();
        for (Object k : keys == null ? List.of() : keys) {
            String key = String.valueOf(k);
            if (!key.startsWith(job + "/"))
                throw new IllegalArgumentException("output key " + LauncherPolicy.printable(key) + " is not of job "
                    + job);
            wanted.add(key);
        }
        HashMap<String, HashMap<String, Object>> out = new HashMap<>();
        IgniteCache<String, Object> logs = LauncherCaches.existing(ignite, LauncherCaches.LOGS);
        if (logs == null || wanted.isEmpty())
            return out;
        String nonce = str(spec.get("output_nonce"));
        for (Map.Entry<String, Object> e : logs.getAll(wanted).entrySet()) {
            // Whatever a client put there (any value) reads as altered; only what opens is shown.
            Map<?, ?> stored = e.getValue() instanceof Map ? (Map<?, ?>)e.getValue() : null;
            Object sealed = stored == null ? null : stored.get("sealed");
            String text = sealed instanceof byte[]
                ? LauncherVault.open(ignite, LauncherVault.aad(nonce, e.getKey()), (byte[])sealed) : null;
            HashMap<String, Object> chunk = new HashMap<>();
            chunk.put("t", stored == null || !(stored.get("t") instanceof Number) ? 0L : stored.get("t"));
            chunk.put("text", text != null ? text : "[tf-ignite] this output chunk was altered in the cache "
                + LauncherCaches.LOGS + " after its node wrote it (or is left from an earlier job of this name); "
                + "not shown");
            out.put(e.getKey(), chunk);
        }
        return out;
    }

    /**
     * Refuses every job call on a cluster without authentication unless the operator allowed it:
     * before a name is looked up, so the caller learns why rather than "no such job".
     */
    private void gate(Caller caller, String action, String job) {
        if (Caller.authenticationEnabled(ignite) || policy.isAllowUnauthenticated())
            return;
        SecurityException e = LauncherPolicy.denied(LauncherPolicy.unauthenticatedRefusal());
        audit(caller, action, job, null, "refused: " + e.getMessage());
        throw e;
    }

    /** The sealed spec of job {@code id}: the launcher accepted it; otherwise there is no such job. */
    private HashMap<String, Object> sealed(String id) {
        HashMap<String, Object> spec = LauncherVault.spec(ignite, id);
        if (spec == null)
            throw noSuchJob(id);
        return spec;
    }

    private static IllegalArgumentException noSuchJob(String id) {
        return new IllegalArgumentException("no job named '" + id + "' (see ignite-tf ps)");
    }

    /**
     * Throws (and records the refusal) unless {@code caller} may {@code action} job {@code id}, whose
     * owner is the submitter in its sealed spec -- never a field of a record in the cache.
     */
    private void authorizeOwner(IgniteCache<String, HashMap<String, Object>> jobs, String id,
        HashMap<String, Object> spec, Caller caller, String action) {
        String owner = str(spec.get("submitted_by"));
        String verb = action.startsWith("read") ? "output" : action;
        try {
            policy.checkOwner(caller, Caller.authenticationEnabled(ignite), id, owner, action);
        }
        catch (SecurityException e) {
            HashMap<String, Object> entry = audit(caller, verb, id, null, "refused: " + e.getMessage());
            if (!"output".equals(verb))
                appendAudit(jobs, id, spec, entry);
            throw e;
        }
        if (!"output".equals(verb))
            appendAudit(jobs, id, spec, audit(caller, verb, id, null, "accepted"));
    }

    /** Adds an audit entry to the record of job {@code id} (restored from the vault first). */
    private void appendAudit(IgniteCache<String, HashMap<String, Object>> jobs, String id, HashMap<String, Object> spec,
        HashMap<String, Object> entry) {
        synchronized (this) {
            if (supervisor.cancelled())
                return;
            HashMap<String, Object> cur = supervisor.view(jobs, id, spec);
            cur.put("audit", withAudit(cur, entry));
            supervisor.save(jobs, cur);
        }
    }

    private static ArrayList<Object> withAudit(HashMap<String, Object> rec, HashMap<String, Object> entry) {
        ArrayList<Object> list = new ArrayList<>();
        if (rec.get("audit") instanceof List)
            list.addAll((List<?>)rec.get("audit"));
        list.add(entry);
        while (list.size() > MAX_EVENTS)
            list.remove(0);
        return list;
    }

    /**
     * One audit line in the node's log -- who, from where, what, which job, the decision -- and
     * the same as a map for the job record. Never holds a secret: commands and environments
     * with secret-looking names are refused before they get here.
     */
    private HashMap<String, Object> audit(Caller caller, String action, String job, Object command, String decision) {
        HashMap<String, Object> e = new HashMap<>();
        e.put("t", System.currentTimeMillis());
        e.put("user", caller.login);
        e.put("address", caller.address);
        e.put("action", action);
        e.put("decision", decision);
        if (command instanceof Collection) {
            List<String> words = new ArrayList<>();
            for (Object o : (Collection<?>)command)
                words.add(String.valueOf(o));
            e.put("command", String.join(" ", words));
        }
        if (log != null) {
            String line = "tf-ignite audit: action=" + action + " job=" + LauncherPolicy.printable(job) + " user="
                + (caller.login == null ? "(unauthenticated)" : caller.login) + " from="
                + (caller.address == null ? "(unknown)" : caller.address)
                + (e.containsKey("command") ? " command=[" + e.get("command") + "]" : "") + " decision=" + decision;
            if (decision.startsWith("accepted"))
                log.info(line);
            else
                log.warning(line);
            quietEcho(log, line);
        }
        return e;
    }

    /**
     * In Ignite's quiet mode (the default of {@code ignite.sh}) the logger writes INFO and WARNING
     * lines only to the log files of a release's logging configuration; the console gets Ignite's
     * own short notices. Audit and security lines are such notices: print them there too.
     */
    static void quietEcho(IgniteLogger log, String line) {
        if (log != null && log.isQuiet())
            System.out.println("[" + java.time.LocalTime.now().withNano(0) + "] " + line);
    }

    /** The fields that decide what a job runs, as kept in the vault. */
    private static HashMap<String, Object> sealedSpec(HashMap<String, Object> rec) {
        HashMap<String, Object> spec = new HashMap<>();
        for (String k : SEALED_FIELDS)
            spec.put(k, rec.get(k));
        return spec;
    }

    /**
     * The record fields sealed with the job and restored over the record whenever the supervisor
     * reads it (a changed record changes nothing). The spec also holds {@code output_nonce}, which
     * stays in the vault.
     */
    static final String[] SEALED_FIELDS = {"id", "cache", "command", "python", "env", "strategy", "num_ps",
        "checkpoint_dir", "file_chunks", "files_sha256", "files_bytes", "submitted_by", "created_ms",
        "max_restarts", "backoff_ms", "settle_ms", "grace_ms"};

    private long removeByPrefix(String cacheName, String prefix) {
        IgniteCache<String, Object> cache = LauncherCaches.existing(ignite, cacheName);
        if (cache == null)
            return 0;
        Set<String> keys = new HashSet<>();
        try (QueryCursor<Cache.Entry<String, Object>> cur = cache.query(new ScanQuery<>(new KeyPrefix(prefix)))) {
            for (Cache.Entry<String, Object> e : cur)
                keys.add(e.getKey());
        }
        if (!keys.isEmpty())
            cache.removeAll(keys);
        return keys.size();
    }

    /** Scan filter: keys starting with a prefix (on every node's classpath, no peer class loading). */
    static final class KeyPrefix implements IgniteBiPredicate<String, Object> {
        private static final long serialVersionUID = 1L;

        private final String prefix;

        KeyPrefix(String prefix) {
            this.prefix = prefix;
        }

        @Override public boolean apply(String key, Object value) {
            return key != null && key.startsWith(prefix);
        }
    }

    // ------------------------------------------------------------------ helpers

    /** {@code "worker 1"} for MWMS jobs (as before), {@code "ps 0 (task 1)"} for the other roles. */
    static String taskName(Map<String, Object> w) {
        String type = str(w.get("task_type"));
        long idx = lng(w.get("index"), 0);
        if (type == null || ("worker".equals(type) && lng(w.get("task_index"), idx) == idx))
            return "worker " + idx;
        return type + " " + lng(w.get("task_index"), 0) + " (task " + idx + ")";
    }

    static String hostPort(String host, long port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    static String signalNote(long code) {
        if (code > 128 && code < 160)
            return " (killed by signal " + (code - 128) + ")";
        return "";
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(Object o) {
        return o instanceof List ? (List<Map<String, Object>>)o : new ArrayList<>();
    }

    static String str(Object o) {
        return o == null ? null : o.toString();
    }

    static long lng(Object o, long dflt) {
        if (o instanceof Number)
            return ((Number)o).longValue();
        if (o instanceof String) {
            try {
                return Long.parseLong((String)o);
            }
            catch (NumberFormatException e) {
                return dflt;
            }
        }
        return dflt;
    }
}
