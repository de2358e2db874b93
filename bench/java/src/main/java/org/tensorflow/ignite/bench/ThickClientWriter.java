package org.tensorflow.ignite.bench;

import java.math.BigDecimal;
import java.sql.Time;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.IgniteDataStreamer;
import org.apache.ignite.Ignition;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.binary.BinaryType;
import org.apache.ignite.cache.affinity.AffinityKeyMapped;
import org.apache.ignite.cache.query.annotations.QuerySqlField;
import org.apache.ignite.configuration.CacheConfiguration;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.spi.communication.tcp.TcpCommunicationSpi;
import org.apache.ignite.spi.discovery.tcp.TcpDiscoverySpi;
import org.apache.ignite.spi.discovery.tcp.ipfinder.vm.TcpDiscoveryVmIpFinder;

/**
 * Data written the way most Java applications write it: an Ignite <b>thick client</b> (a
 * client-mode node, {@code IgniteConfiguration.setClientMode(true)}) puts plain Java objects
 * (POJOs) into caches, which Ignite's binary marshaller turns into binary objects of type
 * {@code <the class's full name>}.
 *
 * <pre>
 * java $OPENS -cp 'target/tensorflow-ignite-bench.jar:IGNITE_LIBS/*' org.tensorflow.ignite.bench.ThickClientWriter \
 *     --discovery 127.0.0.1:47500..47509 --communication-port P --work-dir DIR --prefix NAME \
 *     [--host 127.0.0.1] [--count N] [--stream-count M] [--array-length L] [--exit-with PID]
 * </pre>
 *
 * <p>Run it on the servers' own Ignite jars (a client node must be of the servers' version).
 * It joins the cluster (a static IP finder on the servers' discovery ports), writes the caches
 * below, reads every entry back with {@code withKeepBinary().get(k)} (a difference fails the
 * run), prints one JSON line per entry and leaves the cluster:
 * <table>
 *   <tr><td>{@code NAME_put}</td><td>{@link Reading} by {@code cache.put}, Long keys 0..N-1</td></tr>
 *   <tr><td>{@code NAME_stream}</td><td>{@link Reading} by an {@code IgniteDataStreamer}, Long keys
 *       0..M-1</td></tr>
 *   <tr><td>{@code NAME_nested}</td><td>{@link Basket} (ArrayList, HashMap, HashSet, an enum and an enum
 *       array, nested POJOs, one object referenced twice) by {@code cache.put}, {@link BasketKey} keys
 *       (id 0..N-1)</td></tr>
 *   <tr><td>{@code NAME_sql}</td><td>{@link Person}, a {@code @QuerySqlField}-annotated POJO
 *       ({@code setIndexedTypes(Long, Person)}: SQL table {@code "NAME_sql".PERSON}), Long keys 0..N-1</td></tr>
 *   <tr><td>{@code NAME_mixed}</td><td>{@link Measure}, whose {@code Number value} holds a Long,
 *       except for key {@link #MIXED_KEY}, a Double</td></tr>
 *   <tr><td>{@code NAME_digits}</td><td>only with {@code --array-length L}: {@link Digit}, fixed-length
 *       primitive arrays of L elements in every entry ({@code float[64]} pixels as an application
 *       writes digits), by {@code cache.putAll}, Long keys 0..M-1</td></tr>
 * </table>
 *
 * <p>Output line, values encoded as {@link ExpectedJson} documents (of the object as Ignite's binary
 * view has it: {@code ignite.binary().toBinary(pojo)}): {@code {"cache": name, "key": k, "type_name":
 * class name, "fields": {...}, "types": {field: Ignite metadata type name}}}; a {@code java.time} value
 * ({@code LocalDate}, {@code LocalTime}, {@code LocalDateTime}, {@code Instant}) is {@code {"java_time": class,
 * "text": toString()}} plus {@code "epoch_day"}, {@code "nano_of_day"}, or {@code "epoch_second"} and
 * {@code "nano"} (a {@code LocalDateTime} taken as UTC); {@code "key"} is a number or, for a POJO key, an
 * object document.
 */
public final class ThickClientWriter {
    static final long MIXED_KEY = 7;

    private ThickClientWriter() {
    }

    /** Grade of a basket: a Java enum field (and an enum array). */
    public enum Grade {
        BRONZE, SILVER, GOLD
    }

