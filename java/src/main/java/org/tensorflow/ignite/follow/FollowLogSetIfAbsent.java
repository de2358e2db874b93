package org.tensorflow.ignite.follow;

import javax.cache.processor.MutableEntry;

import org.apache.ignite.cache.CacheEntryProcessor;

/**
 * Sets a follow-log entry only if the log has none under its key: the batched form of
 * {@code putIfAbsent}. Several nodes write the same (partition, counter) with different
 * {@code w} (writer) fields, so the first write must win and the later ones change nothing
 * (and raise no event on the log cache).
 */
final class FollowLogSetIfAbsent implements CacheEntryProcessor<Object, Object, Void> {
    private static final long serialVersionUID = 1L;

    private final Object value;

    FollowLogSetIfAbsent(Object value) {
        this.value = value;
    }

    @Override public Void process(MutableEntry<Object, Object> entry, Object... args) {
        if (!entry.exists())
            entry.setValue(value);
        return null;
    }
}
