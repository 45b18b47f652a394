"""What task moves cost when executors have their own disks (issue 25).

A stateful count (RocksDB, logged) over 4 input partitions runs as an incremental batch run
on Spark ``local-cluster[N,1,1024]`` at 2 and 4 executors, with ``state.dir`` either one
absolute directory (a shared disk: a task finds its state wherever it runs) or a relative
one, which lands in each executor's own work directory (separate disks, as on a cluster).
Reported per run: micro-batches, task batches that restored records (mostly tasks that moved
to an executor without their state, or with a stale copy), changelog records restored per
batch, records restored per changelog record written, and the median batch duration. Every
output is checked: the final count of every key.

``python benchmarks/task_moves.py [--records N] [--keys K] [--batches B]``; starts its own
broker. Each run is its own process (a Spark application of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

RUN = "--run"


def app_main(bootstrap: str, src: str, dst: str, app_id: str, state_dir: str, master: str,
             max_offsets: int) -> None:
    """One run (a subprocess): print a JSON line with its progress and batch durations."""
    from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder, spark_session
    from kspark.state import Stores

    S, L = Serdes.String(), Serdes.Long()
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .count(Materialized.as_(Stores.persistent_key_value_store("counts"))
             .with_caching_disabled())
      .to_stream().to(dst, key_serde=S, value_serde=L))
    spark = spark_session({"spark.master": master, "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8"})
    streams = KafkaStreams(b.build(), {
        "application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
        "checkpoint.location": os.path.join(tempfile.gettempdir(), f"{app_id}-checkpoint"),
        "autostop.at": "eol", "max.offsets.per.trigger": max_offsets}, spark=spark)
    streams.start()
    streams.await_termination()
    durations = [p["durationMs"]["triggerExecution"] for p in streams._app._query.recentProgress]
    print(json.dumps({"progress": streams.progress(), "durations_ms": durations}), flush=True)
    streams.close()
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=40_000)
    ap.add_argument("--keys", type=int, default=4_000)
    ap.add_argument("--batches", type=int, default=10)
    args = ap.parse_args()
    from confluent_kafka import Producer

    from kspark._kafka.admin import Admin
    from kspark._kafka.broker import LocalBroker, free_port
    from tests.integration.soak import read_all

    import pyspark

    # local-cluster's executors run in <pyspark>/work/<app>/<executor>: a relative state.dir
    # lands there, one per executor; what the runs leave there is removed at the end
    spark_work = Path(pyspark.__file__).parent / "work"
    before = set(spark_work.iterdir()) if spark_work.exists() else set()
    work = Path(tempfile.mkdtemp(prefix="kspark-moves-"))
    broker = LocalBroker(work / "broker", port=free_port())
    bootstrap = broker.start()
    try:
        src = f"moves-{uuid.uuid4().hex[:6]}"
        Admin(bootstrap).create_topics({src: 4})
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                      "partitioner": "murmur2_random"})
        for i in range(args.records):
            p.produce(src, key=f"k{i % args.keys}".encode(), value=b"x", timestamp=1000 + i)
            if i % 10_000 == 0:
                p.poll(0)
        p.flush(60)
        expected = {f"k{k}": args.records // args.keys + (k < args.records % args.keys)
                    for k in range(args.keys)}
        for n in (2, 4):
            for disks in ("shared", "separate"):
                app_id = f"moves-{n}-{disks}-{uuid.uuid4().hex[:6]}"
                dst = f"{app_id}-out"
                Admin(bootstrap).create_topics({dst: 4})
                state = "kspark-state" if disks == "separate" else str(work / app_id)
                out = subprocess.run(
                    [sys.executable, __file__, RUN, bootstrap, src, dst, app_id, state,
                     f"local-cluster[{n},1,1024]", str(args.records // args.batches)],
                    capture_output=True, text=True, timeout=1800,
                    cwd=Path(__file__).resolve().parents[1])
                line = [x for x in out.stdout.splitlines() if x.startswith("{")]
                if out.returncode != 0 or not line:
                    raise SystemExit(f"run {app_id} failed:\n{out.stdout}\n{out.stderr[-3000:]}")
                result = json.loads(line[-1])
                latest = {m.key().decode(): int.from_bytes(m.value(), "big")
                          for m in read_all(bootstrap, dst)}
                prog = result["progress"]
                batches = max(1, prog["batches"])
                print(f"task_moves: {n} executors, {disks} disk: {prog['batches']} batches, "
                      f"{prog['task_restores']} task batches restored "
                      f"({prog['task_restores'] / batches:.1f} per batch), "
                      f"{prog['restored_records'] / batches:.0f} changelog records restored "
                      f"per batch ({prog['restored_records'] / args.records:.2f}x of those "
                      f"written), median batch "
                      f"{statistics.median(result['durations_ms']):.0f} ms; output "
                      f"{'exact' if latest == expected else 'WRONG'}", flush=True)
    finally:
        broker.stop()
        import shutil

        for path in (set(spark_work.iterdir()) if spark_work.exists() else set()) - before:
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == RUN:
        a = sys.argv[2:]
        app_main(a[0], a[1], a[2], a[3], a[4], a[5], int(a[6]))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        main()
