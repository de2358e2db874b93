package org.tensorflow.ignite.bench;

import java.math.BigDecimal;
import java.sql.Time;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.ignite.Ignition;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.binary.BinaryObjectBuilder;
import org.apache.ignite.binary.BinaryType;
import org.apache.ignite.cache.query.SqlFieldsQuery;
import org.apache.ignite.client.ClientCache;
import org.apache.ignite.client.IgniteClient;
import org.tensorflow.ignite.bench.ExpectedJson.EnumValue;
import org.tensorflow.ignite.bench.ExpectedJson.SourceObject;
import org.tensorflow.ignite.bench.ExpectedJson.TypedNull;

/**
 * An independent writer for the decoder tests: Ignite's own Java thin client writes values
 * of every Ignite type, and the expected values are printed as JSON lines.
 *
 * <pre>
 * java -cp 'target/tensorflow-ignite-bench.jar:target/lib/*' org.tensorflow.ignite.bench.TypeWriter \
 *     (--host H --port P | --addresses h:p,...) --cache NAME [--count N]
 *     [--array-length L [--misfit-key K]] [--sql [--table T] [--value-type V]] [--no-verify]
 * </pre>
 *
 * <p><b>Cache mode</b> (default): {@code getOrCreateCache(NAME)}, then keys {@code 0..N-1}
 * (Integer) get values of binary type {@code AllTypes} made with
 * {@code client.binary().builder("AllTypes")}; see {@link #allTypes} for the fields. Its primitive
 * arrays ({@code f_bytes} .. {@code f_bools}) hold {@code 3 * key} elements, or with
 * {@code --array-length L} exactly L in every key (fixed-length arrays as applications write them:
 * {@code float[64]} pixels), except key K of {@code --misfit-key K}, whose arrays hold L - 1 (a row
 * that does not fit a declared shape).
 *
 * <p><b>SQL mode</b> ({@code --sql}, needs a node with an SQL engine): {@code CREATE TABLE T}
 * (default: the cache name) with {@code WITH "CACHE_NAME=NAME,VALUE_TYPE=V"} (default
 * {@code SqlAllTypes}), one column per SQL type (see {@link #SQL_COLUMNS}), rows {@code ID = 0..N-1}
 * inserted with parameterized {@code INSERT}; row k has NULL in every column j with
 * {@code j % 5 == k % 5}, and {@code C_NULL} is NULL in every row (rows 0..N-1 of an earlier
 * run are deleted first; the table is created only if missing). The cache's keys are the
 * {@code ID} ints, its values binary objects of type V with the upper-case column names as fields.
 *
 * <p>Every entry is read back with {@code withKeepBinary().get(k)} and encoded the same way;
 * a mismatch fails the run (so the JSON is what Ignite's own client sees) unless
 * {@code --no-verify}. Output, one line per key, encoded as {@link ExpectedJson} documents:
 * {@code {"key": k, "type_name": ..., "fields": {...}, "types": {field: Ignite metadata type
 * name}}}, plus {@code "table"} and {@code "sql_types"} {column: declared SQL type} in SQL mode.
 */
public final class TypeWriter {
    static final String TYPE_NAME = "AllTypes";
    static final String INNER_TYPE = "Inner";
    static final String ENUM_TYPE = "TfiColor";
    static final String[] ENUM_NAMES = {"RED", "GREEN", "BLUE"};

    private TypeWriter() {
    }

