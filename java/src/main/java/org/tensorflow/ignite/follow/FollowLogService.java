package org.tensorflow.ignite.follow;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.crypto.spec.SecretKeySpec;

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
 * <p>Client API (thin-client service invoke): {@link #head(String)}, {@link #verify(String, byte[])},
 * {@link #retention()} and the getters. Which caches are followed is the operator's choice, in the
 * node configuration; a client cannot add one.
 *
 * <p><b>Every public method is callable by any authenticated thin client</b> (Ignite 2 OSS has no
 * authorization; a client invokes a deployed service's methods by name). So the setters refuse
 * once the service is deployed ({@link #init}), {@code init} refuses a second time, and
 * {@code execute} and {@code cancel} act only for the {@link ServiceContext} Ignite deployed this
 * instance with; refusals are {@link SecurityException}s starting with {@value FollowLog#DENIED}.
 */
public class FollowLogService implements Service {
    private static final long serialVersionUID = 1L;

    /** How often {@code execute} looks for listed caches that were created since. */
    private static final long POLL_MS = 500;

    /** Entries one {@link #verify} call checks at most. */
    static final int MAX_VERIFY = 65536;

    private ArrayList<String> caches = new ArrayList<>();
    private long retentionSeconds = FollowLog.DEFAULT_RETENTION_SECONDS;

    @IgniteInstanceResource
    private transient Ignite ignite;

    @LoggerResource
    private transient IgniteLogger log;

    private transient Map<String, QueryCursor<?>> running;
    private transient Map<String, FollowLogWriter> writers;
    private transient volatile boolean cancelled;
    /** Set by {@link #init}: from then on the settings are fixed and {@code init} refuses. */
    private transient volatile boolean deployed;
    /** The context Ignite deployed this instance with ({@link #ours}). */
    private transient volatile ServiceContext context;
    /** The cluster's seal key, read from the metastorage on {@link #verify}'s first call. */
    private transient volatile SecretKeySpec sealKey;

    /** The caches to follow (node configuration only: refused once deployed). */
    public void setCaches(Collection<String> names) {
        configurable();
        caches = new ArrayList<>(FollowLog.clean(names));
    }

    public List<String> getCaches() {
        return new ArrayList<>(caches);
    }

    /** How long log entries are kept (node configuration only: refused once deployed). */
    public void setRetentionSeconds(long seconds) {
        configurable();
        if (seconds <= 0)
            throw new IllegalArgumentException("retentionSeconds must be positive, not " + seconds);
        retentionSeconds = seconds;
    }

    public long getRetentionSeconds() {
        return retentionSeconds;
    }

    /**
     * The settings are the node configuration's: a thin client can invoke any public method of a
     * deployed service by name, so once deployed the setters refuse.
     */
    private void configurable() {
        if (deployed)
            throw FollowLog.denied("the follow log's settings belong to the node configuration and cannot be "
                + "changed through the service; change the node's configuration (FollowLog.configure, "
                + "NodeLauncher --follow-log, the XML fragment of ignite-tf module config) and restart it");
    }

    /*
     * Lifecycle. Ignite calls the ServiceContext forms once per deployed instance; a client calling them
     * by name (with null or any context of its own) must neither reset the writers (init) nor stop
     * them (cancel) nor start a second loop (execute).
     */

    @Override public synchronized void init(ServiceContext ctx) {
        if (deployed)
            throw FollowLog.denied("the follow-log service on this node is deployed already; init is Ignite's "
                + "to call, once");
        if (ctx == null)
            throw FollowLog.denied("init is Ignite's to call, with the service's context");
        context = ctx;
        running = new HashMap<>();
        writers = new HashMap<>();
        deployed = true;
    }

    @Override public void execute(ServiceContext ctx) throws InterruptedException {
        if (!ours(ctx))
            throw FollowLog.denied("execute is Ignite's to call, with the context it deployed this service with");
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
        if (!ours(ctx))
            throw FollowLog.denied("cancel is Ignite's to call, with the context it deployed this service with");
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

    /** Whether {@code ctx} is the context Ignite deployed this instance with (its execution id is not known to clients). */
    private boolean ours(ServiceContext ctx) {
        ServiceContext mine = context;
        return ctx != null && mine != null && (ctx == mine || (ctx.executionId() != null
            && ctx.executionId().equals(mine.executionId()) && String.valueOf(ctx.name()).equals(mine.name())));
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
        listed(cache);
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

    /**
     * Which of the given log entries of {@code cache} carry a valid seal ({@link FollowLogSeal}): a
     * follower asks, once per batch of entries, before it delivers them or moves its position past
     * them. {@code entries} holds {@link FollowLogSeal#VERIFY_RECORD} bytes per entry: partition
     * (int), counter (long), the SHA-256 of its sealed fields and its {@code m} field; the answer
     * one byte per entry, 1 when sealed. Read-only: it tells a client nothing it could forge with.
     */
    public byte[] verify(String cache, byte[] entries) {
        listed(cache);
        if (entries == null || entries.length % FollowLogSeal.VERIFY_RECORD != 0
            || entries.length / FollowLogSeal.VERIFY_RECORD > MAX_VERIFY)
            throw new IllegalArgumentException("verify of cache '" + cache + "' takes up to " + MAX_VERIFY
                + " records of " + FollowLogSeal.VERIFY_RECORD + " bytes, not " + (entries == null ? "null"
                : entries.length + " bytes"));
        SecretKeySpec key = sealKey;
        if (key == null)
            sealKey = key = FollowLogSeal.key(ignite);
        // The log's id now (a cache recreated since has another; its entries are sealed with that).
        return new FollowLogSeal(key, FollowLogSeal.logId(ignite, cache)).verify(entries);
    }

    private void listed(String cache) {
        if (!caches.contains(cache))
            throw new IllegalArgumentException("cache '" + cache + "' has no follow log: the node configuration "
                + "lists " + caches + " (FollowLog.configure, or NodeLauncher --follow-log)");
    }

    /** The log's retention, in seconds. */
    public long retention() {
        return retentionSeconds;
    }
}
