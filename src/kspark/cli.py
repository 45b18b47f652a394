"""The ``kspark`` command: manage the local broker, run the demo or an application, reset an
application, rebuild a lost changelog.

Example:
    >>> from kspark.cli import build_parser
    >>> build_parser().parse_args(["broker", "start", "--port", "9093"]).port
    9093
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kspark.errors import KSparkError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kspark", description="Kafka Streams for Python, on Spark.")
    sub = p.add_subparsers(dest="command", required=True)
    broker = sub.add_parser("broker", help="manage the local single-node Kafka broker")
    broker.add_argument("action", choices=["start", "stop", "status", "fetch"])
    broker.add_argument("--port", type=int, default=9092, help="listener port on 127.0.0.1")
    broker.add_argument("--dir", type=Path, default=None,
                        help="data directory (default: $KSPARK_HOME/broker)")
    demo = sub.add_parser("demo", help="run the demo topology on Spark against Kafka")
    demo.add_argument("--bootstrap-servers", default=None,
                      help="use this Kafka instead of starting a local broker")
    run = sub.add_parser("run", help="run an application (batch runs exit 0 once finished)")
    run.add_argument("application", help="module:attr or file.py:attr naming a Topology, a "
                     "StreamsBuilder, or a function returning one")
    run.add_argument("--config", type=Path, default=None, help="a properties file (key=value)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="a config key, overriding the file (repeatable)")
    changelog = sub.add_parser("changelog", help="rebuild a lost changelog topic from local state")
    changelog.add_argument("action", choices=["rebuild"])
    changelog.add_argument("--bootstrap-servers", required=True)
    changelog.add_argument("--application-id", required=True)
    changelog.add_argument("--state-dir", required=True, help="the application's state.dir")
    changelog.add_argument("--store", required=True, help="the store whose changelog was lost")
    changelog.add_argument("--partitions", type=int, default=None,
                           help="create the topic with this many partitions if it is missing")
    return p


def _changelog(args: argparse.Namespace) -> int:
    from kspark._kafka.rebuild import rebuild_changelog

    written = rebuild_changelog(args.bootstrap_servers, args.state_dir, args.application_id,
                                args.store, args.partitions)
    for p, n in sorted(written.items()):
        print(f"kspark changelog: partition {p}: {n} records written from local state")
    print(f"kspark changelog: rebuilt from {len(written)} task(s); the application may start")
    return 0


def _broker(args: argparse.Namespace) -> int:
    from kspark._kafka.broker import LocalBroker
    from kspark._kafka.jars import kafka_libs, streams_test_libs

    if args.action == "fetch":
        print(kafka_libs())
        print(streams_test_libs())  # the conformance suite's reference: Java Kafka Streams
        return 0
    b = LocalBroker(args.dir, port=args.port)
    if args.action == "start":
        print(f"kspark broker: starting (log: {b.log_file}) ...", flush=True)
        print(f"kspark broker: running; bootstrap.servers={b.start()}")
    elif args.action == "stop":
        print("kspark broker: stopped" if b.stop() else "kspark broker: was not running")
    else:
        st = b.status()
        print(f"kspark broker: running (pid {st.pid}); bootstrap.servers={st.bootstrap}"
              if st.running else "kspark broker: not running")
        return 0 if st.running else 3
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "broker":
            return _broker(args)
        if args.command == "changelog":
            return _changelog(args)
        if args.command == "run":
            from kspark._runner import run_application

            return run_application(args.application, args.config, args.set)
        from kspark.demo.run import run_demo

        return run_demo(args.bootstrap_servers)
    except KSparkError as e:
        print(f"kspark: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
