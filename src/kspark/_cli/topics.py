"""``kspark topics create|produce|consume``: make topics, write lines into one, read one back.

Enough to try a topology on the local broker (see the README's quick start), as Kafka's
``kafka-topics``, ``kafka-console-producer`` and ``kafka-console-consumer`` are:

- ``create NAME... [--partitions N]``: topics that exist already are left as they are;
- ``produce NAME``: each line of standard input is a record, ``key:value`` (split at the
  first ``--key-separator``, ``:`` by default), or only a value (a null key) when the line
  has no separator; keys and values are written as strings (UTF-8); blank lines are skipped;
- ``consume NAME [--from-beginning] [--max N] [--timeout S]``: prints ``key: value`` lines
  (``null`` for a null key or value), reading with ``isolation.level=read_committed``;
  exits after ``--max`` records, or once no record came for ``--timeout`` seconds.

The cluster is ``--bootstrap-servers``, else ``$KSPARK_BOOTSTRAP_SERVERS``, else the local
broker (``kspark broker start``'s address, ``127.0.0.1:9092`` by default); ``--config`` adds
client settings for a secured cluster.

Example:
    >>> parse_line('ann:{"page": "/docs"}\\n', ":")
    ('ann', '{"page": "/docs"}')
    >>> parse_line("only a value", ":"), parse_line("  \\n", ":")
    ((None, 'only a value'), None)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

from kspark.errors import KSparkError

__all__ = ["add_topics", "run_topics", "parse_line", "default_bootstrap", "BOOTSTRAP_ENV"]

BOOTSTRAP_ENV = "KSPARK_BOOTSTRAP_SERVERS"
_SERDES = {"string": "String", "long": "Long", "integer": "Integer", "short": "Short",
           "double": "Double", "float": "Float", "json": "Json", "bytes": "ByteArray",
           "uuid": "UUID"}


def add_topics(sub: Any) -> None:
    """The ``kspark topics`` subcommand's parser."""
    topics = sub.add_parser("topics", help="create topics, write lines into one, read one "
                            "(to try a topology on the local broker)")
    actions = topics.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create topics (existing ones are kept)")
    create.add_argument("names", nargs="+", metavar="NAME")
    create.add_argument("--partitions", type=int, default=1, metavar="N", help="default 1")
    create.add_argument("--replication-factor", type=int, default=-1, metavar="R",
                        help="default: the brokers' default.replication.factor")
    produce = actions.add_parser("produce", help="write each line of standard input as a "
                                 "record: key:value, or a value with a null key")
    produce.add_argument("name", metavar="NAME")
    produce.add_argument("--key-separator", default=":", metavar="SEP",
                         help="where a line's key ends (default ':'; '' for values only)")
    consume = actions.add_parser("consume", help="print a topic's records as 'key: value' "
                                 "lines (read_committed)")
    consume.add_argument("name", metavar="NAME")
    consume.add_argument("--from-beginning", action="store_true",
                         help="read from the start of the log (default: only new records)")
    consume.add_argument("--max", type=int, default=None, metavar="N",
                         help="exit after N records (exit 1 if fewer came)")
    consume.add_argument("--timeout", type=float, default=10.0, metavar="S",
                         help="exit once no record came for S seconds (default 10; 0: never)")
    for what in ("key", "value"):
        consume.add_argument(f"--{what}-serde", choices=sorted(_SERDES), default="string",
                             help=f"how {what}s were written (default string)")
    for p in (create, produce, consume):
        p.add_argument("--bootstrap-servers", "--bootstrap", default=None, metavar="HOST:PORT",
                       help=f"the cluster (default: ${BOOTSTRAP_ENV}, else the local broker "
                       "of kspark broker start)")
        p.add_argument("--config", type=Path, default=None, help="a properties file with "
                       "client settings (security.protocol, sasl.*, ssl.*, ...)")


def default_bootstrap() -> str:
    """``$KSPARK_BOOTSTRAP_SERVERS``, else the running local broker's address, else its
    default (127.0.0.1:9092)."""
    if os.environ.get(BOOTSTRAP_ENV):
        return os.environ[BOOTSTRAP_ENV]
    from kspark._local.broker import LocalBroker

    broker = LocalBroker()  # kspark broker start's: $KSPARK_HOME/broker, port 9092
    status = broker.status()
    return status.bootstrap if status.running and status.bootstrap else broker.bootstrap


