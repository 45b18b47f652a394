"""The ``kspark`` command: manage the local broker, make, fill and read topics, run the demo
or an application, describe an application's Spark plan, reset an application, rebuild a
lost changelog.

Example:
    >>> from kspark._cli.main import build_parser
    >>> build_parser().parse_args(["broker", "start", "--port", "9093"]).port
    9093
    >>> build_parser().parse_args(["broker", "start", "--brokers", "3"]).brokers
    3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kspark._cli.dashboard import add_dashboard, run_dashboard
from kspark._cli.registry import add_registry, run_registry
from kspark._cli.reset import add_reset, reset_options
from kspark._cli.store import add_store, run_store
from kspark._cli.topics import add_topics, run_topics
from kspark.errors import KSparkError

__all__ = ["main", "build_parser", "client_config"]

_CONFIG_HELP = ("a properties file with the application's Kafka client settings "
                "(security.protocol, sasl.*, ssl.*, ...; the application's own file works); "
                "values may be ${env:NAME} or ${file:PATH}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kspark", description="Kafka Streams for Python, on Spark.")
    sub = p.add_subparsers(dest="command", required=True)
    _add_broker(sub)
    _add_demo_and_run(sub)
    _add_describe(sub)
    add_reset(sub)
    _add_changelog(sub)
    add_topics(sub)
    add_registry(sub)
    add_store(sub)
    add_dashboard(sub)
    return p


def _add_broker(sub: Any) -> None:
    """``kspark broker start|stop|status|fetch``."""
    broker = sub.add_parser("broker", help="manage the local Kafka broker (or a local "
                            "cluster of several)")
    broker.add_argument("action", choices=["start", "stop", "status", "fetch"])
    broker.add_argument("--port", type=int, default=None,
                        help="listener port on 127.0.0.1 (default 9092; with --brokers N: the "
                        "first node's, the others the next ones; default: free ports)")
    broker.add_argument("--dir", type=Path, default=None,
                        help="data directory (default: $KSPARK_HOME/broker, with --brokers N: "
                        "$KSPARK_HOME/cluster)")
    broker.add_argument("--brokers", type=int, default=1, metavar="N",
                        help="N > 1: a local KRaft cluster of N nodes (each broker and "
                        "controller; replication factor 3, min.insync.replicas 2)")
    broker.add_argument("--secure", action="store_true",
                        help="start: listen SASL_SSL (SCRAM-SHA-512, TLS from a private CA made "
                        "in <dir>/tls) with ACLs enforced and 'admin' as the super user")


def _add_demo_and_run(sub: Any) -> None:
    """``kspark demo`` and ``kspark run APPLICATION``."""
    demo = sub.add_parser("demo", help="run the demo topology on Spark against Kafka")
    demo.add_argument("--bootstrap-servers", default=None,
                      help="use this Kafka instead of starting a local broker")
    run = sub.add_parser("run", help="run an application (batch runs exit 0 once finished): "
                         "a live line every few seconds, a summary line at the end",
                         description="Run an application until its batch run finishes "
                         "(autostop.at=eol) or, streaming, until Ctrl-C. Prints a start line, a "
                         "live line every --every seconds and a summary line (records in and "
                         "out, elapsed, average rate, commits, restores, moves, dropped records, "
                         "how the run ended). Exit 0: finished; 2: failed; 130: interrupted.")
    run.add_argument("application", help="module:attr or file.py:attr naming a Topology, a "
                     "StreamsBuilder, or a function returning one")
    run.add_argument("--config", type=Path, default=None, help="a properties file (key=value)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="a config key, overriding the file (repeatable)")
    run.add_argument("--every", type=_seconds, default=5.0, metavar="SECONDS",
                     help="a live line every SECONDS (default 5; 0: none): state, records in "
                     "and out with records/s, lag per input topic, commits, restores, task "
                     "moves, dropped records")


def _seconds(text: str) -> float:
    """``--every``'s value: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def _add_describe(sub: Any) -> None:
    """``kspark describe APPLICATION``."""
    describe = sub.add_parser("describe", help="print an application's topology as Kafka "
                              "Streams prints it, then the Spark plan it becomes (runs nothing)")
    describe.add_argument("application", help="as for run: module:attr or file.py:attr")
    describe.add_argument("--config", type=Path, default=None, help="a properties file (key=value)")
    describe.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                          help="a config key, overriding the file (repeatable)")
    describe.add_argument("--partitions", action="append", default=[], metavar="TOPIC=N",
                          help="a topic's partition count (repeatable); topics not given are "
                          "asked of bootstrap.servers, else assumed to have 1 (the output says)")
    describe.add_argument("--no-broker", action="store_true",
                          help="do not ask bootstrap.servers for partition counts")
    describe.add_argument("--format", choices=["text", "mermaid", "dot"], default="text",
                          help="text (the default): Kafka Streams' text, then the Spark plan; "
                          "mermaid or dot: a picture of the topology alone, as a Mermaid "
                          "flowchart (a ```mermaid block on GitHub) or a Graphviz graph "
                          "(dot -Tsvg); no plan, no broker asked")


