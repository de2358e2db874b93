package org.tensorflow.ignite.follow;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import javax.cache.expiry.CreatedExpiryPolicy;
import javax.cache.expiry.Duration;

import org.apache.ignite.cache.CacheAtomicityMode;
import org.apache.ignite.cache.CacheKeyConfiguration;
import org.apache.ignite.cache.CacheMode;
import org.apache.ignite.cache.CacheWriteSynchronizationMode;
import org.apache.ignite.cache.affinity.rendezvous.RendezvousAffinityFunction;
import org.apache.ignite.configuration.CacheConfiguration;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.services.ServiceConfiguration;
import org.apache.ignite.util.AttributeNodeFilter;
import org.tensorflow.ignite.launcher.TfLauncherModule;

/**
 * The follow log of the tensorflow-ignite module: for each cache the operator lists, every
 * update, keyed by (partition, update counter), in a log cache that a follower
 * ({@code IgniteDataset.follow}) reads to resume exactly once after a crash.
 *
 * <pre>
 * TfLauncherModule.configure(cfg, policy);
 * FollowLog.configure(cfg, List.of("events"), 3600);
 * </pre>
 *
 * It adds to the configuration the user attribute {@value #ATTRIBUTE} (the followed caches,
 * comma-separated: how clients learn that a cache has a log) and the node-singleton service
 * {@link FollowLogService} ({@value #SERVICE_NAME}), one instance on every server node carrying
 * the module. Each instance registers its own continuous query on each followed cache and writes
 * what its listener receives into the log: duplicate writes of one (partition, counter) are
 * harmless, so the log goes on being written while at least one such node lives.
 *
 * <p>The log cache {@code tf_follow_log_<cache>}: partitioned like the followed cache (the same
 * partition count; the log key's affinity field is the partition, so log partition p holds the
 * entries of the cache's partition p), at least one backup, FULL_SYNC, entries expiring
 * {@code retentionSeconds} after they are written. Key {@value #KEY_TYPE} {p: int, c: long};
 * value {@value #ENTRY_TYPE} {t: byte event type (0 created, 1 updated, 2 removed, 3 expired),
 * prev: long (the counter of the partition's previous update the writer saw, -1 unknown),
 * w: long (the topology order of the node whose writer wrote the entry: which node wrote what),
 * k: byte[] the key, v: byte[] the value -- the old value for removed and expired -- both in
 * Ignite's binary format as the thin client reads it, m: byte[] the entry's seal}.
 *
 * <p>Every authenticated thin client can write the log cache (Ignite 2 OSS has no authorization),
 * so entries are sealed ({@link FollowLogSeal}: an HMAC with a key in the metastorage over the
 * log's id, p, c and the fields a follower relies on) and a follower delivers an entry, or moves
 * its position past it, only once the service confirmed its seal ({@link FollowLogService#verify}).
 */
public final class FollowLog {
    /** The node attribute that names the followed caches (comma-separated). */
    public static final String ATTRIBUTE = "tensorflow-ignite.follow-log";

    /** The follow-log service's name (a node singleton on every module node). */
    public static final String SERVICE_NAME = "tf-ignite-follow-log";

    /** Prefix of a log cache's name: {@code tf_follow_log_<cache>}. */
    public static final String LOG_PREFIX = "tf_follow_log_";

    /** The log's key type: fields {@code p} (int, the affinity field) and {@code c} (long). */
    public static final String KEY_TYPE = "TfFollowLogKey";

    /** The log's value type: fields {@code t}, {@code prev}, {@code w}, {@code k}, {@code v}, {@code m}. */
    public static final String ENTRY_TYPE = "TfFollowLogEntry";

    /** How refusals of the service's methods start (the launcher's text: clients map it to a permission error). */
    public static final String DENIED = "permission denied: ";

    /** Default retention of log entries: one hour. */
    public static final long DEFAULT_RETENTION_SECONDS = 3600;

    private FollowLog() {
    }

    /** A refusal of a client's call: {@value #DENIED} and why. */
    static SecurityException denied(String why) {
        return new SecurityException(DENIED + why);
    }

    /** The log cache of {@code cache}. */
    public static String logCacheName(String cache) {
        return LOG_PREFIX + cache;
    }

    /**
     * Follow {@code caches} on the nodes started with {@code cfg}, keeping log entries for
     * {@code retentionSeconds}; returns {@code cfg}. Every server node should be configured
     * the same way (a node without it neither writes the log nor answers for its partitions).
     */
    public static IgniteConfiguration configure(IgniteConfiguration cfg, Collection<String> caches,
        long retentionSeconds) {
        List<String> names = clean(caches);
        if (names.isEmpty())
            return cfg;
        if (retentionSeconds <= 0)
            throw new IllegalArgumentException("the follow log's retention must be positive seconds, not "
                + retentionSeconds);
        Map<String, Object> attrs = new HashMap<>();
        if (cfg.getUserAttributes() != null)
            attrs.putAll(cfg.getUserAttributes());
        attrs.put(ATTRIBUTE, String.join(",", names));
        cfg.setUserAttributes(attrs);
        List<ServiceConfiguration> services = new ArrayList<>();
        if (cfg.getServiceConfiguration() != null) {
            for (ServiceConfiguration s : Arrays.asList(cfg.getServiceConfiguration())) {
                if (!SERVICE_NAME.equals(s.getName()))
                    services.add(s);
            }
        }
        services.add(serviceConfiguration(names, retentionSeconds));
        cfg.setServiceConfiguration(services.toArray(new ServiceConfiguration[0]));
        return cfg;
    }

    /** The service's configuration: one instance on every server node that carries this module version. */
    public static ServiceConfiguration serviceConfiguration(Collection<String> caches, long retentionSeconds) {
        FollowLogService service = new FollowLogService();
        service.setCaches(new ArrayList<>(caches));
        service.setRetentionSeconds(retentionSeconds);
        ServiceConfiguration svc = new ServiceConfiguration();
        svc.setName(SERVICE_NAME);
        svc.setMaxPerNodeCount(1);
        svc.setTotalCount(0);
        svc.setNodeFilter(new AttributeNodeFilter(TfLauncherModule.ATTRIBUTE, TfLauncherModule.VERSION));
        svc.setService(service);
        return svc;
    }

    /** The log cache's configuration for a followed cache of {@code partitions} partitions and {@code backups}. */
    static CacheConfiguration<Object, Object> logConfiguration(String cache, int partitions, int backups,
        long retentionSeconds) {
        CacheConfiguration<Object, Object> c = new CacheConfiguration<>(logCacheName(cache));
        c.setCacheMode(CacheMode.PARTITIONED);
        c.setAtomicityMode(CacheAtomicityMode.ATOMIC);
        c.setBackups(Math.max(1, backups));
        c.setWriteSynchronizationMode(CacheWriteSynchronizationMode.FULL_SYNC);
        c.setAffinity(new RendezvousAffinityFunction(false, partitions));
        c.setKeyConfiguration(new CacheKeyConfiguration(KEY_TYPE, "p"));
        c.setExpiryPolicyFactory(CreatedExpiryPolicy.factoryOf(new Duration(TimeUnit.SECONDS, retentionSeconds)));
        c.setEagerTtl(true);
        return c;
    }

    static List<String> clean(Collection<String> caches) {
        LinkedHashSet<String> out = new LinkedHashSet<>();
        if (caches != null) {
            for (String c : caches) {
                if (c == null)
                    continue;
                for (String part : c.split(",")) {
                    String t = part.trim();
                    if (!t.isEmpty())
                        out.add(t);
                }
            }
        }
        return new ArrayList<>(out);
    }
}
