package org.tensorflow.ignite.follow;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteLogger;
import org.apache.ignite.binary.BinaryObject;

/**
 * One node's writer of one follow log: takes the (key, entry) pairs the node's listener
 * ({@link FollowLogWriter}) hands it, in the order it hands them, and writes them in batches with
 * one {@code invokeAll} of {@link FollowLogSetUnlessSealed} each.
 *
 * <p><b>Order.</b> A follower drops a log entry at or before its position and fails on an entry
 * whose {@code prev} lies beyond it, so a log partition must become visible in counter order.
 * The listener enqueues each partition's events in counter order; this single thread writes one
 * batch at a time, a batch's entries sorted by (partition, counter) (an insertion-ordered map:
 * Ignite sends the keys of one primary in one request and applies them in that order), and starts the next batch
 * only once the previous one was written. So, as with one {@code putIfAbsent} per event, every
 * entry this node writes becomes visible after every earlier entry of its partition this node
 * saw. Entries already on this node with a valid seal ({@code localPeek}: another node's writer
 * was first) are left out; an entry there whose seal does not verify (a thin client's forgery) is
 * overwritten.
 *
 * <p><b>Back-pressure.</b> The queue is bounded ({@link #CAPACITY}); a full queue blocks the
 * listener (Ignite's async-callback stripe of the partition), which holds Ignite's continuous
 * query buffer rather than growing one of ours.
 *
 * <p><b>Failures.</b> A failed batch is written again after
 * {@link #FIRST_BACKOFF_MS}, doubling, {@link #ATTEMPTS} times in all (set-unless-sealed is
 * idempotent); then the batch is given up
 * with an error in the node's log naming the cache, the entry count and each partition's
 * counters. The other module nodes write the same entries; if every writer gives an entry up, a
 * follower reaching it gets {@code FollowPositionLostError} (the next entry's {@code prev} is
 * beyond its position).
 */
final class FollowLogFlusher implements Runnable {
    /** Entries waiting at most; a full queue blocks the listener. */
    static final int CAPACITY = 16384;

    /** Entries written in one {@code invokeAll} at most. */
    static final int BATCH = 1024;

    /** Writes of one batch at most before it is given up. */
    static final int ATTEMPTS = 6;

    /** The wait before the second write of a failed batch; doubles for each further one. */
    static final long FIRST_BACKOFF_MS = 50;

    /** One log entry to write. */
    static final class Item {
        final int part;
        final long counter;
        final BinaryObject key;
        final BinaryObject entry;

        Item(int part, long counter, BinaryObject key, BinaryObject entry) {
            this.part = part;
            this.counter = counter;
            this.key = key;
            this.entry = entry;
        }
    }

    private static final Comparator<Item> ORDER =
        Comparator.<Item>comparingInt(i -> i.part).thenComparingLong(i -> i.counter);

    private final IgniteLogger log;
    private final String cache;
    private final IgniteCache<Object, Object> logCache;
    private final FollowLogSeal seal;
    private final BlockingQueue<Item> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final Thread thread;
    private volatile boolean closed;

    FollowLogFlusher(IgniteLogger log, String cache, IgniteCache<Object, Object> logCache, FollowLogSeal seal,
        String node) {
        this.log = log;
        this.cache = cache;
        this.logCache = logCache;
        this.seal = seal;
        this.thread = new Thread(this, "tf-follow-log-" + cache + "-" + node);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Hand over one entry, blocking while the queue is full; false once closed (the entry is dropped). */
    boolean add(Item item) {
        try {
            while (!closed) {
                if (queue.offer(item, 100, TimeUnit.MILLISECONDS))
                    return true;
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    /** Stop: what is queued and not written yet is dropped (the other nodes' writers write it). */
    void close() {
        closed = true;
        thread.interrupt();
    }

    @Override public void run() {
        List<Item> batch = new ArrayList<>(BATCH);
        try {
            while (!closed) {
                Item first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null)
                    continue;
                batch.add(first);
                queue.drainTo(batch, BATCH - 1);
                write(batch);
                batch.clear();
            }
        }
        catch (InterruptedException e) {
            // closed
        }
    }

    private void write(List<Item> batch) throws InterruptedException {
        // Sorted by (partition, counter): a partition's entries stay in counter order, and every node
        // locks the keys of a batch in the same order (an atomic cache locks them in request order).
        batch.sort(ORDER);
        Map<Object, FollowLogSetUnlessSealed> todo = new LinkedHashMap<>();
        for (Item i : batch) {
            if (!seal.valid(i.part, i.counter, logCache.localPeek(i.key)))
                todo.put(i.key, new FollowLogSetUnlessSealed(i.entry, seal.logId(), i.part, i.counter));
        }
        if (todo.isEmpty())
            return;
        long backoff = FIRST_BACKOFF_MS;
        for (int attempt = 1; ; attempt++) {
            try {
                logCache.invokeAll(todo);
                return;
            }
            catch (RuntimeException ex) {
                if (closed)
                    return;
                if (attempt >= ATTEMPTS) {
                    log.error("tf-ignite follow log of cache '" + cache + "': this node could not write "
                        + todo.size() + " log entries after " + ATTEMPTS + " attempts and gives them up ("
                        + ranges(batch) + "); the other module nodes write the same entries -- if every one "
                        + "failed, a follower reaching them fails with FollowPositionLostError", ex);
                    return;
                }
                log.warning("tf-ignite follow log of cache '" + cache + "': writing " + todo.size()
                    + " log entries failed (attempt " + attempt + " of " + ATTEMPTS + "), again in "
                    + backoff + " ms (" + ex + ")");
                Thread.sleep(backoff);
                backoff *= 2;
            }
        }
    }

    /** "partition p: counters a..b" for each partition of the batch. */
    private static String ranges(List<Item> batch) {
        Map<Integer, long[]> r = new LinkedHashMap<>();
        for (Item i : batch) {
            long[] mm = r.computeIfAbsent(i.part, p -> new long[] {i.counter, i.counter});
            mm[0] = Math.min(mm[0], i.counter);
            mm[1] = Math.max(mm[1], i.counter);
        }
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Integer, long[]> e : r.entrySet()) {
            if (sb.length() > 0)
                sb.append(", ");
            sb.append("partition ").append(e.getKey()).append(": counters ").append(e.getValue()[0]).append("..")
                .append(e.getValue()[1]);
        }
        return sb.toString();
    }
}
