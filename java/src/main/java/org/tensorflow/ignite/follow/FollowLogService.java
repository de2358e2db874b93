package org.tensorflow.ignite.follow;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteLogger;
import org.apache.ignite.cache.query.ContinuousQuery;
import org.apache.ignite.cache.query.QueryCursor;
import org.apache.ignite.configuration.CacheConfiguration;
import org.apache.ignite.resources.IgniteInstanceResource;
import org.apache.ignite.resources.LoggerResource;
import org.apache.ignite.services.Service;
import org.apache.ignite.services.ServiceContext;

/**
 * The follow log's service: one instance per server node carrying the module (see {@link FollowLog}).
 *
 * <p>Each instance, as soon as a listed cache exists, creates its log cache (if no other node did)
 * and registers a continuous query on the cache from this node, whose listener
 * ({@link FollowLogWriter}) writes the log. The query is this node's: Ignite undeploys it when
 * the node leaves, while the other nodes' queries go on writing the same entries. A node that
 * joins registers its own.
 *
 * <p>Client API (thin-client service invoke): {@link #head(String)}. Which caches are followed is
 * the operator's choice, in the node configuration; a client cannot add one.
 */
public class FollowLogService implements Service {
    private static final long serialVersionUID = 1L;

    /** How often {@code execute} looks for listed caches that were created since. */
    private static final long POLL_MS = 500;

    private ArrayList<String> caches = new ArrayList<>();
    private long retentionSeconds = FollowLog.DEFAULT_RETENTION_SECONDS;

    @IgniteInstanceResource
    private transient Ignite ignite;

    @LoggerResource
    private transient IgniteLogger log;

    private transient Map<String, QueryCursor<?>> running;
    private transient Map<String, FollowLogWriter> writers;
    private transient volatile boolean cancelled;

    public void setCaches(Collection<String> names) {
        caches = new ArrayList<>(FollowLog.clean(names));
    }

    public List<String> getCaches() {
        return new ArrayList<>(caches);
    }

    public void setRetentionSeconds(long seconds) {
        if (seconds <= 0)
            throw new IllegalArgumentException("retentionSeconds must be positive, not " + seconds);
        retentionSeconds = seconds;
    }

    public long getRetentionSeconds() {
        return retentionSeconds;
    }

    @Override public void init(ServiceContext ctx) {
        running = new HashMap<>();
        writers = new HashMap<>();
    }

    @Override public void execute(ServiceContext ctx) throws InterruptedException {
        while (!cancelled && !ctx.isCancelled()) {
            Collection<String> existing = ignite.cacheNames();
            for (String c : caches) {
                if (existing.contains(c)) {
                    try {
                        start(c);
                    }
                    catch (RuntimeException e) {
                        log.warning("tf-ignite follow log of cache '" + c + "' could not start on this node; "
                            + "trying again (" + e + ")");
                    }
                }
            }
            synchronized (this) {
                if (!cancelled)
                    wait(POLL_MS);
            }
        }
    }

    @Override public void cancel(ServiceContext ctx) {
        synchronized (this) {
            cancelled = true;
            notifyAll();
            if (running != null) {
                for (QueryCursor<?> q : running.values())
                    q.close();
                running.clear();
                for (FollowLogWriter w : writers.values())
                    w.close();
                writers.clear();
            }
        }
    }

    /** Create the log of {@code cache} and register this node's query on it, once. */
    private synchronized void start(String cache) {
        if (cancelled || running.containsKey(cache))
            return;
        IgniteCache<Object, Object> source = ignite.cache(cache);
        if (source == null)
            throw new IllegalStateException("cache '" + cache + "' does not exist");
        @SuppressWarnings("unchecked")
        CacheConfiguration<Object, Object> cfg = source.getConfiguration(CacheConfiguration.class);
        int partitions = ignite.affinity(cache).partitions();
        IgniteCache<Object, Object> logCache = ignite.getOrCreateCache(
            FollowLog.logConfiguration(cache, partitions, cfg.getBackups(), retentionSeconds)).withKeepBinary();
        ContinuousQuery<Object, Object> q = new ContinuousQuery<>();
        q.setIncludeExpired(true);
        FollowLogWriter writer = new FollowLogWriter(ignite, log, cache, logCache, partitions);
        q.setLocalListener(writer);
        try {
            running.put(cache, source.withKeepBinary().query(q));
        }
        catch (RuntimeException e) {
            writer.close();
            throw e;
        }
        writers.put(cache, writer);
        log.info("tf-ignite follow log of cache '" + cache + "' started on this node (log cache '"
            + FollowLog.logCacheName(cache) + "', retention " + retentionSeconds + " s)");
    }

    // ------------------------------------------------------------------ client API

    /**
     * The update counter of each partition of {@code cache} now (the largest any node holds),
     * after making sure this node's query on it is registered: every update counted beyond it
     * reaches the log. A follower starts from here.
     */
    public long[] head(String cache) {
        if (!caches.contains(cache))
            throw new IllegalArgumentException("cache '" + cache + "' has no follow log: the node configuration "
                + "lists " + caches + " (FollowLog.configure, or NodeLauncher --follow-log)");
        start(cache);
        int partitions = ignite.affinity(cache).partitions();
        long[] head = new long[partitions];
        Arrays.fill(head, 0L);
        Collection<long[]> parts = ignite.compute(ignite.cluster().forServers())
            .broadcast(new FollowLogHead(cache, partitions));
        for (long[] node : parts) {
            for (int p = 0; p < partitions; p++)
                head[p] = Math.max(head[p], node[p]);
        }
        return head;
    }

    /** The log's retention, in seconds. */
    public long retention() {
        return retentionSeconds;
    }
}
