package org.tensorflow.ignite.bench;

import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.cache.event.CacheEntryEvent;
import org.apache.ignite.Ignition;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.cache.query.ContinuousQuery;
import org.apache.ignite.cache.query.QueryCursor;
import org.apache.ignite.client.ClientCache;
import org.apache.ignite.client.IgniteClient;

/**
 * The follow benchmark's reference: Ignite's Java thin client {@code ContinuousQuery} with a local listener.
 *
 * <p>Registers the query on {@code --cache} (keep-binary), prints {@code {"ready": true}}, then receives
 * {@code --rows} events (pages of {@code --page-size} events, a page not full sent after
 * {@code --time-interval-ms}, as IgniteDataset.follow registers its query). Each value is a binary object whose {@code t_ns} field is the writer's wall clock
 * (nanoseconds since the epoch) when it wrote the row; the listener reads it on arrival, so a latency is
 * "row written -> row in the listener". Prints one JSON line: {@code rows}, {@code seconds} (first to last
 * event), {@code p50_ms}, {@code p99_ms}, {@code max_ms}, {@code first_ns}, {@code last_ns} (wall clock of the
 * first and last event). Exits 2 when the rows do not all arrive within {@code --timeout-s}.
 */
public final class FollowBench {
    private FollowBench() {
    }

    private static long nowNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    public static void main(String[] argv) {
        Set<String> options = new java.util.HashSet<>(ClientSettings.OPTIONS);
        options.addAll(Set.of("--cache", "--rows", "--page-size", "--time-interval-ms",
            "--timeout-s"));
        try {
            CliArgs args = CliArgs.parse(argv, options, ClientSettings.FLAGS);
            String cache = args.require("--cache");
            int rows = args.getInt("--rows", 1000);
            int pageSize = args.getInt("--page-size", 256);
            int intervalMs = args.getInt("--time-interval-ms", 10);
            int timeoutS = args.getInt("--timeout-s", 120);
            long[] latencies = new long[rows];
            long[] first = {0L};
            long[] last = {0L};
            AtomicInteger seen = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(1);
            try (IgniteClient client = Ignition.startClient(ClientSettings.configuration(args))) {
                ClientCache<Object, BinaryObject> c = client.cache(cache).withKeepBinary();
                ContinuousQuery<Object, BinaryObject> q = new ContinuousQuery<>();
                q.setPageSize(pageSize);
                q.setTimeInterval(intervalMs);  // a page not full is sent after this long
                q.setLocalListener(events -> {
                    for (CacheEntryEvent<?, ? extends BinaryObject> e : events) {
                        long now = nowNs();
                        long written = e.getValue().<Long>field("t_ns");
                        int i = seen.getAndIncrement();
                        if (i == 0)
                            first[0] = now;
                        if (i < rows) {
                            latencies[i] = now - written;
                            last[0] = now;
                        }
                        if (i == rows - 1)
                            done.countDown();
                    }
                });
                try (QueryCursor<?> cur = c.query(q)) {
                    System.out.println("{\"ready\": true}");
                    System.out.flush();
                    boolean all = done.await(timeoutS, TimeUnit.SECONDS);
                    int n = Math.min(seen.get(), rows);
                    long[] got = Arrays.copyOf(latencies, n);
                    Arrays.sort(got);
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("rows", (long)n);
                    r.put("seconds", (last[0] - first[0]) / 1e9);
                    r.put("p50_ms", n == 0 ? 0.0 : got[(int)Math.min(n - 1, Math.round(0.50 * (n - 1)))] / 1e6);
                    r.put("p99_ms", n == 0 ? 0.0 : got[(int)Math.min(n - 1, Math.round(0.99 * (n - 1)))] / 1e6);
                    r.put("max_ms", n == 0 ? 0.0 : got[n - 1] / 1e6);
                    r.put("first_ns", first[0]);
                    r.put("last_ns", last[0]);
                    System.out.println(Json.write(r));
                    System.out.flush();
                    if (!all) {
                        System.err.println("FollowBench: " + n + " of " + rows + " events on cache " + cache
                            + " within " + timeoutS + " s; is a writer writing?");
                        System.exit(2);
                    }
                }
            }
        }
        catch (CliArgs.UsageException e) {
            System.err.println("FollowBench: " + e.getMessage());
            System.exit(64);
        }
        catch (Exception e) {
            System.err.println("FollowBench: " + CliArgs.describe(e));
            System.exit(1);
        }
    }
}
