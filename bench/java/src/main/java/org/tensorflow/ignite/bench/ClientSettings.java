package org.tensorflow.ignite.bench;

import java.util.Arrays;
import java.util.Set;
import org.apache.ignite.configuration.ClientConfiguration;

/**
 * Connection options common to both programs, turned into a {@link ClientConfiguration}.
 *
 * <p>{@code --addresses h:p,h:p} (several servers) or {@code --host H --port P} (one).
 * Partition awareness is Ignite's default ({@code true} in 2.18) and stays on unless
 * {@code --no-partition-awareness}; it only matters with several addresses, where the
 * client opens a channel per server and sends single-partition requests (a ScanQuery
 * with a partition set, key operations) to that partition's primary node.
 */
final class ClientSettings {
    static final Set<String> OPTIONS = Set.of("--host", "--port", "--addresses", "--user", "--password",
        "--timeout-ms");
    static final Set<String> FLAGS = Set.of("--no-partition-awareness");

    private ClientSettings() {
    }

    static String[] addresses(CliArgs args) {
        if (args.has("--addresses")) {
            String[] addrs = Arrays.stream(args.require("--addresses").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).toArray(String[]::new);
            if (addrs.length == 0)
                throw new CliArgs.UsageException("--addresses is empty");
            return addrs;
        }
        return new String[] {args.get("--host", "127.0.0.1") + ":" + args.require("--port")};
    }

    static ClientConfiguration configuration(CliArgs args) {
        ClientConfiguration cfg = new ClientConfiguration()
            .setAddresses(addresses(args))
            .setPartitionAwarenessEnabled(!args.flag("--no-partition-awareness"));
        int timeout = args.getInt("--timeout-ms", 0);
        if (timeout > 0)
            cfg.setHandshakeTimeout(timeout).setRequestTimeout(timeout);
        if (args.has("--user")) {
            cfg.setUserName(args.require("--user"));
            // Prefer the environment for secrets; --password exists for local experiments.
            String pw = System.getenv("TF_IGNITE_PASSWORD");
            cfg.setUserPassword(pw != null ? pw : args.get("--password", ""));
        }
        return cfg;
    }
}
