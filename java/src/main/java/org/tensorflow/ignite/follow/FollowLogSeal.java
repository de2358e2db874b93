package org.tensorflow.ignite.follow;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.apache.ignite.Ignite;
import org.apache.ignite.binary.BinaryObject;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.cache.DynamicCacheDescriptor;
import org.tensorflow.ignite.ClusterSecrets;

/**
 * The seal of a follow log's entries: what lets a follower tell an entry the module's writers made
 * from one a thin client wrote into the log cache (Ignite 2 OSS has no authorization: every
 * authenticated user may write every cache, the log caches too).
 *
 * <p>Each entry carries {@code m = HMAC-SHA256(key, "tf-follow-log-1" | logId | p | c | d)}, where
 * {@code d = SHA-256(t | prev | len(k) | k | len(v) | v)} (integers big-endian, t one byte, prev
 * eight, lengths four, -1 for a null {@code v}) -- the fields a follower reads and relies on.
 * {@code w} (which node wrote the entry) is not sealed: it is for diagnostics only.
 * <ul>
 *   <li>the <b>key</b>: 32 random bytes per cluster in Ignite's distributed metastorage
 *   ({@value #KEY_NAME}), which thin clients cannot reach (a {@link SecretKeySpec}: the metastorage
 *   system view prints its class, not its bytes);</li>
 *   <li>the <b>log id</b>: the deployment ids of the followed cache and of its log cache, so that an
 *   entry copied into a recreated cache's log (whose counters start again) does not verify;</li>
 *   <li>(p, c): an entry copied to another partition or counter does not verify.</li>
 * </ul>
 * A follower cannot hold the key, so it sends the service (p, c, d, m) of the entries it is about
 * to deliver or move its position past ({@link FollowLogService#verify}); the writers check an
 * entry already in the log before they leave it in place ({@link FollowLogSetUnlessSealed}).
 */
final class FollowLogSeal {
    /** The metastorage key of the cluster's seal key. */
    static final String KEY_NAME = "tf-ignite.follow-log.seal-key";

    /** Bytes of one entry in a {@link #verify} request: p (4), c (8), d (32), m (32). */
    static final int VERIFY_RECORD = 4 + 8 + 32 + 32;

    private static final byte[] DOMAIN = "tf-follow-log-1".getBytes(StandardCharsets.UTF_8);

    private final SecretKeySpec key;
    private final String id;
    private final byte[] logId;

    FollowLogSeal(SecretKeySpec key, String logId) {
        this.key = key;
        this.id = logId;
        this.logId = logId.getBytes(StandardCharsets.UTF_8);
    }

    /** The log id this seal binds entries to. */
    String logId() {
        return id;
    }

    /** The seal of {@code cache}'s log on this cluster (the log cache must exist). */
    static FollowLogSeal of(Ignite ignite, String cache) {
        return new FollowLogSeal(key(ignite), logId(ignite, cache));
    }

    /** The cluster's seal key, made on first use. */
    static SecretKeySpec key(Ignite ignite) {
        return ClusterSecrets.key(ignite, KEY_NAME, "HmacSHA256", "the follow log's seal key");
    }

    /** The deployment ids of {@code cache} and of its log: "a/b". */
    static String logId(Ignite ignite, String cache) {
        DynamicCacheDescriptor src = ((IgniteEx)ignite).context().cache().cacheDescriptor(cache);
        DynamicCacheDescriptor log = ((IgniteEx)ignite).context().cache()
            .cacheDescriptor(FollowLog.logCacheName(cache));
        if (src == null || log == null)
            throw new IllegalStateException("cache '" + cache + "' or its follow log '" + FollowLog.logCacheName(cache)
                + "' does not exist (yet)");
        return src.deploymentId() + "/" + log.deploymentId();
    }

    /** The digest of the sealed fields of an entry. */
    static byte[] digest(byte t, long prev, byte[] k, byte[] v) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            ByteBuffer head = ByteBuffer.allocate(1 + 8 + 4);
            head.put(t).putLong(prev).putInt(k == null ? -1 : k.length);
            md.update(head.array());
            if (k != null)
                md.update(k);
            md.update(ByteBuffer.allocate(4).putInt(v == null ? -1 : v.length).array());
            if (v != null)
                md.update(v);
            return md.digest();
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is not available: " + e, e);
        }
    }

    /** A MAC instance with this seal's key (instances are not thread-safe: one per call). */
    private Mac mac() {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(key);
            return m;
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available: " + e, e);
        }
    }

    private byte[] mac(Mac m, int p, long c, byte[] digest) {
        m.update(DOMAIN);
        m.update(ByteBuffer.allocate(4).putInt(logId.length).array());
        m.update(logId);
        m.update(ByteBuffer.allocate(4 + 8).putInt(p).putLong(c).array());
        m.update(digest);
        return m.doFinal();
    }

    /** The seal of entry (p, c) with these fields. */
    byte[] seal(int p, long c, byte t, long prev, byte[] k, byte[] v) {
        return mac(mac(), p, c, digest(t, prev, k, v));
    }

    /**
     * Whether {@code entry} (a value found in the log at (p, c)) is a {@value FollowLog#ENTRY_TYPE}
     * whose seal verifies; anything else -- another type, missing or mistyped fields -- is not.
     */
    boolean valid(int p, long c, Object entry) {
        if (!(entry instanceof BinaryObject))
            return false;
        try {
            BinaryObject e = (BinaryObject)entry;
            Object t = e.field("t");
            Object prev = e.field("prev");
            Object k = e.field("k");
            Object v = e.field("v");
            Object m = e.field("m");
            if (!(t instanceof Byte) || !(prev instanceof Long) || !(k instanceof byte[]) || !(m instanceof byte[])
                || (v != null && !(v instanceof byte[])))
                return false;
            byte[] want = seal(p, c, (Byte)t, (Long)prev, (byte[])k, (byte[])v);
            return MessageDigest.isEqual(want, (byte[])m);
        }
        catch (RuntimeException e) {
            return false; // not a binary object of our layout
        }
    }

    /**
     * For each record of {@code batch} ({@link #VERIFY_RECORD} bytes: p, c, d, m), 1 when m is the seal
     * of (p, c, d), else 0.
     */
    byte[] verify(byte[] batch) {
        int n = batch.length / VERIFY_RECORD;
        byte[] out = new byte[n];
        Mac m = mac();
        ByteBuffer in = ByteBuffer.wrap(batch);
        byte[] digest = new byte[32];
        byte[] given = new byte[32];
        for (int i = 0; i < n; i++) {
            int p = in.getInt();
            long c = in.getLong();
            in.get(digest);
            in.get(given);
            out[i] = (byte)(MessageDigest.isEqual(mac(m, p, c, digest), given) ? 1 : 0);
        }
        return out;
    }
}
