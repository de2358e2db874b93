"""``JobClient``: submit, watch and stop launcher jobs over the thin client.

Commands go to the supervisor service (``TfJobService``, a cluster singleton)
through the thin client's service-invoke operation (7000); everything that is
read -- job records, worker records, output lines, results -- comes straight
from the launcher's caches (:mod:`.layout`), so watching a job costs the
supervisor nothing and keeps working while Ignite moves the supervisor to
another node.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import sys
import time
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..client import ConnectionOptions, IgniteClient
from ..client.closeable import Closeable
from ..client.services import invoke_service, plain
from ..errors import (
    ConfigurationError,
    HandshakeError,
    IgniteError,
    JobNotFoundError,
    LauncherError,
    LauncherNotDeployedError,
    LauncherPermissionError,
    ServerError,
    TLSError,
    UnsupportedOperationError,
)
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from . import layout
from .module import NodeModule, check_module

__all__ = [
    "JobClient",
    "LauncherError",
    "JobNotFoundError",
    "LauncherNotDeployedError",
    "OutputLine",
    "pack_directory",
    "plain",
    "new_job_id",
    "job_durations",
    "RestartKeywords",
]


class RestartKeywords(TypedDict, total=False):
    """How the launcher runs a job's attempts: the keywords :meth:`JobClient.submit` and
    :func:`~tensorflow_ignite.scoring.cluster.submit_predict` share.

    ``max_restarts`` (default 3): attempts after the first before the job fails.  Durations are
    seconds: ``backoff`` (default 1) before the first restart, doubled each time up to 30 s;
    ``settle`` (default 1), how long the partition map must hold still before workers start;
    ``grace`` (default 10), what workers get after SIGTERM before SIGKILL when stopped.
    ``backoff_ms``/``settle_ms``/``grace_ms`` are their deprecated millisecond spellings (a
    :class:`DeprecationWarning`).
    """

    max_restarts: int
    backoff: float | None
    settle: float | None
    grace: float | None
    backoff_ms: int | None
    settle_ms: int | None
    grace_ms: int | None


def job_durations(what: str, restart: Mapping[str, Any]) -> dict[str, int]:
    """The :class:`RestartKeywords` ``what`` was given as the job record's fields: ``max_restarts``
    and ``backoff_ms``/``settle_ms``/``grace_ms``.

    A keyword that is not one is a TypeError naming it; giving both spellings of a duration,
    or a negative one, is a :class:`~tensorflow_ignite.errors.ConfigurationError`; the ``*_ms``
    spellings warn (:class:`DeprecationWarning`).
    """
    for name in restart:
        if name not in RestartKeywords.__annotations__:
            raise TypeError(
                f"{what}() got an unexpected keyword argument {name!r}; "
                f"the restart keywords are {', '.join(RestartKeywords.__annotations__)}"
            )
    max_restarts = restart.get("max_restarts", 3)
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ConfigurationError(f"max_restarts={max_restarts!r}: a number of restarts, 0 or more")
    out: dict[str, int] = {"max_restarts": max_restarts}
    for name, default in (("backoff", 1.0), ("settle", 1.0), ("grace", 10.0)):
        seconds, ms = restart.get(name), restart.get(f"{name}_ms")
        if ms is not None:
            if seconds is not None:
                raise ConfigurationError(f"{name}= and {name}_ms= both given: pass {name}= (seconds) only")
            warnings.warn(
                f"{name}_ms= is deprecated: pass {name}= in seconds ({name}={ms / 1000:g})",
                DeprecationWarning,
                stacklevel=3,
            )
            seconds = ms / 1000
        value = default if seconds is None else seconds
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ConfigurationError(f"{name}={value!r}: a duration is a number of seconds, 0 or more")
        out[f"{name}_ms"] = round(value * 1000)
    return out


#: Bytes per chunk of the job directory's zip in the files cache.
FILE_CHUNK_BYTES = 4 << 20
#: Largest job directory (zipped) that ``submit`` ships.
MAX_JOB_BYTES = 512 << 20
#: Job environment variable names that look like secrets; refused before they leave
#: this process (a job record is readable by every client of the cluster).  Workers
#: get credentials from their node's configuration (``TF_IGNITE_WORKER_*``) instead.
#: A name matches (whole, :meth:`re.Pattern.fullmatch`) when it contains PASSWORD, PASSWD,
#: PASSPHRASE, SECRET, TOKEN, CREDENTIAL, APIKEY, API_KEY, ACCESS_KEY, ACCESSKEY,
#: PRIVATE_KEY, PRIVATEKEY, AUTHORIZATION, SESSION or COOKIE, or has one of the words
#: PASS, PWD, PW, KEY, AUTH, OAUTH between separators (``DB_PASS``, ``MYSQL_PWD``);
#: the same list as the launcher's ``TfJobService.SECRET_NAME``.
SECRET_ENV_NAME = re.compile(
    r"(?i)(?:.*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|APIKEY|API_KEY|ACCESS_KEY|ACCESSKEY|"
    r"PRIVATE_KEY|PRIVATEKEY|AUTHORIZATION|SESSION|COOKIE).*"
    r"|(?:.*[^A-Z0-9])?(?:PASS|PWD|PW|KEY|AUTH|OAUTH)(?:[^A-Z0-9].*)?)"
)
#: A value holding a URL with credentials (``scheme://user:password@host``): refused like a secret.
CREDENTIAL_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]*:[^/?#@\s]*@")
#: A job id, as the launcher accepts it (``LauncherPolicy.jobId``): never a path, never ``.``/``..``.
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: ``--strategy`` spellings -> the supervisor's names.
STRATEGIES = {
    "multi_worker_mirrored": "multi_worker_mirrored",
    "mwms": "multi_worker_mirrored",
    "parameter_server": "parameter_server",
    "ps": "parameter_server",
}
_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class OutputLine:
    """One line of a job's output: a worker's (``worker`` >= 0) or the launcher's (``worker`` == -1)."""

    t: int
    attempt: int
    worker: int
    node: str
    text: str
    #: ``"worker"``, or ``"chief"``/``"ps"`` in parameter-server jobs.
    task_type: str = "worker"

    def label(self) -> str:
        if self.worker < 0:
            return "[launcher]"
        who = f"w{self.worker}" if self.task_type == "worker" else f"{self.task_type}:{self.worker}"
        return f"[{who} {self.node}{'' if self.attempt <= 1 else f' #{self.attempt}'}]"

    def __str__(self) -> str:
        return f"{self.label()} {self.text}"


