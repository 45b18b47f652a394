"""Benchmark: what kspark's per-record path costs on top of the work itself, in one process.

The peers' W1 (a JSON filter + map, ``benchmarks/peers/workload.py``) over the same
confluent-kafka messages, twice, in one run:

- **raw**: the plain loop: ``w1`` on each message's value, ``produce`` what passes;
- **kspark**: one task of the peers' kspark W1 topology (``systems/kspark_app.py``), fed as a
  real-time stream thread feeds it: the messages made records (``raw_records``), handed to
  the task 2,000 at a time, written through the task's routing collector and producer.

Both produce into a producer with no broker (the records queue in librdkafka, nothing is
sent), so the difference is kspark's own work per record: source, nodes, sink, metrics.
No broker, no Spark. Not a test: run it on purpose:

    .venv/bin/python benchmarks/record_path.py [--records 200000] [--repeat 5]

Prints microseconds per record of each (the best of the repeats) and their difference.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

from confluent_kafka import Message, Producer

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "peers"), str(HERE / "peers" / "systems")]

from kspark._graph.instantiate import build_task  # noqa: E402
from kspark._kafka.records import raw_records  # noqa: E402
from kspark._kafka.task_producer import TaskProducer  # noqa: E402
from kspark._spark.routing import RoutingCollector  # noqa: E402
from kspark.config import StreamsConfig  # noqa: E402
from kspark_app import topology  # noqa: E402
from workload import Expected, generate, w1  # noqa: E402

NOWHERE = "localhost:1"  # no broker: records queue in the producer
QUEUE = {"queue.buffering.max.messages": 10_000_000, "queue.buffering.max.kbytes": 4_000_000,
         "log_level": 0}
POLL = 2_000  # records handed to the task at once, as a stream thread's poll


def messages(n: int) -> list[Message]:
    """``n`` W1 input records as confluent-kafka messages of one partition."""
    return [Message(topic="src", partition=0, offset=i, key=k, value=v,
                    timestamp=(1, 1_700_000_000_000 + i))
            for i, (k, v) in enumerate(generate(n, Expected()))]


def raw_loop(msgs: list[Message]) -> float:
    """Seconds the plain loop takes over ``msgs``."""
    produce = Producer({"bootstrap.servers": NOWHERE, "linger.ms": 20, **QUEUE}).produce
    began = time.perf_counter()
    for m in msgs:
        out = w1(m.value())
        if out is not None:
            produce("dst", out, m.key(), timestamp=m.timestamp()[1])
    return time.perf_counter() - began


def kspark_task(msgs: list[Message], state_dir: str) -> float:
    """Seconds one kspark task takes over ``msgs``, fed a poll at a time."""
    config = StreamsConfig({"application.id": "record-path", "bootstrap.servers": NOWHERE,
                            "state.dir": state_dir})
    producer = TaskProducer(NOWHERE, "record-path", extra={"enable.idempotence": False,
                                                           "linger.ms": 20, **QUEUE})
    collector = RoutingCollector(producer, types.SimpleNamespace(fed={}, routes={}), 0,
                                 shuffled=False)
    a = types.SimpleNamespace(workload="w1", src="src", dst="dst")
    task = build_task(topology(a)._graph, "0_0", config, collector)  # noqa: SLF001
    began = time.perf_counter()
    for i in range(0, len(msgs), POLL):
        task.add_records(raw_records(msgs[i:i + POLL]))
        task.process_buffered()
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    msgs = messages(args.records)
    best = {"raw": float("inf"), "kspark": float("inf")}
    with tempfile.TemporaryDirectory(prefix="kspark-record-path-") as state_dir:
        for _ in range(args.repeat):  # alternating, so both see the same machine
            best["raw"] = min(best["raw"], raw_loop(msgs))
            best["kspark"] = min(best["kspark"], kspark_task(msgs, state_dir))
    us = {k: 1e6 * v / args.records for k, v in best.items()}
    print(f"W1, {args.records:,} records, best of {args.repeat}:")
    for name, v in us.items():
        print(f"  {name:7s} {v:5.2f} us per record  {args.records / best[name]:9,.0f} records/s")
    print(f"  kspark's own work: {us['kspark'] - us['raw']:.2f} us per record")


if __name__ == "__main__":
    main()
