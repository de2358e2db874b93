package org.tensorflow.ignite.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteDataStreamer;
import org.apache.ignite.Ignition;
import org.apache.ignite.client.ClientCache;
import org.apache.ignite.client.IgniteClient;

/**
 * The loading references: how Ignite's own Java clients bulk-load rows into a cache.
 *
 * <pre>
 * java $OPENS -cp 'target/tensorflow-ignite-bench.jar:target/lib/*' org.tensorflow.ignite.bench.LoadBench \
 *     --client thin (--host H --port P | --addresses h:p,h:p) [--no-partition-awareness]
 * java $OPENS -cp 'target/tensorflow-ignite-bench.jar:IGNITE_LIBS/*' org.tensorflow.ignite.bench.LoadBench \
 *     --client thick --discovery h:p,h:p --communication-port P --work-dir DIR [--host 127.0.0.1] [--exit-with PID]
 * </pre>
 *
 * <p>{@code --client thin}: the thin client ({@link IgniteClient}) loads with {@code ClientCache.putAll}
 * of {@code BATCH} rows at a time. {@code --client thick}: a client-mode node, configured and joined
 * exactly as {@link ThickClientWriter} does (run it on the servers' own Ignite jars), loads with an
 * {@link IgniteDataStreamer} ({@code addData} per row, {@code close()} flushes; {@code perNodeBufferSize}
 * {@code BUFFER} when &gt; 0, otherwise Ignite's default 512), the way Ignite users bulk-load.
 *
 * <p>The program stays up and takes commands on stdin, one per line, tab-separated, so that one JVM
 * (and its JIT) serves every repetition of a benchmark:
 * <pre>
 * load  CACHE  FILE  ROWS  ROW_BYTES  LABELS(0|1)  BATCH  BUFFER
 * quit
 * </pre>
 * {@code FILE} holds {@code ROWS} little-endian int64 labels when {@code LABELS} is 1, then {@code ROWS x
 * ROW_BYTES} bytes; it is read once (untimed) and kept. The cache must exist (the caller creates it, with
 * the configuration every contender gets). Keys are {@code Long} 0..ROWS-1; values POJOs of
 * {@link MnistRow} ({@code long label, byte[] pixels}) or, without labels, {@link BlobRow} ({@code byte[]
 * data}): binary objects of the same shape as the Python writers'. Timed: from the first row's object
 * being built to the last put acknowledged (the streamer closed).
 *
 * <p>Output: {@code {"ready": true, "client": ..., "start_seconds": ...}} once connected or joined, then
 * per command {@code {"cache", "rows", "bytes", "seconds", "rows_per_s", "mb_per_s", "requests"}}
 * ({@code bytes}: labels x 8 + pixel bytes; {@code requests}: putAll calls, or 0 for the streamer), or
 * {@code {"error": "..."}} when the command failed (the program goes on). Exit status 2: bad command line.
 */
public final class LoadBench {
    private LoadBench() {
    }

    /** An MNIST-shaped row: the value type of a file with labels. */
    public static final class MnistRow {
        long label;
        byte[] pixels;
    }

    /** A row of one byte array: the value type of a file without labels. */
    public static final class BlobRow {
        byte[] data;
    }

    /** A loaded data file. */
    static final class Data {
        final byte[] bytes;
        final int rows;
        final int rowBytes;
        final boolean labels;

        Data(byte[] bytes, int rows, int rowBytes, boolean labels) {
            this.bytes = bytes;
            this.rows = rows;
            this.rowBytes = rowBytes;
            this.labels = labels;
        }

        Object row(int i) {
            int base = labels ? rows * 8 : 0;
            byte[] arr = new byte[rowBytes];
            System.arraycopy(bytes, base + i * rowBytes, arr, 0, rowBytes);
            if (!labels) {
                BlobRow b = new BlobRow();
                b.data = arr;
                return b;
            }
            MnistRow r = new MnistRow();
            r.label = ByteBuffer.wrap(bytes, i * 8, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            r.pixels = arr;
            return r;
        }

        long payload() {
            return (long)rows * rowBytes + (labels ? rows * 8L : 0L);
        }
    }

    /** One way to load: returns the number of requests (putAll calls), 0 when not counted. */
    interface Loader extends AutoCloseable {
        long load(String cache, Data data, int batch, int buffer);

        @Override
        void close();
    }

