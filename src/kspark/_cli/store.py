"""``kspark store get|range|all``: read a running application's state store, for operators.

The application's config file names it (``application.id``) and its cluster; the workers
holding the store's partitions answer (their routes and tokens are in the application's
control topic: reading it needs the principal's READ on that topic). No topology is
needed: keys are given as JSON text or plain text (``--key alice``, ``--key 42``) and the
workers decode them with the store's key serde; every answer is printed as one JSON line
per entry (``{"key": ..., "value": ...}``; windows as ``{"key", "start", "end"}``).

- ``get --key K``: the key's value (a window store: every window of the key; a session
  store: every session);
- ``range [--from K] [--to K]``: a key-value store's entries between the keys;
- ``all``: every entry (key-value and window stores).

``--stale`` also asks tasks that are restoring. Exit 0: answered (even with no entry);
2: an error (unknown store, unreachable, refused), on standard error.

Example:
    >>> p = argparse.ArgumentParser(); sub = p.add_subparsers(dest="command")
    >>> add_store(sub)
    >>> a = p.parse_args(["store", "get", "--config", "app.properties", "--store", "counts",
    ...                   "--key", "alice"])
    >>> a.op, a.store, a.key
    ('get', 'counts', 'alice')
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kspark.errors import KSparkError, UnknownStateStoreError

__all__ = ["add_store", "run_store"]


def add_store(sub: Any) -> None:
    store = sub.add_parser("store", help="read a running application's state store (JSON "
                           "lines)", description=__doc__.split("\n\nExample", 1)[0])
    store.add_argument("op", choices=["get", "range", "all"])
    store.add_argument("--config", type=Path, required=True,
                       help="the application's properties file (application.id, "
                       "bootstrap.servers and client security settings)")
    store.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a config key, overriding the file (repeatable)")
    store.add_argument("--store", required=True, help="the state store's name")
    store.add_argument("--key", default=None, help="get: the key (JSON text or plain text)")
    store.add_argument("--from", dest="lower", default=None, help="range: the lowest key")
    store.add_argument("--to", dest="upper", default=None, help="range: the highest key")
    store.add_argument("--stale", action="store_true",
                       help="also ask tasks that are restoring (their answers may be old)")


def run_store(args: argparse.Namespace) -> int:
    from kspark._iq.client import QueryClient
    from kspark._iq.tls import client_context
    from kspark._kafka.settings import as_settings
    from kspark._cli.run import _config

    if args.op == "get" and args.key is None:
        raise KSparkError("kspark store get needs --key")
    config = _config(args.config, args.set)
    app_id = config["application.id"]
    client = QueryClient(as_settings(config), app_id, None, int(config["query.timeout.ms"]),
                         client_context(config))
    try:
        client.routes.catch_up(float(config["query.timeout.ms"]) / 1000)
        routes = client.routes.for_store(args.store)
        if not routes:
            known = client.routes.stores()
            raise UnknownStateStoreError(
                f"no worker of application {app_id!r} has announced a store named "
                f"{args.store!r}; the stores announced are {known}" if known else
                f"no worker of application {app_id!r} has announced any store: is it "
                "running, with query.endpoint.enabled?")
        query = {"op": args.op, "key": args.key, "from": args.lower, "to": args.upper}
        for partition, route in sorted(routes.items()):
            answer = client.ask(args.store, route.task, partition, {
                "store": args.store, "query": query, "render": "json", "stale": args.stale})
            if "failure" in answer:
                print(f"kspark: partition {partition}: {answer['failure']}: "
                      f"{answer.get('message')}", file=sys.stderr)
                continue
            for row in answer.get("rows", []):
                print(json.dumps(row, sort_keys=True))
        return 0
    finally:
        client.close()
