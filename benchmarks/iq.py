"""Interactive queries (issue 45): key-lookup latency while the application processes a
steady input, and what 100 queries/s cost its processing rate, in the same run.

Per execution mode, a count per key (1,000 keys; ``Materialized.as_("counts")``, RocksDB)
under exactly_once_v2:

1. latency: a producer writes ``--rate`` records/s (default 5,000) for ``--seconds`` into a
   2-partition topic while client threads ask ``store("counts").get(key)`` for random
   keys at ``--qps`` (default 100, from 4 threads); p50 / p99 / max of the lookups after
   ``--warmup`` s, and how many failed;
2. throughput: ``--records`` records written beforehand, processed as an incremental batch
   run (``autostop.at=eol``) without queries, with ``--qps`` lookups, and without again (so
   the order favours neither); whole-run records/s, and the ratio of the run with queries
   to the mean of the two without.

    .venv/bin/python benchmarks/iq.py [--modes real_time micro_batch] [--rate 5000]
        [--seconds 30] [--qps 100] [--records 300000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import local_broker, produce  # noqa: E402
from latency import steady_input  # noqa: E402

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,  # noqa: E402
                    StoreQueryParameters, StreamsBuilder, spark_session)
from kspark._kafka.admin import Admin  # noqa: E402

S = Serdes.String()
KEYS = 1000
ASKERS = 4  # client threads sharing the query rate (a lookup waits for its answer)
PARAMS = StoreQueryParameters.from_name_and_type("counts", QueryableStoreTypes.key_value_store())


def topology(src: str):
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).group_by_key().count(Materialized.as_("counts"))
    return b.build()


def config(bootstrap: str, work: str, mode: str, eol: bool) -> dict:
    return {"application.id": f"iq-{mode}-{uuid.uuid4().hex[:6]}", "bootstrap.servers": bootstrap,
            "state.dir": f"{work}/state", "execution.mode": mode,
            "processing.guarantee": "exactly_once_v2", "autostop.at": "eol" if eol else "none",
            **({"max.offsets.per.trigger": 50_000} if mode == "micro_batch" else {})}


class Asker(threading.Thread):
    """Asks ``store.get`` of random keys at ``qps`` until stopped; keeps (time, ms, ok)."""

    def __init__(self, streams: KafkaStreams, qps: float, seed: int = 7):
        super().__init__(daemon=True)
        self.streams, self.qps, self.seed = streams, qps, seed
        self.samples: list[tuple[float, float, bool]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        store, rng = None, random.Random(self.seed)
        start, n = time.monotonic(), 0
        while not self.stop.is_set():
            n += 1
            self.stop.wait(max(0.0, start + n / self.qps - time.monotonic()))
            t0 = time.perf_counter()
            try:
                store = store or self.streams.store(PARAMS)
                store.get(f"k{rng.randrange(KEYS)}")
                ok = True
            except Exception:  # noqa: BLE001 - counted as a failed lookup
                ok = False
            self.samples.append((time.monotonic(), (time.perf_counter() - t0) * 1000, ok))


def latency(bootstrap: str, spark, work: str, mode: str, rate: int, seconds: float,
            warmup: float, qps: int) -> str:
    src = f"iq-lat-{mode}-{uuid.uuid4().hex[:6]}"
    Admin(bootstrap).create_topics({src: 2})
    streams = KafkaStreams(topology(src), config(bootstrap, work, mode, eol=False), spark=spark)
    streams.start()
    askers = [Asker(streams, qps / ASKERS, seed) for seed in range(ASKERS)]
    t0 = time.monotonic()
    for a in askers:
        a.start()
    sent = steady_input(bootstrap, src, rate, seconds)
    for a in askers:
        a.stop.set()
        a.join(30)
    streams.close()
    samples = [s for a in askers for s in a.samples]
    ms = sorted(m for t, m, ok in samples if ok and t - t0 >= warmup)
    failed = sum(1 for t, _, ok in samples if not ok and t - t0 >= warmup)
    if not ms:
        return f"{mode:<11} latency: no lookup succeeded ({failed} failed)"
    return (f"{mode:<11} key lookups while processing {rate} records/s ({sent} sent): "
            f"p50 {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms, "
            f"max {ms[-1]:.1f} ms over {len(ms)} lookups at {qps}/s; {failed} failed")


def throughput(bootstrap: str, spark, work: str, mode: str, records: int, qps: int) -> str:
    src = f"iq-thr-{mode}-{uuid.uuid4().hex[:6]}"
    Admin(bootstrap).create_topics({src: 2})
    produce(bootstrap, src, ((b"k%d" % (i % KEYS), b"x") for i in range(records)))
    rates = []
    for with_queries in (False, True, False):
        streams = KafkaStreams(topology(src), config(bootstrap, work, mode, eol=True),
                               spark=spark)
        start = time.perf_counter()
        streams.start()
        askers = [Asker(streams, qps / ASKERS, seed) for seed in range(ASKERS)]
        for a in askers if with_queries else ():
            a.start()
        streams.await_termination()
        elapsed = time.perf_counter() - start
        for a in askers:
            a.stop.set()
        streams.close()
        rates.append(records / elapsed)
    without = (rates[0] + rates[2]) / 2
    return (f"{mode:<11} whole run over {records} records: {rates[0]:,.0f} and {rates[2]:,.0f} "
            f"records/s without queries, {rates[1]:,.0f} with {qps} lookups/s (ratio "
            f"{rates[1] / without:.2f})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", nargs="+", default=["real_time", "micro_batch"])
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--qps", type=int, default=100)
    ap.add_argument("--records", type=int, default=300_000)
    a = ap.parse_args()
    with local_broker(["iq-unused"], 1) as (bootstrap, work):
        spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false"})
        lines = []
        for mode in a.modes:
            lines.append(latency(bootstrap, spark, work, mode, a.rate, a.seconds, a.warmup,
                                 a.qps))
            print(lines[-1], flush=True)
            lines.append(throughput(bootstrap, spark, work, mode, a.records, a.qps))
            print(lines[-1], flush=True)
        spark.stop()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
