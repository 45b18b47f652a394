"""``kspark registry start|stop|status|fetch``: a local Schema Registry (Apicurio Registry,
serving Confluent's API, in memory) beside the local broker.

Example:
    >>> from kspark._cli.main import build_parser
    >>> args = build_parser().parse_args(["registry", "start", "--port", "0"])
    >>> (args.action, args.port)
    ('start', 0)
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_registry", "run_registry", "DEFAULT_PORT"]

DEFAULT_PORT = 8081  # Confluent Schema Registry's


def add_registry(sub: Any) -> None:
    registry = sub.add_parser("registry", help="manage a local Schema Registry (Apicurio "
                              "Registry with Confluent's API, schemas kept in memory)")
    registry.add_argument("action", choices=["start", "stop", "status", "fetch"])
    registry.add_argument("--port", type=int, default=None,
                          help=f"start: the port on 127.0.0.1 (default {DEFAULT_PORT}, or a "
                          "free one if that is taken; 0: a free one)")
    registry.add_argument("--dir", type=Path, default=None,
                          help="work directory: pid, port and log (default: "
                          "$KSPARK_HOME/registry)")


def _port(given: int | None) -> int | None:
    """The port to start on: the one given (a clear error later if it is taken); by default
    Confluent's 8081, or a free one (None) if 8081 is taken or 0 was given."""
    from kspark._local.broker_process import port_taken

    if given is None:
        return None if port_taken(DEFAULT_PORT) else DEFAULT_PORT
    return given or None


def run_registry(args: argparse.Namespace) -> int:
    from kspark._local.registry import LocalRegistry, registry_dist

    if args.action == "fetch":
        print(registry_dist())
        return 0
    r = LocalRegistry(args.dir, port=_port(args.port))
    if args.action == "start":
        st = r.status()
        if st.running:
            print(f"kspark registry: already running (pid {st.pid}); url={st.url}")
            return 0
        print(f"kspark registry: starting (log: {r.log_file}) ...", flush=True)
        print(f"kspark registry: running; url={r.start()}")
    elif args.action == "stop":
        print("kspark registry: stopped" if r.stop() else "kspark registry: was not running")
    else:
        st = r.status()
        print(f"kspark registry: running (pid {st.pid}); url={st.url}" if st.running
              else "kspark registry: not running")
        return 0 if st.running else 3
    return 0
