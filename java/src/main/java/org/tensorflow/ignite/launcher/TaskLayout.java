package org.tensorflow.ignite.launcher;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The TensorFlow tasks of one attempt of a job and the {@code TF_CONFIG} of each.
 *
 * <p>{@link JobPlan} says which nodes hold the data (one per server node with primary
 * partitions of the cache); this class turns those data nodes into TensorFlow roles:
 *
 * <ul>
 *   <li>{@code multi_worker_mirrored}: one {@code worker} per data node, reading that
 *       node's primaries; worker 0 is the chief.</li>
 *   <li>{@code parameter_server}: one {@code chief} (the coordinator, on the first data
 *       node), {@code numPs} {@code ps} tasks spread over the data nodes starting with the
 *       second one (so the coordinator and the first variable shard do not share a node
 *       when there is a choice), and one {@code worker} per data node reading its
 *       primaries.</li>
 * </ul>
 *
 * Tasks are ordered chief, ps, worker; a task's position in that order is its
 * launcher index (worker record and result keys, {@code TF_IGNITE_WORKER_INDEX}).
 * Pure and deterministic, so it is tested without a cluster through {@link #main}.
 */
final class TaskLayout {
    private TaskLayout() {
    }

    static final String MWMS = "multi_worker_mirrored";
    static final String PS = "parameter_server";

    /** One TF task: its role, its index within the role, and the data node it runs on. */
    static final class Task {
        final String type;
        final int typeIndex;
        /** Index into the plan's data nodes. */
        final int node;

        Task(String type, int typeIndex, int node) {
            this.type = type;
            this.typeIndex = typeIndex;
            this.node = node;
        }

        /** Workers read the primary partitions of their node; chief and ps do not read training data. */
        boolean readsPartitions() {
            return "worker".equals(type);
        }
    }

    /** The canonical strategy name, or null when {@code name} names none we support. */
    static String strategy(String name) {
        if (name == null || name.isEmpty())
            return MWMS;
        switch (name.toLowerCase().replace('-', '_')) {
            case "multi_worker_mirrored":
            case "multiworkermirrored":
            case "mwms":
                return MWMS;
            case "parameter_server":
            case "parameterserver":
            case "ps":
                return PS;
            default:
                return null;
        }
    }

    static List<Task> plan(int dataNodes, String strategy, int numPs) {
        if (dataNodes < 1)
            throw new IllegalArgumentException("no data node to plan tasks on");
        List<Task> tasks = new ArrayList<>();
        if (PS.equals(strategy)) {
            if (numPs < 1)
                throw new IllegalArgumentException("the parameter_server strategy needs at least one ps task (--num-ps)");
            tasks.add(new Task("chief", 0, 0));
            for (int j = 0; j < numPs; j++)
                tasks.add(new Task("ps", j, (j + 1) % dataNodes));
        }
        else if (!MWMS.equals(strategy))
            throw new IllegalArgumentException("unknown strategy '" + strategy + "'");
        for (int i = 0; i < dataNodes; i++)
            tasks.add(new Task("worker", i, i));
        return Collections.unmodifiableList(tasks);
    }

    /** {@code TF_CONFIG} of task {@code self}; {@code addresses.get(i)} is task i's {@code host:port}. */
    static String tfConfig(List<Task> tasks, List<String> addresses, int self) {
        StringBuilder sb = new StringBuilder("{\"cluster\": {");
        boolean firstRole = true;
        for (String role : new String[] {"chief", "ps", "worker"}) {
            List<String> members = new ArrayList<>();
            for (int i = 0; i < tasks.size(); i++) {
                if (tasks.get(i).type.equals(role))
                    members.add(addresses.get(i));
            }
            if (members.isEmpty())
                continue;
            if (!firstRole)
                sb.append(", ");
            firstRole = false;
            sb.append('"').append(role).append("\": [");
            for (int i = 0; i < members.size(); i++) {
                if (i > 0)
                    sb.append(", ");
                sb.append('"').append(members.get(i)).append('"');
            }
            sb.append(']');
        }
        Task t = tasks.get(self);
        return sb.append("}, \"task\": {\"type\": \"").append(t.type).append("\", \"index\": ").append(t.typeIndex)
            .append("}}").toString();
    }

    /**
     * Prints the plan for {@code DATA_NODES STRATEGY NUM_PS} as JSON lines, one task each
     * ({@code {"type", "index", "node", "tf_config"}}, with {@code host-NODE:PORT}
     * addresses); used by the unit tests.
     */
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        String strategy = strategy(args.length > 1 ? args[1] : null);
        int numPs = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        List<Task> tasks = plan(n, strategy, numPs);
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < tasks.size(); i++)
            addresses.add("host-" + tasks.get(i).node + ":" + (20000 + i));
        for (int i = 0; i < tasks.size(); i++) {
            Task t = tasks.get(i);
            System.out.println("{\"type\": \"" + t.type + "\", \"index\": " + t.typeIndex + ", \"node\": " + t.node
                + ", \"reads\": " + t.readsPartitions() + ", \"tf_config\": " + tfConfig(tasks, addresses, i) + "}");
        }
    }
}
