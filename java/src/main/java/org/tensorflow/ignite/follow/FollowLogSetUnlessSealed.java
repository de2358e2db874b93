package org.tensorflow.ignite.follow;

import javax.cache.processor.MutableEntry;

import org.apache.ignite.Ignite;
import org.apache.ignite.Ignition;
import org.apache.ignite.cache.CacheEntryProcessor;
import org.apache.ignite.resources.IgniteInstanceResource;

/**
 * Sets a follow-log entry unless the log already holds a sealed one under its key: the batched form
 * of {@code putIfAbsent}, except that an entry whose seal does not verify ({@link FollowLogSeal}:
 * written by a thin client, or copied from another counter) is overwritten. Several nodes write
 * the same (partition, counter) with different {@code w} (writer) and possibly different
 * {@code prev} fields, so the first sealed write must win and the later ones change nothing (and
 * raise no event on the log cache); a forged entry occupying a real (partition, counter) must not.
 *
 * <p>It runs on the log key's primary, where the seal key is read from the metastorage -- only when
 * an entry is already there (rare: another node's writer was first, or a forgery).
 */
final class FollowLogSetUnlessSealed implements CacheEntryProcessor<Object, Object, Void> {
    private static final long serialVersionUID = 1L;

    private final Object value;
    private final String logId;
    private final int part;
    private final long counter;

    @IgniteInstanceResource
    private transient Ignite ignite;

    FollowLogSetUnlessSealed(Object value, String logId, int part, long counter) {
        this.value = value;
        this.logId = logId;
        this.part = part;
        this.counter = counter;
    }

    @Override public Void process(MutableEntry<Object, Object> entry, Object... args) {
        if (!entry.exists()) {
            entry.setValue(value);
            return null;
        }
        Ignite local = ignite != null ? ignite : Ignition.localIgnite();
        FollowLogSeal seal = new FollowLogSeal(FollowLogSeal.key(local), logId);
        if (!seal.valid(part, counter, entry.getValue()))
            entry.setValue(value);
        return null;
    }
}
