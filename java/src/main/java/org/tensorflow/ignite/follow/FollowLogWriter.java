package org.tensorflow.ignite.follow;

import java.util.Arrays;

import javax.cache.event.CacheEntryEvent;
import javax.cache.event.CacheEntryUpdatedListener;
import javax.cache.event.EventType;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteCheckedException;
import org.apache.ignite.IgniteLogger;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.cache.affinity.Affinity;
import org.apache.ignite.cache.query.CacheQueryEntryEvent;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.cache.CacheObjectContext;
import org.apache.ignite.lang.IgniteAsyncCallback;

/**
 * The local listener of one node's continuous query on a followed cache: writes each event into
 * the log as (partition, update counter) -&gt; (type, previous counter, key bytes, value bytes).
 *
 * <p>Ignite hands a continuous query's listener every event once, per partition in update-counter
 * order, also across a primary's death (the backups' queues resend what the primary had not
 * sent). Being an {@link IgniteAsyncCallback}, it runs in the async-callback pool, striped by
 * partition, and a partition's events stay in order. It builds each entry and hands it to this
 * node's {@link FollowLogFlusher}, which writes them in batches, set-unless-sealed, keeping each
 * partition's counter order: the log of a partition grows in counter order whichever of the
 * nodes' writers gets there first -- the entry (p, c) exists before (p, c') for every c &lt; c'
 * the writer of c' saw.
 *
 * <p>Each entry is sealed ({@link FollowLogSeal}: field {@code m}), and an entry already in the
 * log at its (partition, counter) counts as written only when its seal verifies: a thin client's
 * forgery placed there first is overwritten.
 */
@IgniteAsyncCallback
final class FollowLogWriter implements CacheEntryUpdatedListener<Object, Object> {
    private final Ignite ignite;
    private final IgniteLogger log;
    private final String cache;
    private final IgniteCache<Object, Object> logCache;
    /** Writes what this listener hands it, in batches, in the order handed. */
    private final FollowLogFlusher flusher;
    private final Affinity<Object> affinity;
    private final CacheObjectContext objects;
    /** The last counter this writer saw per partition (-1: none yet). */
    private final long[] last;
    /** This node's topology order, recorded in each entry it writes (which node wrote what). */
    private final long writer;
    /** Seals each entry; tells a sealed entry already in the log from a forged one. */
    private final FollowLogSeal seal;

    FollowLogWriter(Ignite ignite, IgniteLogger log, String cache, IgniteCache<Object, Object> logCache,
        int partitions) {
        this.ignite = ignite;
        this.log = log;
        this.cache = cache;
        this.logCache = logCache;
        this.affinity = ignite.affinity(cache);
        this.objects = ((IgniteEx)ignite).cachex(cache).context().cacheObjectContext();
        this.last = new long[partitions];
        Arrays.fill(last, -1L);
        this.writer = ignite.cluster().localNode().order();
        this.seal = FollowLogSeal.of(ignite, cache);
        this.flusher = new FollowLogFlusher(log, cache, logCache, seal, String.valueOf(writer));
        this.flusher.start();
    }

    @Override public void onUpdated(Iterable<CacheEntryEvent<?, ?>> events) {
        for (CacheEntryEvent<?, ?> e : events) {
            try {
                write(e);
            }
            catch (RuntimeException | IgniteCheckedException ex) {
                // The other nodes' writers write the same entry; a stopping node fails here.
                log.warning("tf-ignite follow log of cache '" + cache + "': an event was not logged by this node ("
                    + ex + ")");
            }
        }
    }

    /** Stop handing entries to the flusher (the query is being closed). */
    void close() {
        flusher.close();
    }

    private void write(CacheEntryEvent<?, ?> e) throws IgniteCheckedException {
        long counter = ((CacheQueryEntryEvent<?, ?>)e).getPartitionUpdateCounter();
        int part = affinity.partition(e.getKey());
        long prev;
        synchronized (last) {
            prev = last[part] < counter ? last[part] : -1L;
            last[part] = Math.max(last[part], counter);
        }
        boolean gone = e.getEventType() == EventType.REMOVED || e.getEventType() == EventType.EXPIRED;
        Object value = gone ? e.getOldValue() : e.getValue();
        BinaryObject key = ignite.binary().builder(FollowLog.KEY_TYPE).setField("p", part).setField("c", counter)
            .build();
        if (seal.valid(part, counter, logCache.localPeek(key)))
            return; // another node's writer was first (an entry that is not sealed is overwritten)
        byte t = (byte)type(e.getEventType());
        byte[] k = bytes(e.getKey());
        byte[] v = bytes(value);
        BinaryObject entry = ignite.binary().builder(FollowLog.ENTRY_TYPE)
            .setField("t", t)
            .setField("prev", prev)
            .setField("w", writer)
            .setField("k", k, byte[].class)
            .setField("v", v, byte[].class)
            .setField("m", seal.seal(part, counter, t, prev, k, v), byte[].class)
            .build();
        flusher.add(new FollowLogFlusher.Item(part, counter, key, entry));
    }

    private byte[] bytes(Object o) throws IgniteCheckedException {
        return o == null ? null : ((IgniteEx)ignite).context().cacheObjects().marshal(objects, o);
    }

    /** The thin client's event type byte. */
    private static int type(EventType t) {
        switch (t) {
            case CREATED: return 0;
            case UPDATED: return 1;
            case REMOVED: return 2;
            default: return 3;
        }
    }
}
