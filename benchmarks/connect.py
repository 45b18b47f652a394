"""kspark on Spark Connect against the classic session, in the same run (issue 43).

W1 of the peers benchmark (filter + map on JSON values, ``benchmarks/peers/workload.py``)
over the same input, as an incremental batch run (``autostop.at=eol``), in each execution
mode on a classic ``local[2]`` session and on a local Spark Connect server (``local[2]``,
started from the PySpark package): whole-run throughput (records/s, start to stop, start-up
included) and the Connect/classic ratio. Latency on Connect: ``latency.py --connect``.

    python benchmarks/connect.py [--records 300000] [--modes real_time micro_batch]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
PEERS = str(Path(__file__).resolve().parent / "peers")
sys.path.insert(0, PEERS)
os.environ["PYTHONPATH"] = PEERS  # Spark's Python workers import workload.w1 too

from _common import local_broker, produce, timed_run  # noqa: E402
from workload import Expected, generate, w1  # noqa: E402

from kspark import Serdes, StreamsBuilder, spark_session  # noqa: E402


def topology(src: str, dst: str):
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    (b.stream(src, key_serde=raw, value_serde=raw).map_values(w1)
     .filter(lambda k, v: v is not None).to(dst, key_serde=raw, value_serde=raw))
    return b.build()


def run(bootstrap: str, spark, work: str, mode: str, records: int, label: str) -> float:
    seconds = timed_run(topology("w1-in", f"w1-out-{label}-{mode}"), {
        "application.id": f"w1-{label}-{mode}", "bootstrap.servers": bootstrap,
        "state.dir": os.path.join(work, f"state-{label}-{mode}"), "execution.mode": mode,
        "producer.linger.ms": 20, "producer.batch.num.messages": 10000,
        **({"max.offsets.per.trigger": 100_000} if mode == "micro_batch" else {})}, spark)
    rate = records / seconds
    print(f"{label:8} {mode:11} {seconds:6.1f} s  {rate:9,.0f} records/s", flush=True)
    return rate


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--modes", nargs="+", default=["real_time", "micro_batch"])
    a = ap.parse_args()
    from kspark._spark.connect_server import LocalConnectServer

    outs = [f"w1-out-{label}-{m}" for label in ("classic", "connect") for m in a.modes]
    with local_broker(["w1-in", *outs], 2) as (bootstrap, work):
        produce(bootstrap, "w1-in", generate(a.records, Expected()))
        spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": "2"})
        classic = {m: run(bootstrap, spark, work, m, a.records, "classic") for m in a.modes}
        spark.stop()
        with LocalConnectServer(os.path.join(work, "connect"), master="local[2]",
                                conf={"spark.sql.shuffle.partitions": "2"},
                                env={"PYTHONPATH": PEERS}) as server:
            remote = spark_session({"spark.remote": server.url})
            connect = {m: run(bootstrap, remote, work, m, a.records, "connect")
                       for m in a.modes}
            remote.stop()
    for m in a.modes:
        print(f"{m}: Connect/classic throughput {connect[m] / classic[m]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
