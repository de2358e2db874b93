package org.tensorflow.ignite.follow;

import org.apache.ignite.Ignite;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.cache.IgniteInternalCache;
import org.apache.ignite.internal.processors.cache.distributed.dht.topology.GridDhtLocalPartition;
import org.apache.ignite.lang.IgniteCallable;
import org.apache.ignite.resources.IgniteInstanceResource;

/**
 * One node's update counters of a cache's partitions it holds (-1 for the others): the
 * follow log's head, merged by {@link FollowLogService#head}. A counter is read after the
 * update it counts was applied, so a scan started afterwards sees that update or a later one.
 */
final class FollowLogHead implements IgniteCallable<long[]> {
    private static final long serialVersionUID = 1L;

    private final String cache;
    private final int partitions;

    @IgniteInstanceResource
    private transient Ignite ignite;

    FollowLogHead(String cache, int partitions) {
        this.cache = cache;
        this.partitions = partitions;
    }

    @Override public long[] call() {
        long[] out = new long[partitions];
        java.util.Arrays.fill(out, -1L);
        IgniteInternalCache<Object, Object> c = ((IgniteEx)ignite).cachex(cache);
        if (c == null)
            return out;
        for (GridDhtLocalPartition p : c.context().topology().localPartitions()) {
            if (p.id() < partitions)
                out[p.id()] = Math.max(out[p.id()], p.updateCounter());
        }
        return out;
    }
}
