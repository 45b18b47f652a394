"""Bytewax: a Dataflow with the Kafka connectors, run in one worker by ``run_main``
(runs in the peers' virtualenv).

The source stops at the end of the input (``tail=False``). W1: ``filter_map``; W2: a
``stateful_map`` keyed by user, emitting the running count.
"""

import sys
from pathlib import Path

import bytewax.operators as op
from bytewax.connectors.kafka import KafkaSink, KafkaSinkMessage, KafkaSource
from bytewax.dataflow import Dataflow
from bytewax.testing import run_main

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import cli, long_bytes, w1  # noqa: E402


def main() -> None:
    a = cli()
    flow = Dataflow(f"peers-{a.workload}")
    msgs = op.input("in", flow, KafkaSource([a.bootstrap], [a.src], tail=False,
                                            add_config={"fetch.max.bytes": "52428800"}))
    if a.workload == "w1":
        def transform(m):
            out = w1(m.value)
            return None if out is None else KafkaSinkMessage(m.key, out)

        out = op.filter_map("w1", msgs, transform)
    else:
        keyed = op.key_on("by_user", msgs, lambda m: m.key.decode())

        def count(n, _m):
            n = (n or 0) + 1
            return n, n

        counts = op.stateful_map("count", keyed, count)
        out = op.map("encode", counts, lambda kv: KafkaSinkMessage(kv[0].encode(), long_bytes(kv[1])))
    op.output("out", out, KafkaSink([a.bootstrap], a.dst, add_config={"linger.ms": "20"}))
    run_main(flow)


if __name__ == "__main__":
    main()
