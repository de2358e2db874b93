package org.tensorflow.ignite;

import java.io.Serializable;
import java.security.SecureRandom;

import javax.crypto.spec.SecretKeySpec;

import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCheckedException;
import org.apache.ignite.IgniteException;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.metastorage.DistributedMetaStorage;

/**
 * The module's cluster-wide secret keys, kept in Ignite's distributed metastorage (internal API:
 * replicated to every server node, persisted with the cluster, out of thin clients' reach):
 * the launcher's output key ({@code LauncherVault}) and the follow log's seal key
 * ({@code FollowLogSeal}). A key is made on first use; when two nodes race, the metastorage's
 * compare-and-set keeps one and both read it back.
 */
public final class ClusterSecrets {
    private static final SecureRandom RANDOM = new SecureRandom();

    private ClusterSecrets() {
    }

    /**
     * The 32-byte key stored under {@code name} for {@code algorithm} ("AES", "HmacSHA256"), made
     * when missing; {@code what} names it in errors ("the launcher's output key").
     */
    public static SecretKeySpec key(Ignite ignite, String name, String algorithm, String what) {
        try {
            DistributedMetaStorage ms = ((IgniteEx)ignite).context().distributedMetastorage();
            Serializable k = ms.read(name);
            if (k instanceof SecretKeySpec)
                return (SecretKeySpec)k;
            byte[] raw = new byte[32];
            RANDOM.nextBytes(raw);
            ms.compareAndSet(name, null, new SecretKeySpec(raw, algorithm));
            k = ms.read(name);
            if (!(k instanceof SecretKeySpec))
                throw new IgniteException(what + " could not be created in the metastorage");
            return (SecretKeySpec)k;
        }
        catch (IgniteCheckedException e) {
            throw new IgniteException("could not read " + what + " from the metastorage: " + e.getMessage(), e);
        }
    }
}
