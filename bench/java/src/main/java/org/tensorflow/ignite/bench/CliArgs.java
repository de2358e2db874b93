package org.tensorflow.ignite.bench;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The tiny command-line parser both programs share: {@code --name value} options and
 * {@code --flag} switches, each declared up front so that a typo is an error, not a default.
 */
final class CliArgs {
    /** Thrown for bad command lines; the programs print the message and exit with status 2. */
    static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageException(String msg) {
            super(msg);
        }
    }

    private final Map<String, String> values = new HashMap<>();
    private final Set<String> switches = new HashSet<>();

    private CliArgs() {
    }

    /** Parses {@code argv}; {@code options} take a value, {@code flags} do not. */
    static CliArgs parse(String[] argv, Set<String> options, Set<String> flags) {
        CliArgs a = new CliArgs();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            if (options.contains(name)) {
                if (inline == null) {
                    if (i + 1 >= argv.length)
                        throw new UsageException(name + " needs a value");
                    inline = argv[++i];
                }
                a.values.put(name, inline);
            }
            else if (flags.contains(name) && inline == null)
                a.switches.add(name);
            else
                throw new UsageException("unknown argument: " + arg);
        }
        return a;
    }

    String get(String name, String dflt) {
        return values.getOrDefault(name, dflt);
    }

    String require(String name) {
        String v = values.get(name);
        if (v == null)
            throw new UsageException(name + " is required");
        return v;
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    boolean flag(String name) {
        return switches.contains(name);
    }

    int getInt(String name, int dflt) {
        String v = values.get(name);
        if (v == null)
            return dflt;
        try {
            return Integer.parseInt(v);
        }
        catch (NumberFormatException e) {
            throw new UsageException(name + " must be an integer, got '" + v + "'");
        }
    }

    /** An exception and its root cause in one line, for the last line of stderr. */
    static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root)
            root = root.getCause();
        return root == e ? e.toString() : e + " (caused by " + root + ")";
    }
}