def check_job_id(job_id: str) -> str:
    """``job_id`` when the launcher would accept it; otherwise a :class:`ConfigurationError` naming it."""
    if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id) or set(job_id) == {"."}:
        raise ConfigurationError(
            f"job id {job_id!r} is not valid: use letters, digits, '.', '_' and '-', starting with a letter "
            "or digit (at most 100 characters)"
        )
    return job_id


def check_job_env(env: Mapping[str, str]) -> None:
    """Refuses (without echoing values) environment entries that look like secrets: the job record
    that holds them is readable by every client of the cluster.  The launcher checks again, and also
    refuses the variables it reserves (README, "Security")."""
    for key, value in env.items():
        if SECRET_ENV_NAME.fullmatch(key):
            raise ConfigurationError(
                f"environment variable {key} looks like a secret and would be stored in the job record, "
                "readable by every client of the cluster; configure worker credentials on the nodes "
                "instead (TF_IGNITE_WORKER_USERNAME/PASSWORD/CAFILE/CERTFILE/KEYFILE/CERT_PASSWORD in "
                "each node's environment; `ignite-tf node start` sets them for its own clusters)"
            )
        if CREDENTIAL_URL.search(str(value)):
            raise ConfigurationError(
                f"environment variable {key} holds a URL with a user name and password "
                "(scheme://user:password@host), which would be stored in the job record, readable by every "
                "client of the cluster; configure the credentials on the nodes instead"
            )


def new_job_id(job_dir: str | os.PathLike[str] | None = None) -> str:
    """``<directory name>-<6 hex>``, valid for the supervisor (letters, digits, ``._-``)."""
    stem = Path(job_dir).resolve().name if job_dir is not None else "job"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-._") or "job"
    return f"{stem[:40]}-{secrets.token_hex(3)}"


