package org.tensorflow.ignite.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import javax.cache.Cache;
import org.apache.ignite.Ignition;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.cache.query.QueryCursor;
import org.apache.ignite.cache.query.ScanQuery;
import org.apache.ignite.client.ClientCache;
import org.apache.ignite.client.IgniteClient;

/**
 * The benchmark reference: a ScanQuery through Ignite's own Java thin client.
 *
 * <pre>
 * java -cp 'target/tensorflow-ignite-bench.jar:target/lib/*' org.tensorflow.ignite.bench.ScanBench \
 *     (--host H --port P | --addresses h:p,h:p) --cache NAME --page-size N
 *     [--partition P] [--repeat R] [--warmup K] [--mode binary|deserialize]
 *     [--no-partition-awareness] [--user U] [--timeout-ms MS]
 * </pre>
 *
 * <p>{@code --mode binary} (default) scans {@code cache.withKeepBinary()}, so user-type values
 * stay {@link BinaryObject}s whose fields are read one by one; {@code --mode deserialize}
 * lets the client turn values into Java objects, which only works for values of standard
 * types (numbers, arrays, strings, collections...) since user classes are not on our classpath.
 * Every field of every key and value is touched as {@link ValueToucher} documents.
 *
 * <p>Prints one JSON line per measured repetition (warm-up scans print to stderr):
 * {@code {"rep", "rows", "bytes", "key_bytes", "wire_bytes", "seconds", "rows_per_s", "mb_per_s",
 * "checksum", "cache", "page_size", "partition", "mode", "addresses"}} where {@code seconds} is the
 * wall time of the scan alone (query sent, all pages read and touched, cursor closed; the
 * connection is made before), {@code bytes} the values' payload as counted by ValueToucher,
 * {@code wire_bytes} the sum of {@link BinaryObject#size()} over binary-object values (0 in
 * deserialize mode), and {@code mb_per_s = bytes / 1e6 / seconds}.
 */
public final class ScanBench {
    private ScanBench() {
    }

    public static void main(String[] argv) {
        Set<String> options = new java.util.HashSet<>(ClientSettings.OPTIONS);
        options.addAll(Set.of("--cache", "--page-size", "--partition", "--repeat", "--warmup", "--mode"));
        try {
            CliArgs args = CliArgs.parse(argv, options, ClientSettings.FLAGS);
            String cache = args.require("--cache");
            int pageSize = args.getInt("--page-size", 1024);
            Integer partition = args.has("--partition") ? args.getInt("--partition", -1) : null;
            int repeat = args.getInt("--repeat", 1);
            int warmup = args.getInt("--warmup", 0);
            String mode = args.get("--mode", "binary");
            if (!mode.equals("binary") && !mode.equals("deserialize"))
                throw new CliArgs.UsageException("--mode must be binary or deserialize, got " + mode);
            if (pageSize <= 0 || repeat <= 0 || warmup < 0)
                throw new CliArgs.UsageException("--page-size and --repeat must be > 0, --warmup >= 0");

            try (IgniteClient client = Ignition.startClient(ClientSettings.configuration(args))) {
                ClientCache<Object, Object> c = client.cache(cache);
                if (mode.equals("binary"))
                    c = c.withKeepBinary();
                for (int i = 0; i < warmup; i++) {
                    Map<String, Object> r = scan(c, pageSize, partition);
                    System.err.println("warm-up " + (i + 1) + "/" + warmup + ": " + Json.write(r));
                }
                for (int i = 0; i < repeat; i++) {
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("rep", (long)i);
                    r.putAll(scan(c, pageSize, partition));
                    r.put("cache", cache);
                    r.put("page_size", (long)pageSize);
                    r.put("partition", partition == null ? null : (long)partition);
                    r.put("mode", mode);
                    r.put("addresses", java.util.List.of(ClientSettings.addresses(args)));
                    System.out.println(Json.write(r));
                    System.out.flush();
                }
            }
        }
        catch (CliArgs.UsageException e) {
            System.err.println("ScanBench: " + e.getMessage());
            System.exit(2);
        }
        catch (Exception e) {
            e.printStackTrace();
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof org.apache.ignite.binary.BinaryInvalidTypeException) {
                    System.err.println("ScanBench: --mode deserialize needs the value classes on the classpath, "
                        + "and " + t.getMessage() + " is not; use --mode binary for user types.");
                    break;
                }
            }
            // Last, so that a caller showing the tail of stderr shows this line.
            System.err.println("ScanBench failed: " + CliArgs.describe(e));
            System.exit(1);
        }
    }

    /** One timed scan; returns rows, bytes, seconds and the derived rates. */
    private static Map<String, Object> scan(ClientCache<Object, Object> cache, int pageSize, Integer partition) {
        ValueToucher values = new ValueToucher();
        ValueToucher keys = new ValueToucher();
        long rows = 0;
        long wire = 0;
        ScanQuery<Object, Object> q = new ScanQuery<>();
        q.setPageSize(pageSize);
        if (partition != null)
            q.setPartition(partition);
        long t0 = System.nanoTime();
        try (QueryCursor<Cache.Entry<Object, Object>> cur = cache.query(q)) {
            for (Cache.Entry<Object, Object> e : cur) {
                keys.touch(e.getKey());
                Object v = e.getValue();
                if (v instanceof BinaryObject)
                    wire += ((BinaryObject)v).size();
                values.touch(v);
                rows++;
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("rows", rows);
        r.put("bytes", values.bytes);
        r.put("key_bytes", keys.bytes);
        r.put("wire_bytes", wire);
        r.put("seconds", seconds);
        r.put("rows_per_s", seconds > 0 ? rows / seconds : 0.0);
        r.put("mb_per_s", seconds > 0 ? values.bytes / 1e6 / seconds : 0.0);
        r.put("checksum", values.checksum + keys.checksum);
        return r;
    }
}
