package org.tensorflow.ignite.bench;

import java.time.temporal.TemporalAccessor;
import java.util.Locale;
import org.apache.ignite.client.IgniteClient;
import org.apache.ignite.lang.Cursor;
import org.apache.ignite.sql.ResultSet;
import org.apache.ignite.sql.SqlRow;
import org.apache.ignite.sql.Statement;
import org.apache.ignite.table.Table;
import org.apache.ignite.table.Tuple;
import org.apache.ignite.table.criteria.CriteriaQueryOptions;

/**
 * The Ignite 3 benchmark reference: every row of a table read through Ignite 3's own Java client
 * ({@code org.apache.ignite:ignite-client} 3.1.0), every value of every row touched.
 *
 * <pre>
 * java -cp 'tensorflow-ignite-bench-ignite3.jar:lib/*' org.tensorflow.ignite.bench.Ignite3ReadBench \
 *      --addresses 127.0.0.1:10800 --table NAME --mode sql|records [--page-size N] [--repeat R] [--warmup K]
 * </pre>
 *
 * <p>Modes: {@code sql} runs {@code SELECT * FROM <table>} ({@code client.sql().execute} with a
 * statement of that page size) and iterates its {@link SqlRow}s; {@code records} iterates the table's
 * record view ({@code recordView().query(null, null, null, options)}: no criteria, so every row, as
 * {@link Tuple}s). Ignite 3.1's table API has no scan operation of its own: the client turns a
 * criteria query into an SQL {@code SELECT} (its {@code SqlSerializer}) and runs it through the same
 * SQL ops, so both modes are SQL on the wire; {@code records} adds the mapping to tuples.
 *
 * <p>Output: one JSON line per measured repetition,
 * {@code {"rep", "rows", "bytes", "seconds", "rows_per_s", "mb_per_s", "checksum", "table", "mode",
 * "page_size"}}: {@code seconds} covers the query sent to the last row touched and the cursor closed,
 * after connecting and after {@code --warmup} unmeasured reads in the same JVM; {@code bytes} is the
 * payload touched (see {@link #touch}). Exit status 2 is a bad command line, 1 a failure.
 */
public final class Ignite3ReadBench {
    private long bytes;

    /** Wrapping sum of integral values and of floating-point bits (printed, so nothing is dead code). */
    private long checksum;

    private Ignite3ReadBench() {
    }

