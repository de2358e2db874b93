"""Where tensorflow-ignite keeps per-user state: local nodes' data and logs, the demo's output."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["state_dir", "write_json_atomically"]


def state_dir() -> Path:
    """``$IGNITE_TF_HOME``, else ``$XDG_STATE_HOME/tensorflow-ignite`` (``~/.local/state/...``).

    Nothing the project runs writes into the current directory or the installed
    package unless told to: node work directories (``nodes/``, ``demo/``) and
    the demo's output (``demo-output/``) live here.
    """
    home = os.environ.get("IGNITE_TF_HOME")
    if home:
        return Path(home)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "tensorflow-ignite"


def write_json_atomically(path: Path, doc: Any) -> None:
    """``doc`` as JSON into ``path``, replaced in one rename: a reader sees the old file or the new one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    os.replace(tmp, path)