def pack_directory(job_dir: str | os.PathLike[str], *, limit: int = MAX_JOB_BYTES) -> bytes:
    """Zip ``job_dir`` (without caches and VCS folders) into memory."""
    root = Path(job_dir)
    if not root.is_dir():
        raise ConfigurationError(f"job directory {str(root)!r} does not exist or is not a directory")
    buf = io.BytesIO()
    files = 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.is_file():
                    zf.write(path, path.relative_to(root).as_posix())
                    files += 1
                if buf.tell() > limit:
                    raise ConfigurationError(
                        f"job directory {str(root)!r} is larger than {limit >> 20} MiB zipped; ship data "
                        "through a cache (ignite-tf load) rather than the job directory"
                    )
    if files == 0:
        raise ConfigurationError(
            f"job directory {str(root)!r} is empty: put the training script (e.g. train.py) in it; "
            "its files are shipped to every node and the command runs there"
        )
    return buf.getvalue()


class JobClient(Closeable):
    """Talks to the launcher of one cluster.  ``JobClient.connect("host", port)`` or wrap a client."""

    def __init__(self, client: IgniteClient, *, owns_client: bool = False) -> None:
        self.client = client
        self._owns = owns_client
        self._module_checked = False

    @classmethod
    def connect(cls, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, **settings: Any) -> "JobClient":
        """A job client with a client of its own; ``settings`` are :class:`ConnectionOptions` fields.

        ``host`` may be ``"host:port"`` or a comma-separated list of them (as for
        :meth:`ConnectionOptions.from_address`); ``port`` is that of hosts given without one."""
        return cls.from_options(ConnectionOptions.from_address(host, port, **settings))

    @classmethod
    def from_options(cls, options: ConnectionOptions) -> "JobClient":
        """A job client with a client of its own for ``options``.

        The launcher is a service the tensorflow-ignite module deploys on Ignite 2 server
        nodes: an address that speaks Ignite 3 is an :class:`UnsupportedOperationError`
        saying so, rather than the Ignite 2 handshake's failure.
        """
        try:
            return cls(options.open(), owns_client=True)
        except (HandshakeError, TLSError) as exc:
            from ..generation import generation_at

            try:
                ignite3 = generation_at(options) == 3
            except IgniteError:
                ignite3 = False
            if ignite3:
                raise UnsupportedOperationError(
                    f"the cluster at {options.endpoints[0]} is Ignite 3: the job launcher is a service of the "
                    "tensorflow-ignite module on Ignite 2 server nodes, and Ignite 3.1 has no services to deploy "
                    "it as; run the job's script yourself (IgniteDataset, write and predict work on Ignite 3) or "
                    "point at an Ignite 2 cluster"
                ) from exc
            raise

    def close(self) -> None:
        if self._owns:
            self.client.close()

    # ------------------------------------------------------------- service calls
    def check_module(self) -> list[NodeModule]:
        """Every server node carries this version of the tensorflow-ignite module, or a
        :class:`LauncherNotDeployedError` / :class:`LauncherModuleError` naming the nodes."""
        nodes = check_module(self.client)
        self._module_checked = True
        return nodes

    def invoke(self, method: str, *args: Any, wait_for_service: float = 30.0) -> Any:
        """Call a method of the supervisor service.

        The first call checks the module on every server node (fails at once, naming
        the nodes, when it is missing or of another version).  With the module in
        place the service exists; a call may still find it moving (its node just
        died), which is waited for up to ``wait_for_service`` seconds.
        """
        if not self._module_checked:
            self.check_module()
        deadline = time.monotonic() + wait_for_service
        delay = 0.1
        while True:
            try:
                return invoke_service(self.client, layout.SERVICE_NAME, method, args)
            except ServerError as exc:
                text = str(exc)
                if "Service not found" in text or "Failed to find deployed service" in text:
                    if time.monotonic() < deadline:
                        time.sleep(delay)  # polling for the redeployment, bounded by the deadline
                        delay = min(delay * 2, 1.0)
                        continue
                    raise LauncherNotDeployedError(
                        f"the {layout.SERVICE_NAME!r} service was not found for {wait_for_service:.0f}s although "
                        "the server nodes have the tensorflow-ignite module: is the cluster active "
                        "(`control.sh --set-state ACTIVE`)? The nodes' logs say why the service did not deploy"
                    ) from None
                message, refused = _service_message(text)
                raise (LauncherPermissionError if refused else LauncherError)(message) from None

    def ping(self) -> str:
        """``"tf-ignite-launcher 1 on <node>"`` once the supervisor is deployed."""
        return str(self.invoke("ping"))

    def submit(
        self,
        cache: str,
        job_dir: str | os.PathLike[str],
        command: Sequence[str],
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        checkpoint_dir: str | None = None,
        strategy: str = "multi_worker_mirrored",
        num_ps: int | None = None,
        **restart: Unpack[RestartKeywords],
    ) -> dict[str, Any]:
        """Ship ``job_dir`` through the files cache and submit the job; returns its record.

        ``command`` runs in the job directory on each planned node, with ``python``
        (default: this interpreter) first on ``PATH``.  ``checkpoint_dir`` defaults
        to ``ignite:///tf-jobs/<job>`` -- the ``ignite://`` filesystem through the
        worker's own node.

        ``strategy`` is ``multi_worker_mirrored`` (``mwms``; one worker per data node)
        or ``parameter_server`` (``ps``; a chief, ``num_ps`` ps tasks -- default 1 --
        and one worker per data node; the job succeeds when the chief exits 0).
        ``env`` must not hold secrets (names matching :data:`SECRET_ENV_NAME`: PASSWORD, SECRET,
        TOKEN, API_KEY, ``*_PASS``, ...; values with ``scheme://user:password@``): workers get
        credentials from their node's ``TF_IGNITE_WORKER_*`` settings.

        ``restart``: ``max_restarts`` and the durations ``backoff``, ``settle`` and ``grace``
        (:class:`RestartKeywords`, seconds).
        """
        durations = job_durations("JobClient.submit", restart)
        if not command:
            raise ConfigurationError("the job needs a command after --, e.g. -- python train.py")
        canonical = STRATEGIES.get(strategy.lower().replace("-", "_"))
        if canonical is None:
            raise ConfigurationError(
                f"strategy {strategy!r} is not supported; use multi_worker_mirrored (mwms) or parameter_server (ps)"
            )
        if num_ps is not None and canonical != "parameter_server":
            raise ConfigurationError("--num-ps is for the parameter_server strategy only")
        check_job_env(env or {})
        job_id = check_job_id(name or new_job_id(job_dir))
        data = pack_directory(job_dir)
        files = self.client.get_or_create_cache(layout.cache_config(layout.FILES))
        chunks = [data[i : i + FILE_CHUNK_BYTES] for i in range(0, len(data), FILE_CHUNK_BYTES)]
        for n, chunk in enumerate(chunks):
            files.put(layout.file_key(job_id, n), bytes(chunk))
        spec = {
            "id": job_id,
            "cache": cache,
            "command": list(command),
            "python": python or sys.executable,
            "env": dict(env or {}),
            "strategy": canonical,
            "num_ps": int(num_ps if num_ps is not None else (1 if canonical == "parameter_server" else 0)),
            "checkpoint_dir": checkpoint_dir if checkpoint_dir is not None else f"ignite:///tf-jobs/{job_id}",
            "file_chunks": len(chunks),
            # The archive bound to this call: the launcher refuses the job when the files cache
            # holds anything else by the time it reads it (another client rewrote the chunks).
            "files_sha256": hashlib.sha256(data).hexdigest(),
            **durations,
        }
        try:
            return self.invoke("submit", spec)
        except LauncherError:
            files.remove_keys([layout.file_key(job_id, n) for n in range(len(chunks))])
            raise

    def stop(self, job_id: str, *, wait: bool = True, timeout: float = 120.0) -> dict[str, Any]:
        """Ask the supervisor to stop a job; with ``wait``, return once it is STOPPED (or finished)."""
        self.invoke("stop", job_id)
        if not wait:
            return self.job(job_id)
        return self.wait(job_id, timeout=timeout)

    def remove(self, job_id: str, *, force: bool = False) -> dict[str, Any]:
        """Delete a finished job and everything it left in the launcher's caches and on
        the nodes (record, worker records, output, results, shipped files).  A job that
        is still running is refused unless ``force``, which stops it first.  The job's
        checkpoints are kept (they are the training's product)."""
        self.job(job_id)  # JobNotFoundError before anything else
        return self.invoke("remove", job_id, bool(force))

    def remove_finished(self) -> list[str]:
        """Delete every finished (SUCCEEDED, FAILED, STOPPED) job; returns their names."""
        removed = []
        for rec in self.jobs():
            if rec.get("state") in layout.TERMINAL_STATES:
                try:
                    self.invoke("remove", rec["id"], False)
                except JobNotFoundError:
                    continue
                except LauncherError as exc:
                    if "no job named" in str(exc):  # removed meanwhile by someone else
                        continue
                    raise
                removed.append(str(rec["id"]))
        return removed

    # ------------------------------------------------------------------ reading
    def _cache(self, name: str) -> Any | None:
        if name not in self.client.cache_names():
            return None
        return self.client.cache(name)

    def jobs(self) -> list[dict[str, Any]]:
        """Every job on the cluster, newest first."""
        cache = self._cache(layout.JOBS)
        if cache is None:
            return []
        # Every client may write this cache: what is not a record (another key or value type) is skipped.
        out = [plain(v) for k, v in cache.scan() if isinstance(k, str) and isinstance(v, Mapping)]
        return sorted(out, key=lambda r: r["created_ms"] if isinstance(r.get("created_ms"), int) else 0, reverse=True)

    def job(self, job_id: str) -> dict[str, Any]:
        """The job's record (raises :class:`JobNotFoundError`)."""
        cache = self._cache(layout.JOBS)
        rec = cache.get(job_id) if cache is not None else None
        if rec is None:
            raise JobNotFoundError(f"no job named {job_id!r} on this cluster (see `ignite-tf ps`)")
        if not isinstance(rec, Mapping):
            raise JobNotFoundError(
                f"what is stored under {job_id!r} in {layout.JOBS} is not a job record (another "
                "client wrote it); the launcher restores the record of a job it accepted"
            )
        return plain(rec)

    def workers(self, job_id: str, attempt: int | None = None) -> list[dict[str, Any]]:
        """The worker records of one attempt (default: the current one), by worker index."""
        if attempt is None:
            attempt = int(self.job(job_id).get("attempt") or 0)
        return self._workers_of(job_id, attempt)

    def _workers_of(self, job_id: str, attempt: int, upto: int = 64) -> list[dict[str, Any]]:
        cache = self._cache(layout.WORKERS)
        if cache is None or attempt <= 0:
            return []
        found = cache.get_all([layout.worker_key(job_id, attempt, i) for i in range(upto)])
        return sorted((plain(v) for v in found.values() if v is not None), key=lambda w: w.get("index", 0))

    def results(self, job_id: str, attempt: int | None = None) -> dict[int, Any]:
        """What each worker of an attempt (default: the current one) passed to ``report()``."""
        if attempt is None:
            attempt = int(self.job(job_id).get("attempt") or 0)
        cache = self._cache(layout.RESULTS)
        if cache is None:
            return {}
        keys = [layout.worker_key(job_id, attempt, i) for i in range(64)]
        return {int(str(k).rsplit("/", 1)[1]): plain(v) for k, v in cache.get_all(keys).items() if v is not None}

    def wait(self, job_id: str, *, timeout: float | None = None, poll: float = 0.25) -> dict[str, Any]:
        """Block until the job is finished; returns its record."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rec = self.job(job_id)
            if rec.get("state") in layout.TERMINAL_STATES:
                return rec
            if deadline is not None and time.monotonic() > deadline:
                raise LauncherError(
                    f"job {job_id!r} is still {rec.get('state')} after {timeout:.0f}s ({rec.get('message')})"
                )
            time.sleep(poll)  # polling the job record, bounded by the deadline

    def output(
        self,
        job_id: str,
        *,
        follow: bool = False,
        poll: float = 0.25,
        launcher: bool = True,
        attempts: Iterable[int] | None = None,
        workers: Iterable[int] | None = None,
    ) -> Iterator[OutputLine]:
        """The job's output lines, labelled with worker, node and attempt.

        Without ``follow``, what is stored now; with it, keeps polling until the job
        has finished and its last lines are read.  ``launcher`` adds the
        supervisor's events (plans, restarts and their reasons) as ``[launcher]`` lines.
        """
        cursor = _OutputCursor(
            self,
            job_id,
            launcher=launcher,
            attempts=set(attempts) if attempts is not None else None,
            workers=set(workers) if workers is not None else None,
        )
        while True:
            rec = self.job(job_id)
            done = rec.get("state") in layout.TERMINAL_STATES
            yield from cursor.poll(rec)
            if done or not follow:
                return
            time.sleep(poll)  # polling the output caches while the job runs


@dataclass(eq=False)
class _OutputCursor:
    """Which chunks of which workers and which launcher events were already yielded (of the attempts and
    workers asked for: None, all; launcher events only with ``launcher``)."""

    jobs: JobClient
    job_id: str
    _: KW_ONLY
    launcher: bool
    attempts: set[int] | None
    workers: set[int] | None
    next_chunk: dict[tuple[int, int], int] = field(default_factory=dict)
    finished_attempts: set[int] = field(default_factory=set)
    events_seen: set[tuple[int, str]] = field(default_factory=set)

    def poll(self, rec: Mapping[str, Any]) -> list[OutputLine]:
        out: list[OutputLine] = []
        if self.launcher:
            for e in rec.get("events") or ():
                key = (int(e.get("t") or 0), str(e.get("message")))
                if key not in self.events_seen:
                    self.events_seen.add(key)
                    out.append(OutputLine(key[0], int(rec.get("attempt") or 0), -1, "", key[1]))
        current = int(rec.get("attempt") or 0)
        for attempt in range(1, current + 1):
            if attempt in self.finished_attempts or (self.attempts is not None and attempt not in self.attempts):
                continue
            records = self.jobs._workers_of(self.job_id, attempt)
            wanted: list[tuple[int, str, int, int]] = []  # (index, node, first chunk, end chunk)
            roles = {int(w.get("index", 0)): str(w.get("task_type") or "worker") for w in records}
            for w in records:
                idx = int(w.get("index", 0))
                if self.workers is not None and idx not in self.workers:
                    continue
                have = self.next_chunk.get((attempt, idx), 0)
                total = int(w.get("chunks") or 0)
                if total > have:
                    wanted.append((idx, str(w.get("node")), have, total))
            if wanted:
                keys = [
                    layout.log_key(self.job_id, attempt, idx, c)
                    for idx, _, first, end in wanted
                    for c in range(first, end)
                ]
                # Through the launcher: the chunks in the logs cache are encrypted, and it hands
                # them out to the job's submitter (or an admin) only.
                chunks = self.jobs.invoke("output", self.job_id, keys) or {}
                for idx, node, first, end in wanted:
                    for c in range(first, end):
                        chunk = chunks.get(layout.log_key(self.job_id, attempt, idx, c))
                        if chunk is None:  # written out of order by a retry; read it next time
                            end = c
                            break
                        t = int(chunk.get("t") or 0)
                        for line in str(chunk.get("text") or "").split("\n"):
                            out.append(OutputLine(t, attempt, idx, node, line, roles.get(idx, "worker")))
                    self.next_chunk[(attempt, idx)] = end
            # An attempt is over once its workers exited and everything was read.
            if (
                attempt < current
                and records
                and all(
                    w.get("state") in ("EXITED", "FAILED_TO_START")
                    and self.next_chunk.get((attempt, int(w.get("index", 0))), 0) >= int(w.get("chunks") or 0)
                    for w in records
                )
            ):
                self.finished_attempts.add(attempt)
        out.sort(key=lambda line: (line.t, line.attempt, line.worker))
        return out


def _service_message(text: str) -> tuple[str, bool]:
    """The supervisor's own message out of Ignite's wrapped exception text, and whether it is
    a refusal of the caller (the launcher's ``SecurityException``s start with "permission denied: ")."""
    m = re.search(r"permission denied: (.*?)(?: \[node [^\]]*\])?$", text, re.DOTALL)
    if m:
        return m.group(1).strip(), True
    m = re.search(r"IllegalArgumentException: (.*)", text)
    if m:
        return m.group(1).strip(), False
    return text, False