    /** Every Java scalar width and the common value classes, as one POJO. */
    public static final class Reading {
        byte b;
        short s;
        int i;
        long l;
        float f;
        double d;
        char c;
        boolean flag;
        Integer boxed;
        String name;
        UUID id;
        Date when;
        Timestamp stamp;
        Time timeOfDay;
        java.sql.Date day;
        LocalDate localDay;
        LocalDateTime localStamp;
        LocalTime localTime;
        Instant instant;
        BigDecimal amount;
        byte[] raw;
        int[] ints;
        long[] longs;
        double[] doubles;
        String[] tags;
    }

    /** A nested POJO, itself holding one. */
    public static final class Address {
        String city;
        int zip;
        Point location;
    }

    /** The innermost POJO. */
    public static final class Point {
        double lat;
        double lon;
    }

    /** A composite key: a POJO whose {@code region} decides the partition. */
    public static final class BasketKey {
        int id;
        @AffinityKeyMapped
        String region;
    }

    /** Java collections, an enum and nested objects. */
    public static final class Basket {
        long owner;
        ArrayList<Integer> counts;
        ArrayList<String> labels;
        HashMap<String, Long> totals;
        HashSet<String> tags;
        Grade grade;
        Grade[] history;
        Address home;
        /** The same object as {@code home} for even keys (the marshaller writes a handle), null for k % 3 == 0. */
        Address work;
    }

    /** A POJO with SQL fields ({@code setIndexedTypes}) and one field SQL does not see. */
    public static final class Person {
        @QuerySqlField(index = true)
        String name;
        @QuerySqlField
        int age;
        @QuerySqlField
        long visits;
        @QuerySqlField
        short rank;
        @QuerySqlField
        byte level;
        @QuerySqlField
        double salary;
        @QuerySqlField
        float score;
        @QuerySqlField
        boolean active;
        @QuerySqlField
        UUID token;
        @QuerySqlField
        Date hired;
        @QuerySqlField
        Timestamp updated;
        @QuerySqlField
        BigDecimal balance;
        @QuerySqlField
        Integer manager;
        @QuerySqlField
        LocalDate birthday;
        @QuerySqlField
        LocalDateTime lastSeen;
        /** Not an SQL field: only a cache scan sees it. */
        Address address;
    }

    /** An image as an application writes one: a label and fixed-length primitive arrays. */
    public static final class Digit {
        long label;
        float[] pixels;
        double[] weights;
        long[] counts;
    }

    /** A field whose declared type ({@code Number}) lets rows hold different wire types. */
    public static final class Measure {
        String label;
        Number value;
    }

    public static void main(String[] argv) {
        Set<String> options = Set.of("--discovery", "--host", "--communication-port", "--work-dir", "--prefix",
            "--count", "--stream-count", "--array-length", "--exit-with");
        try {
            CliArgs args = CliArgs.parse(argv, options, Set.of());
            String prefix = args.require("--prefix");
            int n = args.getInt("--count", 20);
            int m = args.getInt("--stream-count", 500);
            int arrayLength = args.getInt("--array-length", 0);
            if (n < 8 || m < 0)
                throw new CliArgs.UsageException("--count must be >= 8 and --stream-count >= 0");
            if (args.has("--array-length") && arrayLength < 1)
                throw new CliArgs.UsageException("--array-length must be >= 1");
            if (args.has("--exit-with"))
                exitWithOwner(Long.parseLong(args.require("--exit-with")));
            List<Map<String, Object>> records;
            long t0 = System.nanoTime();
            try (Ignite ignite = Ignition.start(configuration(args))) {
                progress("joined the cluster", t0);
                records = write(ignite, prefix, n, m, arrayLength, t0);
                progress("wrote and verified " + records.size() + " entries", t0);
            }
            progress("left the cluster", t0);
            for (Map<String, Object> r : records)
                System.out.println(Json.write(r));
            System.out.flush();
            System.exit(0);
        }
        catch (CliArgs.UsageException e) {
            System.err.println("ThickClientWriter: " + e.getMessage());
            System.exit(2);
        }
        catch (Throwable e) {
            e.printStackTrace();
            // Last, so that a caller showing the tail of stderr shows this line.
            System.err.println("ThickClientWriter failed: " + CliArgs.describe(e));
            // halt: a client node that failed half-way may leave non-daemon threads behind.
            Runtime.getRuntime().halt(1);
        }
    }