def _settings(args: argparse.Namespace) -> Any:
    from kspark._cli.properties import read_config_file
    from kspark._kafka.settings import ClientSettings

    props = read_config_file(args.config)
    props["bootstrap.servers"] = (args.bootstrap_servers or props.get("bootstrap.servers")
                                  or default_bootstrap())
    return ClientSettings.from_config(props)


def run_topics(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.action == "create":
        return _create(settings, args.names, args.partitions, args.replication_factor)
    if args.action == "produce":
        return _produce(settings, args.name, args.key_separator, sys.stdin)
    return _consume(settings, args)


def _create(settings: Any, names: list[str], partitions: int, replication: int) -> int:
    from kspark._kafka.admin import Admin

    if partitions < 1:
        raise KSparkError(f"--partitions must be at least 1, not {partitions}")
    admin = Admin(settings)
    existing = admin.partition_counts()
    for name in names:
        if name in existing:
            print(f"kspark topics: {name!r} exists already ({existing[name]} partitions); "
                  "left as it is")
    todo = {n: partitions for n in dict.fromkeys(names) if n not in existing}
    if todo:
        admin.create_topics(todo, exist_ok=False, replication_factor=replication)
    for name in todo:
        print(f"kspark topics: created {name!r} ({partitions} partitions)")
    return 0


def parse_line(line: str, separator: str) -> tuple[str | None, str] | None:
    """``(key, value)`` of one input line (its line ending dropped): split at the first
    ``separator``, or ``(None, line)`` without one; None for a blank line (skipped)."""
    line = line.rstrip("\r\n")
    if not line.strip():
        return None
    if separator and separator in line:
        key, _, value = line.partition(separator)
        return key, value
    return None, line


def _produce(settings: Any, topic: str, separator: str, lines: TextIO) -> int:
    from kspark._kafka.factory import new_producer

    _check_exists(settings, topic)
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err.str())

    producer = new_producer(settings.conf("producer", "topics-produce", defaults={
        "partitioner": "murmur2_random"}), "topics-produce")  # Java's partitioner
    n = 0
    for line in lines:
        record = parse_line(line, separator)
        if record is None:
            continue
        key, value = record
        producer.produce(topic, key=None if key is None else key.encode(), value=value.encode(),
                         on_delivery=delivered)
        producer.poll(0)
        n += 1
    left = producer.flush(30)
    if failed or left:
        raise KSparkError(f"{len(failed) + left} of {n} records were not written to {topic!r}: "
                          f"{failed[0] if failed else 'no answer from the broker in 30s'}")
    print(f"kspark topics: {n} records written to {topic!r}", file=sys.stderr)
    return 0


def _check_exists(settings: Any, topic: str) -> int:
    from kspark._kafka.admin import Admin

    counts = Admin(settings).partition_counts()
    if topic not in counts:
        raise KSparkError(f"topic {topic!r} does not exist at {settings.bootstrap}: create it "
                          f"with kspark topics create {topic}")
    return counts[topic]


def _consume(settings: Any, args: argparse.Namespace) -> int:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    from kspark._kafka.factory import new_consumer
    from kspark.serde import Serdes

    partitions = _check_exists(settings, args.name)
    ks, vs = (Serdes.by_name(_SERDES[s]) for s in (args.key_serde, args.value_serde))
    consumer = new_consumer(settings.conf("consumer", "topics-consume", {
        "group.id": f"kspark-topics-{uuid.uuid4().hex}", "enable.auto.commit": False,
        "isolation.level": "read_committed"}), "topics-consume")
    start = OFFSET_BEGINNING if args.from_beginning else OFFSET_END
    consumer.assign([TopicPartition(args.name, p, start) for p in range(partitions)])
    n, last = 0, time.monotonic()
    try:
        while args.max is None or n < args.max:
            if args.timeout and time.monotonic() - last >= args.timeout:
                break
            for m in consumer.consume(100 if args.max is None else args.max - n, 0.2):
                if m.error() is not None:
                    raise KSparkError(f"reading {args.name!r}: {m.error().str()}")
                print(f"{_show(ks.deserialize(args.name, m.key()))}: "
                      f"{_show(vs.deserialize(args.name, m.value()))}", flush=True)
                n, last = n + 1, time.monotonic()
    finally:
        consumer.close()
    if args.max is not None and n < args.max:
        print(f"kspark topics: {n} of {args.max} records came within {args.timeout:g}s",
              file=sys.stderr)
        return 1
    return 0


def _show(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, (dict, list)):
        return json.dumps(x)
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    return str(x)
