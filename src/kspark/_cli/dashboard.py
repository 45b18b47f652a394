"""``kspark dashboard``: print a Grafana dashboard for the metrics endpoint, as JSON.

``kspark dashboard > kspark.json``, then Grafana's *Dashboards > New > Import* (see
docs/operations.md, "A Grafana dashboard"); the panels are declared in
``kspark._client.dashboard``.

Example:
    >>> import argparse, contextlib, io, json
    >>> sub = argparse.ArgumentParser().add_subparsers(dest="command")
    >>> add_dashboard(sub)
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     code = run_dashboard(argparse.Namespace(command="dashboard"))
    >>> code, json.loads(out.getvalue())["uid"]
    (0, 'kspark-streams')
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kspark._client.dashboard import dashboard

__all__ = ["add_dashboard", "run_dashboard"]


def add_dashboard(sub: Any) -> None:
    """The ``kspark dashboard`` subcommand's parser (no arguments)."""
    sub.add_parser("dashboard", help="print a Grafana dashboard (JSON) for the Prometheus "
                   "endpoint (metrics.http.port): kspark dashboard > kspark.json",
                   description="Print a Grafana dashboard for a kspark application's "
                   "/metrics endpoint: throughput, consumer lag, end-to-end latency, dropped "
                   "records, commits, restores, stream threads. Import it in Grafana "
                   "(Dashboards > New > Import) and pick the Prometheus that scrapes the "
                   "driver; the application_id variable chooses the application.")


def run_dashboard(args: argparse.Namespace) -> int:
    """Print the dashboard's JSON on standard output."""
    print(json.dumps(dashboard(), indent=2))
    return 0