    public static void main(String[] args) {
        String addresses = null;
        String table = null;
        String mode = "sql";
        int pageSize = 1024;
        int repeat = 1;
        int warmup = 0;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                    case "--addresses": addresses = need(a, v); i++; break;
                    case "--table": table = need(a, v); i++; break;
                    case "--mode": mode = need(a, v); i++; break;
                    case "--page-size": pageSize = Integer.parseInt(need(a, v)); i++; break;
                    case "--repeat": repeat = Integer.parseInt(need(a, v)); i++; break;
                    case "--warmup": warmup = Integer.parseInt(need(a, v)); i++; break;
                    default: throw new IllegalArgumentException("unknown argument " + a);
                }
            }
            if (addresses == null || table == null)
                throw new IllegalArgumentException("--addresses and --table are required");
            if (!mode.equals("sql") && !mode.equals("records"))
                throw new IllegalArgumentException("--mode must be sql or records, not " + mode);
            if (pageSize < 1 || repeat < 1 || warmup < 0)
                throw new IllegalArgumentException("--page-size and --repeat must be >= 1, --warmup >= 0");
        }
        catch (RuntimeException e) {
            System.err.println("Ignite3ReadBench: " + e.getMessage());
            System.exit(2);
            return;
        }
        try (IgniteClient client = IgniteClient.builder().addresses(addresses.split(",")).build()) {
            // The table handle, like the connection, is had before the clock starts (a request to the node).
            Table handle = null;
            if (mode.equals("records")) {
                handle = client.tables().table(table);
                if (handle == null)
                    throw new IllegalStateException("table " + table + " does not exist");
            }
            for (int i = 0; i < warmup; i++)
                new Ignite3ReadBench().read(client, handle, table, pageSize);
            for (int rep = 1; rep <= repeat; rep++) {
                Ignite3ReadBench bench = new Ignite3ReadBench();
                long t0 = System.nanoTime();
                long rows = bench.read(client, handle, table, pageSize);
                double seconds = (System.nanoTime() - t0) / 1e9;
                System.out.println(String.format(Locale.ROOT,
                    "{\"rep\": %d, \"rows\": %d, \"bytes\": %d, \"seconds\": %.6f, \"rows_per_s\": %.1f, "
                        + "\"mb_per_s\": %.3f, \"checksum\": %d, \"table\": \"%s\", \"mode\": \"%s\", \"page_size\": %d}",
                    rep, rows, bench.bytes, seconds, rows / seconds, bench.bytes / 1e6 / seconds, bench.checksum,
                    table.replace("\\", "\\\\").replace("\"", "\\\""), mode, pageSize));
                System.out.flush();
            }
        }
        catch (Exception e) {
            e.printStackTrace();
            System.err.println("Ignite3ReadBench failed: " + e);
            System.exit(1);
        }
    }

    private static String need(String name, String value) {
        if (value == null)
            throw new IllegalArgumentException(name + " needs a value");
        return value;
    }

    /**
     * Reads every row of {@code table} -- through {@code records}' record view when given, else by SQL --
     * touching every value; returns the row count.
     */
    private long read(IgniteClient client, Table records, String table, int pageSize) {
        long rows = 0;
        if (records == null) {
            Statement stmt = client.sql().statementBuilder().query("SELECT * FROM " + table).pageSize(pageSize).build();
            try (ResultSet<SqlRow> rs = client.sql().execute(null, stmt)) {
                while (rs.hasNext()) {
                    SqlRow row = rs.next();
                    for (int c = 0, n = row.columnCount(); c < n; c++)
                        touch(row.value(c));
                    rows++;
                }
            }
        }
        else {
            CriteriaQueryOptions opts = CriteriaQueryOptions.builder().pageSize(pageSize).build();
            try (Cursor<Tuple> cursor = records.recordView().query(null, null, null, opts)) {
                while (cursor.hasNext()) {
                    Tuple row = cursor.next();
                    for (int c = 0, n = row.columnCount(); c < n; c++)
                        touch(row.value(c));
                    rows++;
                }
            }
        }
        return rows;
    }

    /**
     * Touches one value as a tensor reader would materialize it: a byte array's length (its first
     * and last bytes into the checksum, no O(n) pass), a number's width (its value or bits into the
     * checksum), a string's length, a boolean 1 byte, a temporal value or UUID 8/16 bytes (its hash);
     * null adds nothing.
     */
    private void touch(Object v) {
        if (v == null)
            return;
        if (v instanceof byte[]) {
            byte[] a = (byte[])v;
            bytes += a.length;
            if (a.length > 0)
                checksum += a[0] + a[a.length - 1];
        }
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            checksum += ((Number)v).longValue();
            bytes += v instanceof Long ? 8 : v instanceof Integer ? 4 : v instanceof Short ? 2 : 1;
        }
        else if (v instanceof Double) {
            checksum += Double.doubleToRawLongBits((Double)v);
            bytes += 8;
        }
        else if (v instanceof Float) {
            checksum += Float.floatToRawIntBits((Float)v);
            bytes += 4;
        }
        else if (v instanceof String) {
            int n = ((String)v).length();
            checksum += n;
            bytes += n;
        }
        else if (v instanceof Boolean) {
            checksum += ((Boolean)v) ? 1 : 0;
            bytes += 1;
        }
        else if (v instanceof java.util.UUID) {
            checksum += ((java.util.UUID)v).getLeastSignificantBits();
            bytes += 16;
        }
        else if (v instanceof TemporalAccessor || v instanceof Number) {
            checksum += v.hashCode();
            bytes += 8;
        }
        else
            throw new IllegalStateException("no touch rule for a value of " + v.getClass().getName());
    }
}
