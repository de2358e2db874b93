package org.tensorflow.ignite.launcher;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipInputStream;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCache;

/**
 * A job directory as shipped: the zip the client wrote in chunks to the
 * {@link LauncherCaches#FILES} cache. The supervisor checks it when the job is submitted (and
 * records its digest in the job's sealed spec); each node checks the digest again before it
 * unpacks, so chunks replaced in the cache after submission are never run.
 *
 * <p>Hostile archives are refused as a whole: entry names that are absolute or climb out with
 * {@code ..}, names the file system cannot hold, more than {@link LauncherPolicy#MAX_JOB_FILES}
 * entries, and more than the policy's {@code maxJobBytes} zipped or unzipped (counted while
 * inflating, so a zip bomb stops at the limit). Entries are written as regular files only (a
 * symbolic link in the archive becomes a file holding its target's name) into a fresh
 * directory, and a refused archive leaves nothing behind.
 */
final class JobArchive {
    private JobArchive() {
    }

    /** The archive's bytes from the files cache, refusing more than {@code maxBytes}. */
    static byte[] read(Ignite ignite, String job, long chunks, long maxBytes) throws IOException {
        if (chunks <= 0)
            return new byte[0];
        IgniteCache<String, byte[]> cache = ignite.cache(LauncherCaches.FILES);
        if (cache == null)
            throw new IOException("the job files cache " + LauncherCaches.FILES + " does not exist");
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < chunks; i++) {
            Object b = cache.get(LauncherCaches.fileKey(job, i));
            if (!(b instanceof byte[]))
                throw new IOException("chunk " + i + " of the files of job " + job + " is missing");
            byte[] bytes = (byte[])b;
            if (out.size() + (long)bytes.length > maxBytes)
                throw new IOException("the job directory is larger than the launcher's maxJobBytes ("
                    + maxBytes + " bytes) zipped");
            out.write(bytes);
        }
        return out.toByteArray();
    }

    /** Hex SHA-256 of {@code data}. */
    static String sha256(byte[] data) {
        try {
            StringBuilder sb = new StringBuilder();
            for (byte b : MessageDigest.getInstance("SHA-256").digest(data))
                sb.append(String.format("%02x", b));
            return sb.toString();
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Walks the whole archive without writing anything; an {@link IOException} says what is wrong. */
    static void check(byte[] zip, long maxBytes) throws IOException {
        unpack(zip, null, maxBytes);
    }

    /**
     * Unpacks into {@code target} (created; must not exist or be empty). On any refusal the
     * directory is removed again and the {@link IOException} says why.
     */
    static void unzip(byte[] zip, Path target, long maxBytes) throws IOException {
        Files.createDirectories(target);
        try {
            unpack(zip, target.toAbsolutePath().normalize(), maxBytes);
        }
        catch (IOException | RuntimeException e) {
            deleteTree(target);
            throw e;
        }
    }

    private static void unpack(byte[] zip, Path root, long maxBytes) throws IOException {
        if (zip.length == 0)
            return;
        Path base = root != null ? root : Path.of("/job").toAbsolutePath();
        long total = 0;
        int count = 0;
        Set<String> seen = new HashSet<>();
        byte[] buf = new byte[64 * 1024];
        try (ZipInputStream in = new ZipInputStream(new ByteArrayInputStream(zip))) {
            ZipEntry e;
            while ((e = in.getNextEntry()) != null) {
                String name = e.getName();
                if (++count > LauncherPolicy.MAX_JOB_FILES)
                    throw new IOException("the job directory has more than " + LauncherPolicy.MAX_JOB_FILES
                        + " entries");
                Path out;
                try {
                    if (name.isEmpty() || name.startsWith("/") || name.startsWith("\\") || name.indexOf('\0') >= 0)
                        throw new InvalidPathException(name, "absolute or empty");
                    out = base.resolve(name).normalize();
                }
                catch (InvalidPathException ex) {
                    throw new IOException("job file '" + printable(name) + "' is not a relative path");
                }
                if (!out.startsWith(base) || out.equals(base))
                    throw new IOException("job file '" + printable(name) + "' points outside the job directory");
                if (!seen.add(out.toString()))
                    throw new IOException("job file '" + printable(name) + "' appears twice in the archive");
                if (e.isDirectory()) {
                    if (root != null)
                        Files.createDirectories(out);
                    continue;
                }
                OutputStream os = null;
                try {
                    if (root != null) {
                        Files.createDirectories(out.getParent());
                        if (Files.exists(out, LinkOption.NOFOLLOW_LINKS))
                            throw new IOException("job file '" + printable(name) + "' would replace another");
                        os = Files.newOutputStream(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                            LinkOption.NOFOLLOW_LINKS);
                    }
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        total += n;
                        if (total > maxBytes)
                            throw new IOException("the job directory is larger than the launcher's maxJobBytes ("
                                + maxBytes + " bytes) unzipped");
                        if (os != null)
                            os.write(buf, 0, n);
                    }
                }
                finally {
                    if (os != null)
                        os.close();
                }
            }
        }
        catch (ZipException e) {
            throw new IOException("the job directory is not a valid zip archive: " + e.getMessage());
        }
        if (count == 0)
            throw new IOException("the job archive holds no entries (or is not a zip archive)");
    }

    private static String printable(String name) {
        String s = name.length() > 200 ? name.substring(0, 200) + "..." : name;
        return s.replaceAll("[\\p{Cntrl}]", "?");
    }

    /** Deletes {@code dir} and everything under it, never following symbolic links. */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS))
            return;
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            List<Path> paths = new java.util.ArrayList<>();
            walk.forEach(paths::add);
            paths.sort(java.util.Comparator.reverseOrder()); // children before their directory
            for (Path p : paths)
                Files.deleteIfExists(p);
        }
    }
}
