"""Argument handling shared by the examples."""

from __future__ import annotations

import argparse


def parse_address(description: str) -> argparse.Namespace:
    """``--host``/``--port`` of a running Ignite node (see ``ignite-tf node start``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="localhost", help="a node's host (default localhost)")
    parser.add_argument("--port", type=int, default=10800, help="its thin-client port (default 10800)")
    return parser.parse_args()