def _add_changelog(sub: Any) -> None:
    """``kspark changelog rebuild``."""
    changelog = sub.add_parser("changelog", help="rebuild a lost changelog topic from local state")
    changelog.add_argument("action", choices=["rebuild"])
    changelog.add_argument("--bootstrap-servers", default=None,
                           help="the cluster (default: bootstrap.servers of --config)")
    changelog.add_argument("--config", type=Path, default=None, help=_CONFIG_HELP)
    changelog.add_argument("--application-id", required=True)
    changelog.add_argument("--state-dir", required=True, help="the application's state.dir")
    changelog.add_argument("--store", required=True, help="the store whose changelog was lost")
    changelog.add_argument("--partitions", type=int, default=None,
                           help="create the topic with this many partitions if it is missing")


def client_config(args: argparse.Namespace) -> "Any":
    """The application's config for a CLI tool: ``--config`` (the application's properties
    file, or one with only client settings, as Kafka tools' ``--command-config``) with
    ``--application-id`` and ``--bootstrap-servers``."""
    from kspark._cli.properties import read_config_file
    from kspark.config import StreamsConfig
    from kspark.errors import ConfigError

    props = read_config_file(args.config)
    if props.get("application.id", args.application_id) != args.application_id:
        raise ConfigError(f"--application-id {args.application_id!r} differs from "
                          f"application.id={props['application.id']!r} in {args.config}")
    props["application.id"] = args.application_id
    if args.bootstrap_servers:
        props["bootstrap.servers"] = args.bootstrap_servers
    if not props.get("bootstrap.servers"):
        raise ConfigError("give --bootstrap-servers, or bootstrap.servers in --config")
    from kspark._kafka.clients import check_client_configs

    config = StreamsConfig(props)
    check_client_configs(config)  # a setting librdkafka refuses is named, not a traceback
    return config


def _reset(args: argparse.Namespace) -> int:
    """``kspark reset`` (its options: ``_cli/reset.py``; the reset: ``_control/reset.py``)."""
    from kspark._kafka.admin import Admin
    from kspark._control.reset import plan_reset, run_reset
    from kspark._kafka.settings import ClientSettings

    config = client_config(args)
    options = reset_options(args, config)
    admin = Admin(ClientSettings.from_config(config), config["request.timeout.ms"])
    plan = plan_reset(admin, args.application_id, **options)
    if args.dry_run:
        for line in plan.describe():
            print(f"kspark reset: dry run: would {line}")
        return 0
    run_reset(admin, plan)
    return 0


def _describe(args: argparse.Namespace) -> int:
    """``kspark describe``: the topology, then its Spark plan (see ``_plan/describe.py``)."""
    from kspark._cli.run import load_topology
    from kspark._plan.describe import describe_application
    from kspark._cli.properties import read_config_file
    from kspark.config import StreamsConfig
    from kspark.errors import ConfigError

    if args.format != "text":  # the picture alone: it needs no config, partitions or broker
        description = load_topology(args.application).describe()
        print(description.to_mermaid() if args.format == "mermaid" else description.to_dot())
        return 0
    props = read_config_file(args.config)
    props.update(_pairs(args.set, "--set", "KEY=VALUE"))
    partitions = _pairs(args.partitions, "--partitions", "TOPIC=N")
    if not all(n.isdigit() and int(n) > 0 for n in partitions.values()):
        raise ConfigError(f"--partitions needs TOPIC=N with N a positive number: {args.partitions}")
    broker = not args.no_broker and bool(props.get("bootstrap.servers"))
    if not props.get("bootstrap.servers"):
        print("kspark describe: no bootstrap.servers in the config: partition counts come from "
              "--partitions, else are assumed", file=sys.stderr)
        props["bootstrap.servers"] = "bootstrap.servers.unset:9092"  # asked by no one
    if not props.get("application.id"):  # names internal topics only: shown as a placeholder
        props["application.id"] = "application.id"
    topology = load_topology(args.application)
    print(describe_application(str(topology.describe()), topology._graph,  # noqa: SLF001
                               StreamsConfig(props), {t: int(n) for t, n in partitions.items()},
                               broker), end="")
    return 0


