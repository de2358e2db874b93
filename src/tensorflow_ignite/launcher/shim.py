"""The parent of every TensorFlow worker process the launcher starts.

The node's agent (Java, ``WorkerAgent``) runs::

    python -m tensorflow_ignite.launcher.shim --job J --attempt A --worker I -- CMD [ARGS...]

and the shim

* becomes the leader of a new session, so the worker and everything it starts
  form one process group that can be signalled at once;
* asks the kernel to send it SIGTERM when the thread that started it dies
  (``PR_SET_PDEATHSIG``) -- that thread lives inside the Ignite node, so a node
  that is killed takes its workers with it instead of leaving orphans that would
  hold ports and talk to a half-dead training cluster;
* on SIGTERM/SIGINT/SIGHUP sends SIGTERM to the whole group, and SIGKILL to
  whatever is left after a grace period;
* exits with the worker's exit code (``128 + signal`` when it was killed);
* pins every wildcard listen address of the job's processes to the worker's own
  address (:mod:`.fence`: TensorFlow's servers would listen on every interface);
* puts :mod:`._sitehook` first on the worker's ``PYTHONPATH``, so every Python
  process of the job arms the ``ignite://`` registration hook at start-up
  (``TF_IGNITE_FS_AUTOREGISTER=0`` turns that off, as everywhere).

Only the standard library is used here: the shim must start in milliseconds.
``--job/--attempt/--worker`` are not used by the shim itself; they put the job's
identity on the command line for ``ps`` and for the tests' orphan checks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from tensorflow_ignite.launcher.fence import FenceUnavailable, fenced_environment

PR_SET_PDEATHSIG = 1
#: Seconds between SIGTERM to the worker's process group and SIGKILL.
GRACE_SECONDS = float(os.environ.get("TF_IGNITE_SHIM_GRACE", "5"))


def _set_parent_death_signal(sig: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the agent's kill path still applies
        pass


def _parse(argv: Sequence[str]) -> list[str]:
    args = list(argv)
    if "--" not in args:
        raise SystemExit("usage: python -m tensorflow_ignite.launcher.shim [--job J ...] -- CMD [ARGS...]")
    command = args[args.index("--") + 1 :]
    if not command:
        raise SystemExit("tensorflow_ignite.launcher.shim: no command after --")
    return command


def main(argv: Sequence[str] | None = None) -> int:
    command = _parse(sys.argv[1:] if argv is None else argv)
    parent = os.getppid()
    try:
        os.setsid()
    except OSError:  # already a session leader
        pass
    _set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the death signal was armed
        return 143

    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        _terminate_group()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)

    try:
        env = fenced_environment(worker_environment(os.environ))
    except FenceUnavailable as exc:
        print(f"tf-ignite: not starting the worker: {exc}", flush=True)
        return 126
    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        print(f"tf-ignite: cannot start {command[0]!r}: {exc}", flush=True)
        return 127
    while True:
        try:
            code = child.wait()
            break
        except InterruptedError:  # pragma: no cover - PEP 475 retries already
            continue
    if stopping:
        _terminate_group()  # the worker is gone; make sure its children are too
    return 128 - code if code < 0 else code


def worker_environment(environ: "os._Environ[str] | dict[str, str]") -> dict[str, str]:
    """The worker's environment: ours, with the registration hook's directory on PYTHONPATH."""
    env = dict(environ)
    if env.get("TF_IGNITE_FS_AUTOREGISTER", "1").strip().lower() in ("0", "false", "no", "off"):
        return env
    hook = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sitehook")
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != hook]
    env["PYTHONPATH"] = os.pathsep.join([hook, *parts])
    return env


def _terminate_group() -> None:
    """SIGTERM to every other member of our process group; SIGKILL after the grace period."""
    me = os.getpid()
    group = os.getpgrp()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # killpg reaches us too
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline:
        if not _other_members(group, me):
            return
        time.sleep(0.05)  # polling the group's members, bounded by the grace period
    try:
        os.killpg(group, signal.SIGKILL)  # kills us too, which is what we want by now
    except ProcessLookupError:
        pass


def _other_members(group: int, me: int) -> bool:
    """True while a live (non-zombie) process other than us is in ``group``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[2]) == group:
            return True
    return False


if __name__ == "__main__":
    sys.exit(main())