    /** One line on stderr: what happened, seconds since {@code t0}. */
    static void progress(String what, long t0) {
        System.err.printf("ThickClientWriter: %s (%.1f s)%n", what, (System.nanoTime() - t0) / 1e9);
    }

    static IgniteConfiguration configuration(CliArgs args) {
        String host = args.get("--host", "127.0.0.1");
        IgniteConfiguration cfg = new IgniteConfiguration();
        cfg.setIgniteInstanceName("thick-client-writer");
        cfg.setClientMode(true);
        cfg.setLocalHost(host);
        cfg.setWorkDirectory(args.require("--work-dir"));
        cfg.setPeerClassLoadingEnabled(false);
        cfg.setMetricsLogFrequency(0);

        TcpDiscoveryVmIpFinder finder = new TcpDiscoveryVmIpFinder();
        finder.setAddresses(List.of(args.require("--discovery").split(",")));
        TcpDiscoverySpi disco = new TcpDiscoverySpi();
        disco.setIpFinder(finder);
        disco.setLocalAddress(host);
        // Fail instead of waiting forever for servers that are not there.
        disco.setJoinTimeout(60_000);
        cfg.setDiscoverySpi(disco);

        TcpCommunicationSpi comm = new TcpCommunicationSpi();
        comm.setLocalAddress(host);
        comm.setLocalPort(args.getInt("--communication-port", 47100));
        comm.setLocalPortRange(0);
        cfg.setCommunicationSpi(comm);
        return cfg;
    }

    /** Halts this JVM when process {@code pid} ends (a killed test run leaves no client behind). */
    static void exitWithOwner(long pid) {
        Optional<ProcessHandle> owner = ProcessHandle.of(pid);
        if (owner.isEmpty() || !owner.get().isAlive())
            throw new IllegalStateException("owner process " + pid + " is not running");
        owner.get().onExit().thenRun(() -> Runtime.getRuntime().halt(3));
    }

    /** Writes and verifies the caches of the class comment; {@code arrayLength} 0: no {@code _digits} cache. */
    static List<Map<String, Object>> write(Ignite ignite, String prefix, int n, int m, int arrayLength, long t0) {
        CacheConfiguration<Long, Person> sqlCfg = new CacheConfiguration<>(prefix + "_sql");
        sqlCfg.setIndexedTypes(Long.class, Person.class);
        @SuppressWarnings("rawtypes") // getOrCreateCaches takes raw configurations
        List<CacheConfiguration> configs = new ArrayList<>(List.of(new CacheConfiguration<>(prefix + "_put"),
            new CacheConfiguration<>(prefix + "_stream"), new CacheConfiguration<>(prefix + "_nested"), sqlCfg,
            new CacheConfiguration<>(prefix + "_mixed")));
        if (arrayLength > 0)
            configs.add(new CacheConfiguration<>(prefix + "_digits"));
        // One partition map exchange for all the caches instead of one each.
        ignite.getOrCreateCaches(configs);
        progress("created the caches", t0);
        List<Map<String, Object>> out = new ArrayList<>();

        IgniteCache<Long, Reading> put = ignite.cache(prefix + "_put");
        Map<Long, Object> written = new LinkedHashMap<>();
        for (long k = 0; k < n; k++) {
            Reading r = reading((int)k);
            put.put(k, r);
            written.put(k, r);
        }
        progress("wrote " + put.getName(), t0);
        out.addAll(records(ignite, put.getName(), written));

        written = new LinkedHashMap<>();
        try (IgniteDataStreamer<Long, Reading> streamer = ignite.dataStreamer(prefix + "_stream")) {
            streamer.perNodeBufferSize(128);
            for (long k = 0; k < m; k++) {
                Reading r = reading((int)k);
                streamer.addData(k, r);
                written.put(k, r);
            }
        }
        progress("wrote " + prefix + "_stream", t0);
        out.addAll(records(ignite, prefix + "_stream", written));
        progress("verified " + prefix + "_stream", t0);

        IgniteCache<BasketKey, Basket> baskets = ignite.cache(prefix + "_nested");
        Map<BasketKey, Object> writtenBaskets = new LinkedHashMap<>();
        for (int k = 0; k < n; k++) {
            BasketKey key = new BasketKey();
            key.id = k;
            key.region = "region-" + k % 3;
            Basket b = basket(k);
            baskets.put(key, b);
            writtenBaskets.put(key, b);
        }
        progress("wrote " + baskets.getName(), t0);
        out.addAll(records(ignite, baskets.getName(), writtenBaskets));

        IgniteCache<Long, Person> people = ignite.cache(prefix + "_sql");
        written = new LinkedHashMap<>();
        for (long k = 0; k < n; k++) {
            Person p = person((int)k);
            people.put(k, p);
            written.put(k, p);
        }
        progress("wrote " + people.getName(), t0);
        out.addAll(records(ignite, people.getName(), written));

        IgniteCache<Long, Measure> mixed = ignite.cache(prefix + "_mixed");
        written = new LinkedHashMap<>();
        for (long k = 0; k < n; k++) {
            Measure x = new Measure();
            x.label = "m" + k;
            x.value = k == MIXED_KEY ? (Number)(k + 0.5) : (Number)(k * 1_000_000_007L);
            mixed.put(k, x);
            written.put(k, x);
        }
        progress("wrote " + mixed.getName(), t0);
        out.addAll(records(ignite, mixed.getName(), written));

        if (arrayLength > 0) {
            IgniteCache<Long, Digit> digits = ignite.cache(prefix + "_digits");
            Map<Long, Digit> batch = new LinkedHashMap<>();
            for (long k = 0; k < m; k++)
                batch.put(k, digit((int)k, arrayLength));
            digits.putAll(batch);
            progress("wrote " + digits.getName(), t0);
            out.addAll(records(ignite, digits.getName(), new LinkedHashMap<Long, Object>(batch)));
        }
        return out;
    }

