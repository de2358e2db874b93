package org.tensorflow.ignite.launcher;

import java.net.InetSocketAddress;

import org.apache.ignite.Ignite;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.security.IgniteSecurity;
import org.apache.ignite.internal.processors.security.SecurityContext;
import org.apache.ignite.plugin.security.SecuritySubject;
import org.apache.ignite.plugin.security.SecuritySubjectType;

/**
 * Who is calling the launcher service: the identity the node authenticated, read on the
 * server from the security context the call runs in -- never a name the client sends.
 *
 * <p>This is the only class that touches Ignite's internal security API
 * ({@code IgniteEx.context().security()}). A thin-client request runs in its caller's security
 * context on the node that received it, and Ignite carries that context with the service call
 * to the node running the supervisor. With {@code authenticationEnabled} the context names the
 * authenticated Ignite user; without authentication there is no context, and the caller is
 * anonymous ({@link #login} is null). Checked on Ignite 2.16, 2.17 and 2.18.
 */
final class Caller {
    /** The authenticated Ignite user, or null when the cluster runs without authentication. */
    final String login;

    /** Where the call came from ({@code host:port} of the thin client), or null when not known. */
    final String address;

    /** True when the caller is a thin client (as opposed to a node of the cluster itself). */
    final boolean thinClient;

    private Caller(String login, String address, boolean thinClient) {
        this.login = login;
        this.address = address;
        this.thinClient = thinClient;
    }

    /** Whether the cluster authenticates its clients ({@code authenticationEnabled} or a security plugin). */
    static boolean authenticationEnabled(Ignite ignite) {
        return security(ignite) != null && security(ignite).enabled();
    }

    /** The caller of the service method running on this thread. */
    static Caller current(Ignite ignite) {
        IgniteSecurity sec = security(ignite);
        if (sec == null || !sec.enabled())
            return new Caller(null, null, true);
        SecurityContext ctx = sec.securityContext();
        SecuritySubject subj = ctx == null ? null : ctx.subject();
        if (subj == null)
            throw LauncherPolicy.denied("the launcher could not tell who is calling (no security context); refused");
        InetSocketAddress addr = subj.address();
        String where = addr == null ? null
            : (addr.getAddress() != null ? addr.getAddress().getHostAddress() : addr.getHostString()) + ":" + addr.getPort();
        Object login = subj.login();
        return new Caller(login == null ? null : String.valueOf(login), where,
            subj.type() == SecuritySubjectType.REMOTE_CLIENT);
    }

    private static IgniteSecurity security(Ignite ignite) {
        if (!(ignite instanceof IgniteEx))
            return null;
        return ((IgniteEx)ignite).context().security();
    }

    /** {@code user 'alice' from 10.0.0.5:51234}, for audit lines and errors. */
    String describe() {
        String who = login == null ? "an unauthenticated client" : "user '" + login + "'";
        if (!thinClient)
            who += " (a cluster node)";
        return address == null ? who : who + " from " + address;
    }
}
