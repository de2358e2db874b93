package org.tensorflow.ignite.launcher;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCheckedException;
import org.apache.ignite.IgniteException;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.metastorage.DistributedMetaStorage;
import org.tensorflow.ignite.ClusterSecrets;

/**
 * What the launcher keeps where thin clients cannot reach it: Ignite's distributed metastorage
 * (internal API, replicated to every server node, persisted with the cluster when persistence
 * is on).
 *
 * <p>Open-source Ignite has no authorization: every authenticated user may read and write every
 * cache, the launcher's too. So the caches hold only what may be shown or lost -- job state,
 * worker records, output -- and the vault holds what decides what runs:
 * <ul>
 *   <li>each job's <b>sealed spec</b>, written when the supervisor accepts the job: submitter,
 *   cache, interpreter, command, environment, the archive's digest. Workers are started from the
 *   spec only; a job record without one (written into the cache by someone else) is refused;</li>
 *   <li>each job's <b>state</b> as the supervisor last decided it ({@link #putState}): state, attempt,
 *   restarts, workers, the stop request. The job record in the cache is a view of it, restored when
 *   a client changes it; a finished job stays finished;</li>
 *   <li>the <b>output key</b>, an AES key with which nodes encrypt worker output before it goes to
 *   the logs cache, so that only the supervisor -- after checking that the caller submitted the
 *   job or is an admin -- can hand it out.</li>
 * </ul>
 */
final class LauncherVault {
    private LauncherVault() {
    }

    static final String SPEC_PREFIX = "tf-ignite.launcher.job.";
    static final String STATE_PREFIX = "tf-ignite.launcher.state.";
    static final String OUTPUT_KEY = "tf-ignite.launcher.output-key";

    private static final SecureRandom RANDOM = new SecureRandom();

    private static DistributedMetaStorage store(Ignite ignite) {
        return ((IgniteEx)ignite).context().distributedMetastorage();
    }

    static void putSpec(Ignite ignite, String id, HashMap<String, Object> spec) {
        try {
            store(ignite).write(SPEC_PREFIX + id, spec);
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not record the job's spec: " + e.getMessage(), e);
        }
    }

    @SuppressWarnings("unchecked")
    static HashMap<String, Object> spec(Ignite ignite, String id) {
        try {
            Serializable v = store(ignite).read(SPEC_PREFIX + id);
            return v instanceof HashMap ? (HashMap<String, Object>)v : null;
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not read the job's spec: " + e.getMessage(), e);
        }
    }

    static void removeSpec(Ignite ignite, String id) {
        try {
            store(ignite).remove(SPEC_PREFIX + id);
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not remove the job's spec: " + e.getMessage(), e);
        }
    }

    /** Records the supervisor's state of job {@code id} (its decision fields; see {@code JobSupervisor}). */
    static void putState(Ignite ignite, String id, HashMap<String, Object> state) {
        try {
            store(ignite).write(STATE_PREFIX + id, state);
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not record the job's state: " + e.getMessage(), e);
        }
    }

    /** The supervisor's state of job {@code id}, or null (no such job, or accepted by an older module). */
    @SuppressWarnings("unchecked")
    static HashMap<String, Object> state(Ignite ignite, String id) {
        try {
            Serializable v = store(ignite).read(STATE_PREFIX + id);
            return v instanceof HashMap ? (HashMap<String, Object>)v : null;
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not read the job's state: " + e.getMessage(), e);
        }
    }

    static void removeState(Ignite ignite, String id) {
        try {
            store(ignite).remove(STATE_PREFIX + id);
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not remove the job's state: " + e.getMessage(), e);
        }
    }

    /** The ids of every job with a recorded state, and that state (a local read of this node's copy). */
    static Map<String, HashMap<String, Object>> states(Ignite ignite) {
        Map<String, HashMap<String, Object>> out = new TreeMap<>();
        try {
            store(ignite).iterate(STATE_PREFIX, (k, v) -> {
                if (v instanceof HashMap) {
                    @SuppressWarnings("unchecked")
                    HashMap<String, Object> m = (HashMap<String, Object>)v;
                    out.put(k.substring(STATE_PREFIX.length()), m);
                }
            });
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not list the jobs' states: " + e.getMessage(), e);
        }
        return out;
    }

    /** A fresh random value for a job's sealed spec ({@code output_nonce}): 16 bytes, hex. */
    static String nonce() {
        byte[] raw = new byte[16];
        RANDOM.nextBytes(raw);
        StringBuilder sb = new StringBuilder();
        for (byte b : raw)
            sb.append(String.format("%02x", b));
        return sb.toString();
    }

    /**
     * The associated data a job's output chunk (or worker state) is sealed under: the job's nonce
     * and the cache key, so that cipher text of an earlier job with the same id (the id reused
     * after {@code rm}) or of another key does not open. Jobs accepted without a nonce (an older
     * module) use the key alone.
     */
    static String aad(String nonce, String key) {
        return nonce == null || nonce.isEmpty() ? key : nonce + "|" + key;
    }

    /** The cluster's output key, made on first use (a SecretKeySpec: the metastorage view does not print it). */
    static SecretKeySpec outputKey(Ignite ignite) {
        return ClusterSecrets.key(ignite, OUTPUT_KEY, "AES", "the launcher's output key");
    }

    /** {@code text} encrypted for the logs cache: 12 bytes of nonce, then AES-GCM cipher text and tag. */
    static byte[] seal(Ignite ignite, String aad, String text) {
        try {
            byte[] iv = new byte[12];
            RANDOM.nextBytes(iv);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, outputKey(ignite), new GCMParameterSpec(128, iv));
            c.updateAAD(aad.getBytes(StandardCharsets.UTF_8));
            byte[] ct = c.doFinal(text.getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.allocate(iv.length + ct.length).put(iv).put(ct).array();
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot encrypt worker output: " + e, e);
        }
    }

    /** The text {@link #seal} sealed under {@code aad} (the chunk's key), or null when it was altered. */
    static String open(Ignite ignite, String aad, byte[] sealed) {
        if (sealed == null || sealed.length < 12 + 16)
            return null;
        try {
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, outputKey(ignite), new GCMParameterSpec(128, sealed, 0, 12));
            c.updateAAD(aad.getBytes(StandardCharsets.UTF_8));
            return new String(c.doFinal(sealed, 12, sealed.length - 12), StandardCharsets.UTF_8);
        }
        catch (GeneralSecurityException e) {
            return null;
        }
    }
}