    public static void main(String[] argv) {
        Set<String> options = new HashSet<>(ClientSettings.OPTIONS);
        options.addAll(Set.of("--cache", "--count", "--table", "--value-type", "--array-length", "--misfit-key"));
        Set<String> flags = new HashSet<>(ClientSettings.FLAGS);
        flags.addAll(Set.of("--sql", "--no-verify"));
        try {
            CliArgs args = CliArgs.parse(argv, options, flags);
            String cache = args.require("--cache");
            int n = args.getInt("--count", 5);
            if (n < 0)
                throw new CliArgs.UsageException("--count must be >= 0");
            boolean verify = !args.flag("--no-verify");
            int arrayLength = args.getInt("--array-length", -1);
            int misfitKey = args.getInt("--misfit-key", -1);
            if (args.has("--array-length") && arrayLength < 1)
                throw new CliArgs.UsageException("--array-length must be >= 1");
            if (args.has("--misfit-key") && (!args.has("--array-length") || misfitKey < 0 || misfitKey >= n))
                throw new CliArgs.UsageException("--misfit-key needs --array-length and a key in 0..count-1");
            if (args.flag("--sql") && args.has("--array-length"))
                throw new CliArgs.UsageException("--array-length applies to cache mode, not --sql");
            try (IgniteClient client = Ignition.startClient(ClientSettings.configuration(args))) {
                List<Map<String, Object>> records = args.flag("--sql")
                    ? writeSql(client, cache, args.get("--table", cache), args.get("--value-type", "SqlAllTypes"),
                        n, verify)
                    : writeCache(client, cache, n, verify, arrayLength, misfitKey);
                for (Map<String, Object> r : records)
                    System.out.println(Json.write(r));
                System.out.flush();
            }
        }
        catch (CliArgs.UsageException e) {
            System.err.println("TypeWriter: " + e.getMessage());
            System.exit(2);
        }
        catch (Exception e) {
            e.printStackTrace();
            // Last, so that a caller showing the tail of stderr shows this line.
            System.err.println("TypeWriter failed: " + CliArgs.describe(e));
            System.exit(1);
        }
    }

    // ---------------------------------------------------------------- cache mode

