"""Where tensorflow-ignite keeps per-user state: local nodes' data and logs, the demo's output."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["state_dir"]


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