    // ------------------------------------------------------------------ values

    private static final long[] DATES_MS = {
        0L,                      // 1970-01-01T00:00:00Z
        -31_536_000_000L,        // 1969-01-01T00:00:00Z
        1_700_000_000_123L,      // 2023-11-14T22:13:20.123Z
        253_402_300_799_999L,    // 9999-12-31T23:59:59.999Z
        -62_135_596_800_000L,    // 0001-01-01T00:00:00Z (proleptic Gregorian)
    };

    static Reading reading(int k) {
        int c = k % 5;
        Reading r = new Reading();
        r.b = new byte[] {Byte.MIN_VALUE, -1, 0, 1, Byte.MAX_VALUE}[c];
        r.s = new short[] {Short.MIN_VALUE, -2, 0, 300, Short.MAX_VALUE}[(c + 1) % 5];
        r.i = new int[] {Integer.MIN_VALUE, -3, 0, 70_000, Integer.MAX_VALUE}[(c + 2) % 5];
        r.l = new long[] {Long.MIN_VALUE, -4, 0, 1L << 53 | 1, Long.MAX_VALUE}[(c + 3) % 5] + (c == 2 ? k : 0);
        r.f = new float[] {-1.5f, 0.1f, Float.MAX_VALUE, Float.MIN_VALUE, 3.14159f}[c];
        r.d = new double[] {-2.5, 0.1, Double.MAX_VALUE, Double.MIN_VALUE, -1e-300}[c] + (c == 1 ? k : 0);
        r.c = new char[] {'A', '\u00e9', '\u0416', '\u4e2d', '\u0000'}[c];
        r.flag = k % 2 == 0;
        r.boxed = k % 2 == 1 ? null : k * -3;
        r.name = k == 0 ? "" : new String[] {"plain", "h\u00e9llo", "\u65e5\u672c\u8a9e", "emoji \ud83d\ude00",
            "quote \" \\"}[c] + " #" + k;
        r.id = k % 7 == 3 ? null : new UUID(0x0123456789abcdefL * (k + 1), -1L - k);
        r.when = new Date(DATES_MS[c] + k / 5 * 86_400_000L);
        r.stamp = new Timestamp((new long[] {1_700_000_000L, -1L, 0L, 4_102_444_800L, -2_208_988_800L}[c] + k) * 1000L);
        r.stamp.setNanos(new int[] {123_456_789, 1, 999_999_999, 500_000, 7_000_001}[c]);
        r.timeOfDay = new Time(new long[] {0L, 1L, 45_296_789L, 86_399_999L, 3_600_000L}[c]);
        r.day = new java.sql.Date((k - 3L) * 86_400_000L);
        r.localDay = LocalDate.of(2024, 2, 29).plusDays(k * 37L - 100);
        r.localStamp = k % 5 == 4 ? null : LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_999).plusSeconds(k * 86_399L)
            .plusNanos(new long[] {0, 1, 1_000, 1_000_000, 0}[k % 5]);
        r.localTime = LocalTime.of(k % 24, k * 7 % 60, k % 3 == 0 ? 0 : k % 60, k % 2 == 0 ? 0 : k % 1000 * 1_000_000);
        r.instant = Instant.ofEpochSecond(-86_400L * 365 * 30 + 12_345_678L * k, k * 1_000_003L % 1_000_000_000);
        r.amount = new BigDecimal(new String[] {"123.45", "-0.001", "98765432109876543210.123456789", "1E+5",
            "0"}[c]).add(BigDecimal.valueOf(k));
        r.raw = new byte[k % 4 * 3];
        for (int j = 0; j < r.raw.length; j++)
            r.raw[j] = (byte)(j * 37 + k * 11 - 100);
        r.ints = new int[k % 3 + 1];
        for (int j = 0; j < r.ints.length; j++)
            r.ints[j] = j * 1_000_003 - k;
        r.longs = k % 6 == 5 ? null : new long[] {Long.MIN_VALUE + k, k};
        r.doubles = new double[k % 5];
        for (int j = 0; j < r.doubles.length; j++)
            r.doubles[j] = j * 0.1 - k;
        r.tags = k % 4 == 0 ? new String[0] : new String[] {"t" + k, "\u00fc" + k};
        return r;
    }

    /** Digit k: arrays of {@code len} k-dependent values (pixels in [0, 1), like scaled grey levels). */
    static Digit digit(int k, int len) {
        Digit d = new Digit();
        d.label = k % 10;
        d.pixels = new float[len];
        d.weights = new double[len];
        d.counts = new long[len];
        for (int j = 0; j < len; j++) {
            d.pixels[j] = (k * 7 + j) % 17 / 16.0f;
            d.weights[j] = j * 0.25 - k / 3.0;
            d.counts[j] = (long)k * 1_000_000_007L - j;
        }
        return d;
    }

    static Basket basket(int k) {
        Basket b = new Basket();
        b.owner = k * 1_000_000_000_000L;
        b.counts = new ArrayList<>();
        for (int j = 0; j < k % 4; j++)
            b.counts.add(j * 100 - k);
        b.labels = k % 5 == 4 ? null : new ArrayList<>(List.of("l" + k, "caf\u00e9"));
        b.totals = new HashMap<>();
        for (int j = 0; j < k % 3; j++)
            b.totals.put("key" + j, (long)j * k - 5);
        b.tags = new HashSet<>(List.of("x" + k % 2, "y"));
        b.grade = k % 4 == 3 ? null : Grade.values()[k % 3];
        b.history = new Grade[] {Grade.GOLD, Grade.values()[k % 3]};
        b.home = new Address();
        b.home.city = "city-" + k;
        b.home.zip = 10_000 + k;
        b.home.location = new Point();
        b.home.location.lat = 45.0 + k / 8.0;
        b.home.location.lon = -73.5 - k;
        if (k % 3 == 0)
            b.work = null;
        else if (k % 2 == 0)
            b.work = b.home;
        else {
            b.work = new Address();
            b.work.city = "office-" + k;
            b.work.zip = 20_000 + k;
            b.work.location = null;
        }
        return b;
    }

    static Person person(int k) {
        Person p = new Person();
        p.name = "person " + k + (k % 3 == 0 ? " \u00e9" : "");
        p.age = 20 + k;
        p.visits = (long)k << 36;
        p.rank = (short)(k * 111 - 1000);
        p.level = (byte)(k * 13 - 128);
        p.salary = 1000.25 * k;
        p.score = k / 3.0f;
        p.active = k % 2 == 1;
        p.token = new UUID(k, ~k);
        // The year-9999 and year-1 dates exactly (SQL reads them as timestamps, beyond int64 nanoseconds).
        p.hired = new Date(DATES_MS[k % 5] + (k % 5 < 3 ? 60_000L * k : 0));
        p.updated = new Timestamp(1_700_000_000_000L + 1000L * k);
        p.updated.setNanos(k * 1001 % 1_000_000_000);
        p.balance = new BigDecimal("1234.5678").multiply(BigDecimal.valueOf(k - 5));
        p.manager = k % 4 == 0 ? null : k / 4;
        p.birthday = LocalDate.of(1990 - k, 1 + k % 12, 1 + k % 28);
        p.lastSeen = LocalDateTime.of(2024, 5, 6, 7, 8, 9, k * 1_000_001);
        p.address = new Address();
        p.address.city = "p-city-" + k;
        p.address.zip = k;
        if (k % 2 == 0) {
            p.address.location = new Point();
            p.address.location.lat = -k;
            p.address.location.lon = k / 16.0;
        }
        return p;
    }

    // ---------------------------------------------------------------- output and self-check

    /** Expected records of what was written to {@code cacheName}, checked against a read-back. */
    static <K> List<Map<String, Object>> records(Ignite ignite, String cacheName, Map<K, Object> written) {
        IgniteCache<K, BinaryObject> binary = ignite.<K, Object>cache(cacheName).withKeepBinary();
        // One round trip for plain keys (POJO keys come back as binary objects: fetched one by one).
        Map<K, BinaryObject> numbered = written.keySet().iterator().next() instanceof Number
            ? binary.getAll(written.keySet()) : null;
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<K, Object> e : written.entrySet()) {
            BinaryObject expected = ignite.binary().toBinary(e.getValue());
            Object want = plain(expected);
            BinaryObject actual = numbered != null ? numbered.get(e.getKey()) : binary.get(e.getKey());
            if (actual == null)
                throw new IllegalStateException("cache " + cacheName + ": key " + e.getKey() + " reads back null");
            Object got = plain(actual);
            if (!want.equals(got))
                throw new IllegalStateException("cache " + cacheName + ": key " + e.getKey()
                    + " reads back differently.\n  written:   " + Json.write(want) + "\n  read back: " + Json.write(got));
            @SuppressWarnings("unchecked")
            Map<String, Object> obj = (Map<String, Object>)want;
            BinaryType meta = expected.type();
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("cache", cacheName);
            r.put("key", e.getKey() instanceof Number ? (Object)((Number)e.getKey()).longValue()
                : plain(ignite.binary().toBinary(e.getKey())));
            r.put("type_name", obj.get("type_name"));
            r.put("fields", obj.get("fields"));
            Map<String, Object> types = new LinkedHashMap<>();
            for (String f : meta.fieldNames())
                types.put(f, meta.fieldTypeName(f));
            r.put("types", types);
            out.add(r);
        }
        return out;
    }

    /** {@link ExpectedJson#plain}, plus {@code java.time.LocalDate} (not an Ignite binary type). */
    static Object plain(Object v) {
        if (v instanceof java.time.temporal.Temporal) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("java_time", v.getClass().getName());
            m.put("text", v.toString());
            if (v instanceof LocalDate)
                m.put("epoch_day", ((LocalDate)v).toEpochDay());
            else if (v instanceof LocalTime)
                m.put("nano_of_day", ((LocalTime)v).toNanoOfDay());
            else if (v instanceof LocalDateTime) {
                m.put("epoch_second", ((LocalDateTime)v).toEpochSecond(java.time.ZoneOffset.UTC));
                m.put("nano", (long)((LocalDateTime)v).getNano());
            }
            else if (v instanceof Instant) {
                m.put("epoch_second", ((Instant)v).getEpochSecond());
                m.put("nano", (long)((Instant)v).getNano());
            }
            else
                throw new IllegalArgumentException("no JSON encoding for " + v.getClass().getName());
            return m;
        }
        if (v instanceof BinaryObject && !((BinaryObject)v).type().isEnum()) {
            BinaryObject bo = (BinaryObject)v;
            Map<String, Object> fields = new LinkedHashMap<>();
            for (String name : bo.type().fieldNames()) {
                if (bo.hasField(name))
                    fields.put(name, plain(bo.field(name)));
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type_name", bo.type().typeName());
            m.put("fields", fields);
            return m;
        }
        return ExpectedJson.plain(v);
    }
}
