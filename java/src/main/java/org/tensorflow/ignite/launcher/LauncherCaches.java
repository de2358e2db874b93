package org.tensorflow.ignite.launcher;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.cache.CacheAtomicityMode;
import org.apache.ignite.cache.CacheMode;
import org.apache.ignite.cache.CacheWriteSynchronizationMode;
import org.apache.ignite.configuration.CacheConfiguration;

/**
 * The caches that hold the launcher's state, shared with the Python CLI (which
 * reads them through the thin client; {@code tensorflow_ignite/launcher/layout.py}
 * mirrors these names and key formats).
 *
 * <p>Ignite 2 lets every authenticated user write every cache: nothing here decides
 * what runs (README, "Security").
 *
 * <p>All are partitioned with one backup and FULL_SYNC, so that losing one node
 * loses no job state: the supervisor, redeployed by Ignite on another node, picks
 * up where the dead one stopped. Values are plain {@code HashMap}/{@code ArrayList}
 * /{@code String}/{@code Long} trees, which the thin client decodes without any
 * registered type.
 *
 * <ul>
 *   <li>{@link #JOBS}: job id → job record (spec, state, attempt, current plan,
 *       restart history): a view of what {@link LauncherVault} holds, written by the
 *       supervisor and restored by it when a client changed it.</li>
 *   <li>{@link #WORKERS}: {@code job/attempt/index} → worker record (node, pid,
 *       state, exit code, number of output chunks; {@code seal}: state and exit
 *       code sealed by the node, the only part the supervisor acts on). Written by
 *       the node agent running that worker.</li>
 *   <li>{@link #LOGS}: {@code job/attempt/index/chunk} → {@code {t, sealed}} output
 *       lines of one worker (AES-GCM, opened by {@code TfJobService.output}), in
 *       chunks numbered from 0.</li>
 *   <li>{@link #FILES}: {@code job/n} → byte[] chunk n of the job directory's zip;
 *       written by the CLI before it submits the job.</li>
 *   <li>{@link #RESULTS}: {@code job/attempt/index} → whatever the worker reported
 *       through {@code tensorflow_ignite.launcher.worker.report()}.</li>
 * </ul>
 */
public final class LauncherCaches {
    private LauncherCaches() {
    }

    /** Name under which the supervisor service is deployed (a cluster singleton). */
    public static final String SERVICE_NAME = "tf-ignite-launcher";

    public static final String JOBS = "tf_ignite_jobs";
    public static final String WORKERS = "tf_ignite_job_workers";
    public static final String LOGS = "tf_ignite_job_logs";
    public static final String FILES = "tf_ignite_job_files";
    public static final String RESULTS = "tf_ignite_job_results";

    static <V> CacheConfiguration<String, V> config(String name) {
        CacheConfiguration<String, V> cfg = new CacheConfiguration<>(name);
        cfg.setCacheMode(CacheMode.PARTITIONED);
        cfg.setBackups(1);
        cfg.setWriteSynchronizationMode(CacheWriteSynchronizationMode.FULL_SYNC);
        cfg.setAtomicityMode(CacheAtomicityMode.ATOMIC);
        return cfg;
    }

    /** Create every launcher cache that does not exist yet. */
    static void ensure(Ignite ignite) {
        for (String name : new String[] {JOBS, WORKERS, LOGS, FILES, RESULTS})
            ignite.getOrCreateCache(config(name));
    }

    /** The cache, or null when no job was ever submitted to this cluster. */
    static <V> IgniteCache<String, V> existing(Ignite ignite, String name) {
        return ignite.cache(name);
    }

    static <V> IgniteCache<String, V> cache(Ignite ignite, String name) {
        return ignite.getOrCreateCache(LauncherCaches.<V>config(name));
    }

    static String workerKey(String job, long attempt, int index) {
        return job + "/" + attempt + "/" + index;
    }

    static String logKey(String job, long attempt, int index, long chunk) {
        return job + "/" + attempt + "/" + index + "/" + chunk;
    }

    static String fileKey(String job, int chunk) {
        return job + "/" + chunk;
    }
}