def _pairs(items: list[str], flag: str, form: str) -> dict[str, str]:
    """``key=value`` arguments of ``flag`` as a dict; ConfigError names one that is not."""
    from kspark.errors import ConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not {form}")
        out[key.strip()] = value.strip()
    return out


def _changelog(args: argparse.Namespace) -> int:
    from kspark._kafka.rebuild import rebuild_changelog
    from kspark._kafka.settings import ClientSettings

    settings = ClientSettings.from_config(client_config(args))
    written = rebuild_changelog(settings, args.state_dir, args.application_id,
                                args.store, args.partitions)
    for p, n in sorted(written.items()):
        print(f"kspark changelog: partition {p}: {n} records written from local state")
    print(f"kspark changelog: rebuilt from {len(written)} task(s); the application may start")
    return 0


def _broker(args: argparse.Namespace) -> int:
    from kspark._local.broker import LocalBroker
    from kspark._local.jars import kafka_libs, streams_test_libs

    if args.action == "fetch":
        print(kafka_libs())
        print(streams_test_libs())  # the conformance suite's reference: Java Kafka Streams
        return 0
    if args.brokers != 1:
        return _cluster(args)
    if args.dir is not None and (args.dir / "cluster.json").exists():
        raise KSparkError(f"{args.dir} holds a local cluster, not a single broker: add "
                          "--brokers N (its node count)")
    b = LocalBroker(args.dir, port=args.port or 9092, secure=args.secure)
    if args.action == "start":
        print(f"kspark broker: starting (log: {b.log_file}) ...", flush=True)
        print(f"kspark broker: running; bootstrap.servers={b.start()}")
        if args.secure:
            print(f"kspark broker: security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, "
                  f"ssl.ca.location={b.ca_file}")
            print(f"kspark broker: super user sasl.username={b.admin_user}; its password is in "
                  f"{b.admin_password_file}")
    elif args.action == "stop":
        print("kspark broker: stopped" if b.stop() else "kspark broker: was not running")
    else:
        st = b.status()
        print(f"kspark broker: running (pid {st.pid}); bootstrap.servers={st.bootstrap}"
              if st.running else "kspark broker: not running")
        return 0 if st.running else 3
    return 0


def _cluster(args: argparse.Namespace) -> int:
    """``kspark broker start|stop|status --brokers N``: a LocalCluster of N nodes."""
    from kspark._local.cluster import LocalCluster
    from kspark.errors import BrokerError

    if args.secure:
        raise BrokerError("--secure with --brokers is not supported yet: a secured local "
                          "broker is a single node (kspark broker start --secure)")
    ports = None if args.port is None else [args.port + i for i in range(args.brokers)]
    c = LocalCluster(args.dir, brokers=args.brokers,
                     ports=ports if args.action == "start" else None)
    if args.action == "start":
        print(f"kspark broker: starting {args.brokers} nodes (logs: {c.dir}/node-*/broker.log)"
              " ...", flush=True)
        print(f"kspark broker: running; bootstrap.servers={c.start()}")
    elif args.action == "stop":
        print("kspark broker: stopped" if c.stop() else "kspark broker: was not running")
    else:
        status = c.status()
        for node, st in status.items():
            print(f"kspark broker: node {node}: running (pid {st.pid}) on {st.bootstrap}"
                  if st.running else f"kspark broker: node {node}: not running")
        running = sum(st.running for st in status.values())
        if running == len(status):
            print(f"kspark broker: running; bootstrap.servers={c.bootstrap}")
            return 0
        print("kspark broker: not running" if not running else
              f"kspark broker: {running} of {len(status)} nodes running (kspark broker start "
              f"--brokers {args.brokers} starts the others)")
        return 3
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "broker":
            return _broker(args)
        if args.command == "changelog":
            return _changelog(args)
        if args.command == "reset":
            return _reset(args)
        if args.command == "describe":
            return _describe(args)
        if args.command == "topics":
            return run_topics(args)
        if args.command == "registry":
            return run_registry(args)
        if args.command == "store":
            return run_store(args)
        if args.command == "dashboard":
            return run_dashboard(args)
        if args.command == "run":
            from kspark._cli.run import run_application

            return run_application(args.application, args.config, args.set, every=args.every)
        from kspark.demo.run import run_demo

        return run_demo(args.bootstrap_servers)
    except KSparkError as e:
        print(f"kspark: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - one line and exit 2 for any start failure
        if args.command not in ("run", "describe"):
            raise
        import logging

        logging.getLogger("kspark").debug("kspark %s failed", args.command, exc_info=True)
        print(f"kspark: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