    public static void main(String[] argv) {
        Set<String> options = new HashSet<>(ClientSettings.OPTIONS);
        options.addAll(Set.of("--client", "--discovery", "--communication-port", "--work-dir", "--exit-with"));
        Loader loader;
        long t0 = System.nanoTime();
        String kind;
        try {
            CliArgs args = CliArgs.parse(argv, options, ClientSettings.FLAGS);
            kind = args.get("--client", "thin");
            if (kind.equals("thin"))
                loader = thin(Ignition.startClient(ClientSettings.configuration(args)));
            else if (kind.equals("thick")) {
                if (args.has("--exit-with"))
                    ThickClientWriter.exitWithOwner(Long.parseLong(args.require("--exit-with")));
                loader = thick(Ignition.start(ThickClientWriter.configuration(args)));
            }
            else
                throw new CliArgs.UsageException("--client must be thin or thick, got " + kind);
        }
        catch (CliArgs.UsageException e) {
            System.err.println("LoadBench: " + e.getMessage());
            System.exit(2);
            return;
        }
        catch (Throwable e) {
            e.printStackTrace();
            System.err.println("LoadBench failed: " + CliArgs.describe(e));
            Runtime.getRuntime().halt(1);
            return;
        }
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("ready", true);
        ready.put("client", kind);
        ready.put("start_seconds", (System.nanoTime() - t0) / 1e9);
        System.out.println(Json.write(ready));
        System.out.flush();
        int status = 0;
        Map<String, Data> files = new HashMap<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                line = line.strip();
                if (line.isEmpty())
                    continue;
                if (line.equals("quit"))
                    break;
                Map<String, Object> r;
                try {
                    r = command(loader, files, line.split("\t"));
                }
                catch (Throwable e) {
                    e.printStackTrace();
                    r = new LinkedHashMap<>();
                    r.put("error", CliArgs.describe(e));
                }
                System.out.println(Json.write(r));
                System.out.flush();
            }
        }
        catch (IOException e) {
            System.err.println("LoadBench failed reading commands: " + e);
            status = 1;
        }
        try {
            loader.close();
        }
        catch (Throwable e) {
            System.err.println("LoadBench: closing the client failed: " + CliArgs.describe(e));
        }
        // halt: a client node may leave non-daemon threads behind.
        Runtime.getRuntime().halt(status);
    }

    private static Map<String, Object> command(Loader loader, Map<String, Data> files, String[] cmd)
        throws IOException {
        if (!cmd[0].equals("load") || cmd.length != 8)
            throw new IllegalArgumentException("expected: load CACHE FILE ROWS ROW_BYTES LABELS BATCH BUFFER "
                + "(tab-separated), got " + String.join(" | ", cmd));
        String cache = cmd[1];
        int rows = Integer.parseInt(cmd[3]);
        int rowBytes = Integer.parseInt(cmd[4]);
        boolean labels = cmd[5].equals("1");
        int batch = Integer.parseInt(cmd[6]);
        int buffer = Integer.parseInt(cmd[7]);
        String key = cmd[2] + "\t" + rows + "\t" + rowBytes + "\t" + labels;
        Data data = files.get(key);
        if (data == null) {
            files.clear(); // one file at a time: a 512 MiB file is enough heap
            byte[] bytes = Files.readAllBytes(Path.of(cmd[2]));
            long want = (long)rows * rowBytes + (labels ? rows * 8L : 0L);
            if (bytes.length != want)
                throw new IllegalArgumentException(cmd[2] + " has " + bytes.length + " bytes, expected " + want);
            data = new Data(bytes, rows, rowBytes, labels);
            files.put(key, data);
        }
        long t0 = System.nanoTime();
        long requests = loader.load(cache, data, batch, buffer);
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("cache", cache);
        r.put("rows", (long)rows);
        r.put("bytes", data.payload());
        r.put("seconds", seconds);
        r.put("rows_per_s", seconds > 0 ? rows / seconds : 0.0);
        r.put("mb_per_s", seconds > 0 ? data.payload() / 1e6 / seconds : 0.0);
        r.put("requests", requests);
        return r;
    }

    /** {@code ClientCache.putAll} of {@code batch} rows at a time. */
    static Loader thin(IgniteClient client) {
        return new Loader() {
            @Override
            public long load(String cacheName, Data data, int batch, int buffer) {
                if (batch <= 0)
                    throw new IllegalArgumentException("batch must be > 0");
                ClientCache<Long, Object> cache = client.cache(cacheName);
                long requests = 0;
                for (int start = 0; start < data.rows; start += batch) {
                    int end = Math.min(data.rows, start + batch);
                    Map<Long, Object> m = new HashMap<>((end - start) * 4 / 3 + 1);
                    for (int i = start; i < end; i++)
                        m.put((long)i, data.row(i));
                    cache.putAll(m);
                    requests++;
                }
                return requests;
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }

    /**
     * Wait (at most 30 s) until this client node knows {@code cacheName}: the cache is created by another
     * client just before the load, and a client node learns of it through discovery a moment later (a
     * streamer opened before that fails with "Cache doesn't exist").
     */
    static void awaitCache(Ignite ignite, String cacheName) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (ignite.cache(cacheName) == null) {
            if (System.nanoTime() > deadline)
                throw new IllegalStateException("cache " + cacheName + " is not known to the thick client 30 s "
                    + "after it was created");
            try {
                Thread.sleep(10);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for cache " + cacheName, e);
            }
        }
    }

    /** An {@link IgniteDataStreamer}: {@code addData} per row, {@code close()} waits for every batch. */
    static Loader thick(Ignite ignite) {
        return new Loader() {
            @Override
            public long load(String cacheName, Data data, int batch, int buffer) {
                awaitCache(ignite, cacheName);
                try (IgniteDataStreamer<Long, Object> streamer = ignite.dataStreamer(cacheName)) {
                    if (buffer > 0)
                        streamer.perNodeBufferSize(buffer);
                    for (int i = 0; i < data.rows; i++)
                        streamer.addData((long)i, data.row(i));
                }
                return 0;
            }

            @Override
            public void close() {
                ignite.close();
            }
        };
    }
}
