package org.tensorflow.ignite.launcher;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.ignite.Ignite;
import org.apache.ignite.cache.affinity.Affinity;
import org.apache.ignite.cluster.ClusterNode;

/**
 * One TensorFlow worker per server node that is primary for at least one partition
 * of the job's cache, with that node's primary partitions.
 *
 * <p>The {@link #fingerprint} names every (node, partitions) pair; the supervisor
 * compares it with the running plan's to notice that a node left or joined or that
 * rebalancing moved primaries, and restarts the job on a new plan.
 */
final class JobPlan {
    /** Nodes in worker order (by consistent id, so a plan is stable across restarts). */
    final List<ClusterNode> nodes;

    /** Primary partitions of each planned node, ascending. */
    final Map<UUID, List<Integer>> partitions;

    /** {@code consistentId=ranges;...} in worker order. */
    final String fingerprint;

    final int partitionCount;

    private JobPlan(List<ClusterNode> nodes, Map<UUID, List<Integer>> partitions, int partitionCount) {
        this.nodes = nodes;
        this.partitions = partitions;
        this.partitionCount = partitionCount;
        StringBuilder sb = new StringBuilder();
        for (ClusterNode n : nodes) {
            if (sb.length() > 0)
                sb.append(';');
            sb.append(label(n)).append('=').append(ranges(partitions.get(n.id())));
        }
        this.fingerprint = sb.toString();
    }

    /** Plans the cache on the current topology; the cache must exist. */
    static JobPlan compute(Ignite ignite, String cache) {
        if (!ignite.cacheNames().contains(cache))
            throw new IllegalArgumentException("cache '" + cache + "' does not exist on the cluster; load it first "
                + "(ignite-tf load or tensorflow_ignite.write)");
        Affinity<Object> aff = ignite.affinity(cache);
        int parts = aff.partitions();
        Map<UUID, List<Integer>> byNode = new HashMap<>();
        Map<UUID, ClusterNode> nodes = new HashMap<>();
        for (int p = 0; p < parts; p++) {
            ClusterNode n = aff.mapPartitionToNode(p);
            if (n == null || n.isClient())
                continue;
            nodes.putIfAbsent(n.id(), n);
            byNode.computeIfAbsent(n.id(), k -> new ArrayList<>()).add(p);
        }
        List<ClusterNode> ordered = new ArrayList<>(nodes.values());
        ordered.sort(Comparator.comparing(JobPlan::label).thenComparing(n -> n.id().toString()));
        return new JobPlan(ordered, byNode, parts);
    }

    static String label(ClusterNode n) {
        Object cid = n.consistentId();
        return cid == null ? n.id().toString() : cid.toString();
    }

    /** {@code [0,1,2,5,7,8]} → {@code "0-2,5,7-8"} (the IGNITE_DATASET_PARTS syntax). */
    static String ranges(List<Integer> parts) {
        if (parts == null || parts.isEmpty())
            return "";
        StringBuilder sb = new StringBuilder();
        int start = parts.get(0);
        int prev = start;
        for (int i = 1; i <= parts.size(); i++) {
            int cur = i < parts.size() ? parts.get(i) : Integer.MIN_VALUE;
            if (cur == prev + 1) {
                prev = cur;
                continue;
            }
            if (sb.length() > 0)
                sb.append(',');
            sb.append(start);
            if (prev != start)
                sb.append('-').append(prev);
            start = prev = cur;
        }
        return sb.toString();
    }

    /** Human summary of the nodes: {@code "node-0 (342 partitions), node-1 (341)"}. */
    String summary() {
        StringBuilder sb = new StringBuilder();
        for (ClusterNode n : nodes) {
            if (sb.length() > 0)
                sb.append(", ");
            sb.append(label(n)).append(" (").append(partitions.get(n.id()).size()).append(" partitions)");
        }
        return sb.toString();
    }
}
