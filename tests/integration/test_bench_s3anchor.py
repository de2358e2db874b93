"""The benchmarks' S3 anchor (bench/s3anchor.py): a real SeaweedFS S3 server starts, serves bytes
through s3fs with its own key pair only, and stops without leaving anything behind.

The filesystem scenarios compare ``ignite://`` with this server; this test keeps the anchor working
without running the benchmark (a few seconds: one ``weed server`` start and stop).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bench.s3anchor import S3Anchor, S3AnchorError, S3Endpoint


def _port_open(url: str) -> bool:
    parsed = urlparse(url)
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((parsed.hostname, parsed.port)) == 0


@pytest.mark.timeout(120)
def test_s3_anchor_starts_round_trips_bytes_and_stops(tmp_path: Path) -> None:
    anchor = S3Anchor(tmp_path)
    with anchor:
        endpoint = anchor.endpoint
        pid = anchor.pid
        assert pid is not None and _port_open(endpoint.endpoint_url)
        fs = endpoint.filesystem()
        # Larger than the filer's 4 MiB chunks, so the object is stored in several pieces.
        payload = os.urandom(9 << 20)
        fs.pipe(endpoint.url("roundtrip/blob.bin"), payload)
        assert fs.cat(endpoint.url("roundtrip/blob.bin")) == payload
        assert fs.ls(f"{endpoint.bucket}/roundtrip", detail=False, refresh=True) == [
            f"{endpoint.bucket}/roundtrip/blob.bin"]
        # The server checks signatures: the anchor's key with another secret is refused.
        wrong = S3Endpoint(endpoint.endpoint_url, endpoint.key, "not-the-secret", endpoint.bucket).filesystem()
        with pytest.raises(PermissionError):
            wrong.cat(endpoint.url("roundtrip/blob.bin"))

    # Stopped: the process is gone (reaped), the S3 port is closed, its directory removed.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not _port_open(endpoint.endpoint_url)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(S3AnchorError, match="not running"):
        anchor.endpoint
    anchor.stop()  # idempotent
