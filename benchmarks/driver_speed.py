"""Benchmark: the TopologyTestDriver's rate on ``group_by_key().count()``, with the DSL's
default persistent (RocksDB) store and with ``Materialized...in_memory()``, side by side.

No broker, no Spark: the driver runs the engine in this process, committing after each
record as Java's TopologyTestDriver does. Not a test: run it on purpose:

    .venv/bin/python benchmarks/driver_speed.py [--records 3000 10000] [--keys 100]

Prints a table of records/s per store and record count, the persistent/in-memory ratio, and
how long reading the outputs one record at a time takes (``read_key_value``, as tests read).
"""

from __future__ import annotations

import argparse
import sys
import time

from kspark import Materialized, Serdes, StreamsBuilder
from kspark.testing import TopologyTestDriver

S = Serdes.String()


def count_topology(in_memory: bool):
    """``in`` -> group_by_key().count() -> ``out``, over a persistent or an in-memory store."""
    b = StreamsBuilder()
    grouped = b.stream("in", key_serde=S, value_serde=S).group_by_key()
    counts = (grouped.count(Materialized.as_("counts").in_memory()) if in_memory
              else grouped.count(Materialized.as_("counts")))
    counts.to_stream().to("out", value_serde=Serdes.Long())
    return b.build()


def rate(n: int, keys: int, in_memory: bool) -> tuple[float, float, list]:
    """(records/s piping ``n`` records over ``keys`` keys, ms to read the outputs one by one,
    the outputs) in a fresh driver."""
    with TopologyTestDriver(count_topology(in_memory)) as driver:
        topic = driver.create_input_topic("in", S, S)
        out = driver.create_output_topic("out", S, Serdes.Long())
        records = [(f"k{i % keys}", "v") for i in range(n)]
        began = time.perf_counter()
        for key, value in records:
            topic.pipe_input(key, value)
        piped = time.perf_counter()
        outputs = [out.read_key_value() for _ in range(out.get_queue_size())]
        read_ms = (time.perf_counter() - piped) * 1000
        return n / (piped - began), read_ms, outputs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, nargs="+", default=[3000, 10000])
    ap.add_argument("--keys", type=int, default=100)
    args = ap.parse_args()
    rate(200, args.keys, False)  # warm-up: imports, RocksDB's first open
    print(f"group_by_key().count() through the TopologyTestDriver, {args.keys} keys")
    print(f"{'records':>8}  {'persistent rec/s':>16}  {'in-memory rec/s':>15}  {'ratio':>5}"
          f"  {'read outputs ms':>15}")
    for n in args.records:
        persistent, read_ms, out_p = rate(n, args.keys, False)
        memory, _, out_m = rate(n, args.keys, True)
        if out_p != out_m:
            print(f"outputs differ: {len(out_p)} persistent against {len(out_m)} in memory")
            return 1
        print(f"{n:>8}  {persistent:>16,.0f}  {memory:>15,.0f}  {persistent / memory:>5.2f}"
              f"  {read_ms:>15,.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
