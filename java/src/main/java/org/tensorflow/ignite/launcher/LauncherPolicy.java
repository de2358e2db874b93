package org.tensorflow.ignite.launcher;

import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What the operator allows the launcher to do: the module's security settings, set as
 * properties of the {@link TfJobService} bean in the node's XML (see {@code ignite-tf module
 * config}) or through {@link TfLauncherModule#configure(org.apache.ignite.configuration.IgniteConfiguration,
 * LauncherPolicy)}.
 *
 * <p>Secure by default: on a cluster without authentication every job request is refused
 * unless {@link #allowUnauthenticated} is set (a trusted, isolated network); with
 * authentication, only the Ignite users listed in {@link #submitters} or {@link #admins} may
 * submit, and only a job's submitter or an admin may stop it, remove it or read its output.
 * The optional limits bound what a job may run and ship.
 */
public final class LauncherPolicy implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Default bound of a job directory, zipped and unzipped (512 MiB, the client's own limit). */
    public static final long DEFAULT_MAX_JOB_BYTES = 512L << 20;

    /** Most files a job directory may hold. */
    public static final int MAX_JOB_FILES = 100_000;

    /** The property names, as the XML and the error messages spell them. */
    static final String ALLOW_UNAUTHENTICATED = "allowUnauthenticated";
    static final String SUBMITTERS = "submitters";
    static final String ADMINS = "admins";

    /**
     * Variables a job's environment may not set (a deny-list meant to be complete, README
     * "Security"): the ones the module sets for each worker, the credentials the node hands its
     * workers, and every variable that changes how a program starts rather than what the job
     * computes -- the dynamic loader's ({@code LD_*}), the home directory (user site packages and
     * start-up files), shell start-up files ({@code BASH_ENV}, {@code ENV}), JVM options, other
     * interpreters' hooks, and Python's (every {@code PYTHON*} except {@link #PYTHON_ENV_ALLOWED}).
     */
    static final Set<String> RESERVED_ENV = Set.of("TF_CONFIG", "PATH", "HOME", "BASH_ENV", "ENV", "SHELL",
        "IFS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH", "NODE_OPTIONS",
        "PERL5OPT", "PERL5LIB", "RUBYOPT", "TMPDIR");
    static final String[] RESERVED_ENV_PREFIXES = {"TF_IGNITE_", "IGNITE_DATASET_", "IGNITE_FS_", "LD_", "PYTHON"};

    /** The {@code PYTHON*} variables a job may set: they tune the interpreter and load no code. */
    static final Set<String> PYTHON_ENV_ALLOWED = Set.of("PYTHONHASHSEED", "PYTHONFAULTHANDLER",
        "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8");

    /** A value holding a URL with credentials ({@code scheme://user:password@host}); refused like a secret. */
    static final Pattern CREDENTIAL_URL = Pattern.compile("(?s).*[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\\s]*:[^/?#@\\s]*@.*");

    /** What a variable's name may be (a shell identifier). */
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

    /** A job id: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters. */
    static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");

    private boolean allowUnauthenticated;
    private ArrayList<String> submitters = new ArrayList<>();
    private ArrayList<String> admins = new ArrayList<>();
    private ArrayList<String> allowedCommands = new ArrayList<>();
    private long maxJobBytes = DEFAULT_MAX_JOB_BYTES;
    private String workRoot;

    /** A policy that refuses everything until configured. */
    public LauncherPolicy() {
    }

    /**
     * Accept jobs from anyone who reaches a thin-client port when the cluster has no
     * authentication. Only for a trusted, isolated network: anyone there can then run any
     * program, as the node's OS user, on every server node. Ignored when authentication is on.
     */
    public LauncherPolicy setAllowUnauthenticated(boolean allow) {
        allowUnauthenticated = allow;
        return this;
    }

    public boolean isAllowUnauthenticated() {
        return allowUnauthenticated;
    }

    /** The Ignite users who may submit jobs (authentication on); {@code *} means every authenticated user. */
    public LauncherPolicy setSubmitters(Collection<String> users) {
        submitters = clean(users);
        return this;
    }

    public List<String> getSubmitters() {
        return new ArrayList<>(submitters);
    }

    /** The Ignite users who may submit jobs and also stop, remove and read every job. */
    public LauncherPolicy setAdmins(Collection<String> users) {
        admins = clean(users);
        return this;
    }

    public List<String> getAdmins() {
        return new ArrayList<>(admins);
    }

    /**
     * Absolute paths of the programs a job may run: the job's interpreter and the first word
     * of its command must each be one of them ({@code python}/{@code python3} as the first
     * word means the job's interpreter). Empty (the default): any program.
     *
     * <p>This bounds <em>programs</em>, not code: allowing an interpreter allows any code in it
     * ({@code python -c ...}, or the job's own files), so a listed submitter can still run anything
     * the node's OS user may. Who may submit ({@link #setSubmitters}) is the boundary; this setting
     * keeps jobs on a known interpreter and its installed packages.
     */
    public LauncherPolicy setAllowedCommands(Collection<String> paths) {
        ArrayList<String> out = new ArrayList<>();
        for (String p : clean(paths)) {
            if (!Paths.get(p).isAbsolute())
                throw new IllegalArgumentException("allowedCommands must be absolute paths, not '" + p + "'");
            out.add(Paths.get(p).normalize().toString());
        }
        allowedCommands = out;
        return this;
    }

    public List<String> getAllowedCommands() {
        return new ArrayList<>(allowedCommands);
    }

    /** The largest job directory accepted, in bytes, zipped and unzipped alike. */
    public LauncherPolicy setMaxJobBytes(long bytes) {
        if (bytes <= 0)
            throw new IllegalArgumentException("maxJobBytes must be positive, not " + bytes);
        maxJobBytes = bytes;
        return this;
    }

    public long getMaxJobBytes() {
        return maxJobBytes;
    }

    /** Where nodes keep job directories (default: the node's work directory, {@code tf-jobs/}). */
    public LauncherPolicy setWorkRoot(String dir) {
        if (dir != null && !dir.isEmpty() && !Paths.get(dir).isAbsolute())
            throw new IllegalArgumentException("workRoot must be an absolute path, not '" + dir + "'");
        workRoot = dir == null || dir.isEmpty() ? null : dir;
        return this;
    }

    public String getWorkRoot() {
        return workRoot;
    }

    /**
     * The directory of job {@code job} under {@code workRoot}, or (null) under {@code nodeWorkDir/tf-jobs}:
     * the id is validated ({@link #jobId}) and the result checked to lie strictly inside that root.
     */
    static Path jobDir(String workRoot, String nodeWorkDir, String job) {
        Path root = (workRoot != null ? Paths.get(workRoot) : Paths.get(nodeWorkDir, "tf-jobs")).toAbsolutePath()
            .normalize();
        return inside(root, root.resolve(jobId(job)));
    }

    /**
     * {@code path}, normalized, when it lies strictly inside {@code root} (never the root itself);
     * otherwise an {@link IllegalArgumentException}: nothing outside a job's directory is created or
     * deleted.
     */
    static Path inside(Path root, Path path) {
        Path r = root.toAbsolutePath().normalize();
        Path p = path.toAbsolutePath().normalize();
        if (!p.startsWith(r) || p.equals(r))
            throw new IllegalArgumentException("path " + p + " is not inside " + r + "; the launcher refuses to "
                + "create or delete it");
        return p;
    }

    /**
     * {@code id} when it is a valid job id: {@link #JOB_ID}, never {@code .} or {@code ..} alone, no
     * {@code /} or {@code \}. Every entry point that takes a job id (the service's calls, the node
     * agents' tasks) checks it before using it as a cache key prefix or a path.
     */
    static String jobId(String id) {
        if (id == null || !JOB_ID.matcher(id).matches() || id.chars().allMatch(c -> c == '.')
            || id.indexOf('/') >= 0 || id.indexOf('\\') >= 0)
            throw new IllegalArgumentException("job id '" + printable(id) + "' is not valid: use letters, digits, "
                + "'.', '_' and '-', starting with a letter or digit (at most 100 characters)");
        return id;
    }

    /** {@code s} for an error message: at most 120 characters, control characters as '?'. */
    static String printable(String s) {
        if (s == null)
            return "null";
        String t = s.length() > 120 ? s.substring(0, 120) + "..." : s;
        return t.replaceAll("[\\p{Cntrl}]", "?");
    }

    // ------------------------------------------------------------------ decisions

    /**
     * Throws {@link SecurityException} unless {@code caller} may submit jobs on a cluster whose
     * authentication is {@code authOn}.
     */
    void checkSubmitter(Caller caller, boolean authOn) {
        if (!authOn) {
            if (!allowUnauthenticated)
                throw LauncherPolicy.denied(unauthenticatedRefusal());
            return;
        }
        if (!caller.thinClient)
            throw LauncherPolicy.denied("jobs are submitted through the thin client (ignite-tf); "
                + caller.describe() + " is refused");
        if (caller.login == null)
            throw LauncherPolicy.denied("the caller has no Ignite user name; refused");
        if (isAdmin(caller) || submitters.contains(caller.login) || submitters.contains("*"))
            return;
        throw LauncherPolicy.denied("Ignite user '" + caller.login + "' may not submit jobs: the launcher's "
            + SUBMITTERS + " (or " + ADMINS + ") property in the node configuration does not list it"
            + (submitters.isEmpty() && admins.isEmpty() ? " (both are empty: nobody may submit yet)" : "")
            + "; ask the cluster's operator to add it (ignite-tf module config shows the property)");
    }

    /**
     * Throws {@link SecurityException} unless {@code caller} may {@code action} ("stop",
     * "remove", "read the output of") job {@code id}, submitted by {@code owner}.
     */
    void checkOwner(Caller caller, boolean authOn, String id, String owner, String action) {
        if (!authOn) {
            if (!allowUnauthenticated)
                throw LauncherPolicy.denied(unauthenticatedRefusal());
            return;
        }
        if (caller.login != null && caller.thinClient && (caller.login.equals(owner) || isAdmin(caller)))
            return;
        throw LauncherPolicy.denied(caller.describe() + " may not " + action + " job '" + id + "': only its "
            + "submitter" + (owner == null ? "" : " ('" + owner + "')") + " or a user listed in the launcher's "
            + ADMINS + " property may");
    }

    private boolean isAdmin(Caller caller) {
        return caller.login != null && admins.contains(caller.login);
    }

    static String unauthenticatedRefusal() {
        return "this cluster runs without authentication, so the launcher cannot tell who is asking and "
            + "refuses to run jobs: anyone who reaches a thin-client port could run any program on every "
            + "server node. Either enable Ignite authentication (authenticationEnabled with persistence; "
            + "then list the users who may submit in the launcher's " + SUBMITTERS + " property), or, only on "
            + "a trusted, isolated network, set the launcher's " + ALLOW_UNAUTHENTICATED + " property to true "
            + "(README, 'Security'; ignite-tf module config prints both)";
    }

    /**
     * Throws {@link IllegalArgumentException} when the job's environment sets a variable that is
     * reserved ({@link #RESERVED_ENV}), looks like a secret ({@link TfJobService#SECRET_NAME}) or holds a URL with
     * credentials ({@link #CREDENTIAL_URL}). Values are never echoed: the record would show them.
     */
    static void checkEnv(Map<String, ?> env) {
        for (Map.Entry<String, ?> e : env.entrySet()) {
            String key = e.getKey();
            if (key == null || !ENV_NAME.matcher(key).matches())
                throw new IllegalArgumentException("environment variable name '" + printable(key) + "' is not valid: "
                    + "use letters, digits and '_' (not starting with a digit)");
            // Refused without echoing the value: it would be stored in the job record.
            if (TfJobService.SECRET_NAME.matcher(key).matches())
                throw new IllegalArgumentException("environment variable " + key + " looks like a secret and "
                    + "would be stored in the job record, readable by every client; configure worker "
                    + "credentials on the nodes instead (TF_IGNITE_WORKER_USERNAME/PASSWORD/... in each "
                    + "node's environment)");
            String upper = key.toUpperCase(Locale.ROOT);
            boolean reserved = RESERVED_ENV.contains(upper);
            for (String p : RESERVED_ENV_PREFIXES)
                reserved |= upper.startsWith(p);
            if (reserved && !PYTHON_ENV_ALLOWED.contains(upper))
                throw new IllegalArgumentException("environment variable " + key + " is set by the launcher or "
                    + "the node for every worker, or changes how programs start, and cannot be set by a job "
                    + "(reserved: " + String.join(", ", new java.util.TreeSet<>(RESERVED_ENV)) + " and the prefixes "
                    + String.join(", ", RESERVED_ENV_PREFIXES) + ", except " + String.join(", ",
                    new java.util.TreeSet<>(PYTHON_ENV_ALLOWED)) + ")");
            Object v = e.getValue();
            if (v != null && CREDENTIAL_URL.matcher(String.valueOf(v)).matches())
                throw new IllegalArgumentException("environment variable " + key + " holds a URL with a user name "
                    + "and password (scheme://user:password@host), which would be stored in the job record, "
                    + "readable by every client; configure the credentials on the nodes instead");
        }
    }

    /** Throws {@link SecurityException} when the interpreter or the command's program is not allowed. */
    void checkCommand(String python, List<String> command) {
        if (allowedCommands.isEmpty())
            return;
        String interp = Paths.get(python).normalize().toString();
        if (!Paths.get(python).isAbsolute() || !allowedCommands.contains(interp))
            throw LauncherPolicy.denied("interpreter " + python + " is not among the launcher's allowedCommands ("
                + String.join(", ", allowedCommands) + "); submit with --python set to one of them");
        String first = command.isEmpty() ? "" : command.get(0);
        if (first.equals("python") || first.equals("python3"))
            return;
        if (!Paths.get(first).isAbsolute() || !allowedCommands.contains(Paths.get(first).normalize().toString()))
            throw LauncherPolicy.denied("command " + first + " is not among the launcher's allowedCommands ("
                + String.join(", ", allowedCommands) + "); start the command with python (the job's interpreter) "
                + "or one of them");
    }

    /** Text every refusal of the caller starts with; the client turns it into LauncherPermissionError. */
    static final String DENIED = "permission denied: ";

    /** A refusal of the caller, saying why and what to do. */
    static SecurityException denied(String why) {
        return new SecurityException(DENIED + why);
    }

    private static ArrayList<String> clean(Collection<String> users) {
        ArrayList<String> out = new ArrayList<>();
        if (users != null) {
            for (String u : users) {
                if (u == null)
                    continue;
                for (String part : u.split(",")) {
                    String t = part.trim();
                    if (!t.isEmpty() && !out.contains(t))
                        out.add(t);
                }
            }
        }
        return out;
    }

    @Override public String toString() {
        return "LauncherPolicy[allowUnauthenticated=" + allowUnauthenticated + ", submitters=" + submitters
            + ", admins=" + admins + ", allowedCommands=" + allowedCommands + ", maxJobBytes=" + maxJobBytes
            + ", workRoot=" + workRoot + "]";
    }
}