    /**
     * Writes keys {@code 0..n-1}; {@code arrayLength} (or -1: {@code 3 * key}) and {@code misfitKey} (or -1)
     * as {@code --array-length} and {@code --misfit-key} describe.
     */
    private static List<Map<String, Object>> writeCache(IgniteClient client, String cacheName, int n,
        boolean verify, int arrayLength, int misfitKey) {
        Map<String, Integer> enumValues = new LinkedHashMap<>();
        for (int i = 0; i < ENUM_NAMES.length; i++)
            enumValues.put(ENUM_NAMES[i], i);
        client.binary().registerEnum(ENUM_TYPE, enumValues);

        ClientCache<Integer, BinaryObject> cache =
            client.<Integer, BinaryObject>getOrCreateCache(cacheName).withKeepBinary();
        List<SourceObject> sources = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            int len = arrayLength < 0 ? k * 3 : k == misfitKey ? arrayLength - 1 : arrayLength;
            SourceObject src = allTypes(k, len);
            sources.add(src);
            cache.put(k, build(client, src));
        }
        BinaryType meta = n > 0 ? client.binary().type(TYPE_NAME) : null;
        List<Map<String, Object>> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            Map<String, Object> expected = record(k, sources.get(k), meta);
            if (verify)
                verify(cacheName, k, expected, cache.get(k));
            out.add(expected);
        }
        return out;
    }

    /**
     * The AllTypes value of key k. Scalars cycle through tables of edge values (minimum,
     * maximum, zero, non-ASCII, pre-1970 dates...), arrays are k-dependent, the primitive ones
     * {@code len} elements long (the writer's default: {@code 3 * k}, empty for k = 0),
     * {@code f_nullable_long} is null for odd keys, and {@code f_optional} exists only for even
     * keys (so the type has two schemas).
     */
    static SourceObject allTypes(int k, int len) {
        int c = k % 5;
        LinkedHashMap<String, Object> f = new LinkedHashMap<>();
        f.put("f_byte", new byte[] {Byte.MIN_VALUE, -1, 0, 1, Byte.MAX_VALUE}[c]);
        f.put("f_short", new short[] {Short.MIN_VALUE, -2, 0, 300, Short.MAX_VALUE}[(c + 1) % 5]);
        f.put("f_int", new int[] {Integer.MIN_VALUE, -3, 0, 70_000, Integer.MAX_VALUE}[(c + 2) % 5]);
        f.put("f_long", new long[] {Long.MIN_VALUE, -4, 0, 1L << 53 | 1, Long.MAX_VALUE}[(c + 3) % 5]);
        f.put("f_float", new float[] {-1.5f, 0.1f, Float.MAX_VALUE, Float.MIN_VALUE, 3.14159f}[c]);
        f.put("f_double", new double[] {-2.5, 0.1, Double.MAX_VALUE, Double.MIN_VALUE, -1e-300}[c]);
        f.put("f_char", new char[] {'A', '\u00e9', '\u0416', '\u4e2d', '\u0000'}[c]);
        f.put("f_bool", k % 2 == 0);
        f.put("f_string", k == 0 ? "" : new String[] {"plain ascii", "h\u00e9llo w\u00f6rld",
            "\u65e5\u672c\u8a9e", "emoji \ud83d\ude00 and tab\t", "quote \" backslash \\"}[c] + " #" + k);
        f.put("f_uuid", new UUID(0x0123456789abcdefL * (k + 1), -1L - k));
        f.put("f_date", new Date(DATES_MS[c] + k / 5 * 86_400_000L));
        f.put("f_timestamp", timestamp(k));
        f.put("f_time", new Time(TIMES_MS[c]));
        f.put("f_decimal_pos", new BigDecimal(new String[] {"123.45", "0.001", "98765432109876543210.123456789",
            "1E+5", "7"}[c]));
        f.put("f_decimal_neg", new BigDecimal(new String[] {"-123.45", "-0.000001",
            "-98765432109876543210987654321", "-1E+3", "-1"}[c]));
        f.put("f_decimal_large_scale", new BigDecimal(new String[] {"1.000000000000000000000000000000000000001",
            "0E-30", "3.14159265358979323846264338327950288419716939937510",
            "-2.718281828459045235360287471352662497757E-40", "123456789.123456789012345678901234567890"}[c]));
        f.put("f_enum", new EnumValue(ENUM_TYPE, k % 3, ENUM_NAMES[k % 3]));

        byte[] bytes = new byte[len];
        short[] shorts = new short[len];
        int[] ints = new int[len];
        long[] longs = new long[len];
        float[] floats = new float[len];
        double[] doubles = new double[len];
        char[] chars = new char[len];
        boolean[] bools = new boolean[len];
        for (int i = 0; i < len; i++) {
            bytes[i] = (byte)(i * 37 + k * 11 - 100);
            shorts[i] = (short)(i * 3001 - k * 7);
            ints[i] = i * 1_000_003 - k;
            longs[i] = i == 0 ? Long.MIN_VALUE : (long)i * 1_000_000_007L * 1_000_003L - k;
            floats[i] = i / 4.0f - k + 0.1f * i;
            doubles[i] = i * 0.1 - k;
            chars[i] = (char)(i % 2 == 0 ? 'a' + i : 0x400 + i * 7 + k);
            bools[i] = (i + k) % 3 == 0;
        }
        f.put("f_bytes", bytes);
        f.put("f_shorts", shorts);
        f.put("f_ints", ints);
        f.put("f_longs", longs);
        f.put("f_floats", floats);
        f.put("f_doubles", doubles);
        f.put("f_chars", chars);
        f.put("f_bools", bools);

        f.put("f_strings", k == 0 ? new String[0] : new String[] {"s" + k, null, "\u00fc\u00df " + k, ""});
        f.put("f_uuids", k == 0 ? new UUID[0] : new UUID[] {new UUID(k, -k), k % 2 == 1 ? null : new UUID(-1L, 0)});
        f.put("f_dates", new Date[] {new Date(DATES_MS[c]), new Date(DATES_MS[(c + 2) % 5] + k)});
        f.put("f_timestamps", new Timestamp[] {timestamp(k + 1), null, timestamp(k + 3)});
        f.put("f_times", new Time[] {new Time(TIMES_MS[(c + 1) % 5]), new Time(k * 1000L)});
        f.put("f_decimals", new BigDecimal[] {new BigDecimal("1.5").add(BigDecimal.valueOf(k)), null,
            new BigDecimal("-0.000000000000000000001").movePointLeft(k)});
        f.put("f_objects", new Object[] {k, "str " + k, k * 0.5, null, (long)k << 40, new UUID(7, k), k % 2 == 0,
            (byte)-k, 'z', inner(k + 100), new Timestamp(1_000L * k)});
        ArrayList<Object> list = new ArrayList<>();
        list.add(k);
        list.add("item " + k);
        list.add((long)k * -1_000_000_000_000L);
        list.add(null);
        list.add(k + 0.25);
        list.add(new Date(DATES_MS[c]));
        f.put("f_list", list);
        LinkedHashMap<Object, Object> map = new LinkedHashMap<>();
        map.put("a", k);
        map.put("b", "x" + k);
        map.put(3, 2.5 * k);
        map.put("uuid", new UUID(k, k));
        map.put("none", null);
        f.put("f_map", map);
        f.put("f_inner", inner(k));
        f.put("f_inner_null", new TypedNull(Object.class));
        f.put("f_null_string", new TypedNull(String.class));
        f.put("f_null_uuid", new TypedNull(UUID.class));
        f.put("f_null_ints", new TypedNull(int[].class));
        f.put("f_null_decimal", new TypedNull(BigDecimal.class));
        f.put("f_nullable_long", k % 2 == 0 ? (Object)(k * 1_000_000_000_000L) : new TypedNull(Long.class));
        if (k % 2 == 0)
            f.put("f_optional", k);
        return new SourceObject(TYPE_NAME, f);
    }

    private static final long[] DATES_MS = {
        0L,                      // 1970-01-01T00:00:00Z
        -31_536_000_000L,        // 1969-01-01T00:00:00Z
        1_700_000_000_123L,      // 2023-11-14T22:13:20.123Z
        253_402_300_799_999L,    // 9999-12-31T23:59:59.999Z
        -62_135_596_800_000L,    // 0001-01-01T00:00:00Z (proleptic Gregorian)
    };

    private static final long[] TIMES_MS = {0L, 1L, 45_296_789L, 86_399_999L, 3_600_000L};

    /** A timestamp whose sub-millisecond nanos are never 0 (Ignite stores them separately). */
    static Timestamp timestamp(int k) {
        long[] seconds = {1_700_000_000L, -1L, 0L, 4_102_444_800L, -2_208_988_800L};
        int[] nanos = {123_456_789, 1, 999_999_999, 500_000, 7_000_001};
        Timestamp ts = new Timestamp((seconds[k % 5] + k / 5) * 1000L);
        ts.setNanos(nanos[k % 5]);
        return ts;
    }

    static SourceObject inner(int k) {
        LinkedHashMap<String, Object> f = new LinkedHashMap<>();
        f.put("id", (long)k * 1000);
        f.put("label", "inner-" + k);
        f.put("ratio", k / 4.0);
        return new SourceObject(INNER_TYPE, f);
    }

    /** Builds the binary object for a source description (nested objects and enums included). */
    static BinaryObject build(IgniteClient client, SourceObject src) {
        BinaryObjectBuilder b = client.binary().builder(src.typeName());
        for (Map.Entry<String, Object> e : src.fields().entrySet()) {
            Object v = e.getValue();
            if (v instanceof TypedNull)
                b.setField(e.getKey(), null, ((TypedNull)v).type());
            else
                b.setField(e.getKey(), toBinary(client, v));
        }
        return b.build();
    }

    private static Object toBinary(IgniteClient client, Object v) {
        if (v instanceof SourceObject)
            return build(client, (SourceObject)v);
        if (v instanceof EnumValue)
            return client.binary().buildEnum(((EnumValue)v).typeName(), ((EnumValue)v).ordinal());
        if (v instanceof Object[] && v.getClass() == Object[].class) {
            Object[] a = ((Object[])v).clone();
            for (int i = 0; i < a.length; i++)
                a[i] = toBinary(client, a[i]);
            return a;
        }
        if (v instanceof List) {
            ArrayList<Object> out = new ArrayList<>();
            for (Object o : (List<?>)v)
                out.add(toBinary(client, o));
            return out;
        }
        if (v instanceof Map) {
            LinkedHashMap<Object, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>)v).entrySet())
                out.put(toBinary(client, e.getKey()), toBinary(client, e.getValue()));
            return out;
        }
        return v;
    }

    // ---------------------------------------------------------------- SQL mode

    /** Column name, declared SQL type, value of row k (nulls are applied on top). */
    private record SqlColumn(String name, String sqlType, java.util.function.IntFunction<Object> value) {
    }

    /** One column per SQL type; values vary with the row and include edge values. */
    static final List<SqlColumn> SQL_COLUMNS = List.of(
        new SqlColumn("C_TINYINT", "TINYINT", k -> new byte[] {Byte.MIN_VALUE, -1, 0, 1, Byte.MAX_VALUE}[k % 5]),
        new SqlColumn("C_SMALLINT", "SMALLINT", k -> (short)(k * 1000 - 2000)),
        new SqlColumn("C_INT", "INT", k -> new int[] {Integer.MIN_VALUE, -3, 0, 70_000, Integer.MAX_VALUE}[k % 5]),
        new SqlColumn("C_BIGINT", "BIGINT", k -> new long[] {Long.MIN_VALUE, -4, 0, 1L << 53 | 1, Long.MAX_VALUE}[k % 5]),
        new SqlColumn("C_REAL", "REAL", k -> 0.1f + k),
        new SqlColumn("C_DOUBLE", "DOUBLE", k -> -0.1 * k + 1e-300),
        new SqlColumn("C_BOOLEAN", "BOOLEAN", k -> k % 2 == 0),
        new SqlColumn("C_VARCHAR", "VARCHAR", k -> "varchar \u00e9\u65e5 #" + k),
        new SqlColumn("C_CHAR", "CHAR(8)", k -> "ch" + k),
        new SqlColumn("C_UUID", "UUID", k -> new UUID(0x0123456789abcdefL * (k + 1), -1L - k)),
        // A java.util.Date at local midnight: java.sql.Date is no binary type (the thin client
        // would marshal it with the OptimizedMarshaller); H2 keeps the local date part.
        new SqlColumn("C_DATE", "DATE", k -> Date.from(LocalDate.of(2024, 1, 15).plusDays(40L * k)
            .atStartOfDay(java.time.ZoneId.systemDefault()).toInstant())),
        new SqlColumn("C_TIME", "TIME", k -> Time.valueOf(LocalTime.of(k * 4 % 24, 34, 56))),
        new SqlColumn("C_TIMESTAMP", "TIMESTAMP", k -> Timestamp.valueOf(
            LocalDateTime.of(2024, 2, 29, 12, 34, 56, 123_456_789).plusDays(k).plusNanos(k * 1001L))),
        new SqlColumn("C_DECIMAL", "DECIMAL(20,5)", k -> new BigDecimal("12345.6789").multiply(
            BigDecimal.valueOf(k % 2 == 0 ? k : -k)).setScale(5)),
        new SqlColumn("C_BINARY", "BINARY(4)", k -> new byte[] {(byte)k, (byte)-k, 0x7f, (byte)0x80}),
        new SqlColumn("C_VARBINARY", "VARBINARY", k -> {
            byte[] b = new byte[k * 2];
            for (int i = 0; i < b.length; i++)
                b[i] = (byte)(i * 31 - k);
            return b;
        }),
        new SqlColumn("C_NULL", "INT", k -> null));

    private static List<Map<String, Object>> writeSql(IgniteClient client, String cacheName, String table,
        String valueType, int n, boolean verify) {
        if (!table.matches("[A-Za-z_][A-Za-z0-9_]*"))
            throw new CliArgs.UsageException("table name must be an SQL identifier, got '" + table
                + "' (pass --table)");
        StringBuilder ddl = new StringBuilder("CREATE TABLE IF NOT EXISTS ").append(table).append(" (ID INT PRIMARY KEY");
        StringBuilder insert = new StringBuilder("INSERT INTO ").append(table).append(" (ID");
        for (SqlColumn c : SQL_COLUMNS) {
            ddl.append(", ").append(c.name()).append(' ').append(c.sqlType());
            insert.append(", ").append(c.name());
        }
        ddl.append(") WITH \"CACHE_NAME=").append(cacheName).append(",VALUE_TYPE=").append(valueType).append('"');
        insert.append(") VALUES (?").append(", ?".repeat(SQL_COLUMNS.size())).append(')');
        client.query(new SqlFieldsQuery(ddl.toString()).setSchema("PUBLIC")).getAll();
        // Rows of an earlier run would make INSERT fail with a duplicate key: start clean.
        client.query(new SqlFieldsQuery("DELETE FROM " + table + " WHERE ID >= 0 AND ID < ?")
            .setSchema("PUBLIC").setArgs(n)).getAll();

        List<LinkedHashMap<String, Object>> rows = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            LinkedHashMap<String, Object> row = new LinkedHashMap<>();
            Object[] params = new Object[SQL_COLUMNS.size() + 1];
            params[0] = k;
            for (int j = 0; j < SQL_COLUMNS.size(); j++) {
                SqlColumn c = SQL_COLUMNS.get(j);
                Object v = j % 5 == k % 5 ? null : c.value().apply(k);
                row.put(c.name(), v);
                params[j + 1] = v;
            }
            client.query(new SqlFieldsQuery(insert.toString()).setSchema("PUBLIC").setArgs(params)).getAll();
            rows.add(row);
        }

        ClientCache<Integer, BinaryObject> cache = client.<Integer, BinaryObject>cache(cacheName).withKeepBinary();
        BinaryType meta = n > 0 ? client.binary().type(valueType) : null;
        Map<String, Object> sqlTypes = new LinkedHashMap<>();
        sqlTypes.put("ID", "INT");
        for (SqlColumn c : SQL_COLUMNS)
            sqlTypes.put(c.name(), c.sqlType());
        List<Map<String, Object>> out = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            Map<String, Object> expected = record(k, new SourceObject(valueType, rows.get(k)), meta);
            expected.put("table", "PUBLIC." + table.toUpperCase(java.util.Locale.ROOT));
            expected.put("sql_types", sqlTypes);
            if (verify)
                verify(cacheName, k, expected, cache.get(k));
            out.add(expected);
        }
        return out;
    }

    // ---------------------------------------------------------------- output and self-check

    @SuppressWarnings("unchecked")
    private static Map<String, Object> record(int key, SourceObject src, BinaryType meta) {
        Map<String, Object> obj = (Map<String, Object>)ExpectedJson.plain(src);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("key", (long)key);
        r.put("type_name", obj.get("type_name"));
        r.put("fields", obj.get("fields"));
        Map<String, Object> types = new LinkedHashMap<>();
        for (String f : src.fields().keySet())
            types.put(f, meta == null ? null : meta.fieldTypeName(f));
        r.put("types", types);
        return r;
    }

    /** Fails when what Ignite's client reads back differs from what was written. */
    private static void verify(String cache, int key, Map<String, Object> expected, BinaryObject actual) {
        if (actual == null)
            throw new IllegalStateException("cache " + cache + ": key " + key + " was written but reads back null");
        Object got = ExpectedJson.plain(actual);
        Map<String, Object> want = new LinkedHashMap<>();
        want.put("type_name", expected.get("type_name"));
        want.put("fields", expected.get("fields"));
        if (!want.equals(got)) {
            throw new IllegalStateException("cache " + cache + ": key " + key + " reads back differently.\n"
                + "  written:   " + Json.write(want) + "\n  read back: " + Json.write(got));
        }
    }
}
