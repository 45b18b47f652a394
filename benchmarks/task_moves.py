"""What task moves cost when executors have their own disks (issues 25 and 29).

A stateful count (RocksDB, logged) over 4 input partitions runs on Spark
``local-cluster[N,1,1024]`` at 2 and 4 executors, with ``state.dir`` either one absolute
directory (a shared disk: a task finds its state wherever it runs) or a relative one, which
lands in each executor's own work directory (separate disks, as on a cluster), in both
execution modes:

- ``micro_batch``: an incremental batch run over input written beforehand, B micro-batches;
- ``real_time``: a streaming run whose epochs last ``--epoch-ms``, while the input arrives
  in B rounds, one per epoch (each epoch is a new Spark job: a placement like a batch's).

Reported per run: batches (epochs), task batches (task epochs) that ran elsewhere than the
task's last commit (moves: another executor's ``state.dir``), task batches that restored
records, changelog records restored per batch and per record written, and the median batch
duration (micro-batch) or the mean time a thread took to open its tasks (real-time). Every
output is checked: the final count of every key.

Two topologies: ``count`` (``group_by_key().count()``: the tasks reading Kafka count) and
``rekeyed`` (``group_by(...).count()``: the counting tasks read a shuffle, in real-time
mode a repartition topic).

``python benchmarks/task_moves.py [--records N] [--keys K] [--batches B] [--modes ...]
[--executors 2 4] [--topologies count rekeyed] [--epoch-ms E]``; starts its own broker. Each run is its own process (a
Spark application of its own).
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
             mode: str, guarantee: str, topology: str, records: int, keys: int, batches: int,
             epoch_ms: int) -> None:
    """One run (a subprocess): print a JSON line with its progress and batch durations."""
    import time

    from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder, spark_session
    from kspark._kafka.admin import Admin
    from kspark.state import Stores

    S, L = Serdes.String(), Serdes.Long()
    b = StreamsBuilder()
    stream = b.stream(src, key_serde=S, value_serde=S)
    grouped = (stream.group_by_key() if topology == "count"  # counted where it is read
               else stream.group_by(lambda k, v: k, key_serde=S, value_serde=S))  # shuffled
    (grouped.count(Materialized.as_(Stores.persistent_key_value_store("counts"))
             .with_caching_disabled())
      .to_stream().to(dst, key_serde=S, value_serde=L))
    if master.startswith("sc://"):  # a Spark Connect server, started by main()
        spark = spark_session({"spark.remote": master})
    else:
        spark = spark_session({"spark.master": master, "spark.ui.enabled": "false",
                               "spark.task.maxFailures": "8"})
    config = {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
              "processing.guarantee": guarantee}
    if mode == "micro_batch":
        config.update({"autostop.at": "eol", "execution.mode": "micro_batch",
                       "max.offsets.per.trigger": records // batches,
                       "checkpoint.location": os.path.join(tempfile.gettempdir(),
                                                           f"{app_id}-checkpoint")})
    else:
        config.update({"execution.mode": "real_time", "real_time.epoch.ms": epoch_ms,
                       "commit.interval.ms": 1000})
    streams = KafkaStreams(b.build(), config, spark=spark)
    streams.start()
    if mode == "micro_batch":
        streams.await_termination()
        durations = [p["durationMs"]["triggerExecution"]
                     for p in streams._app._query.current.recentProgress]
    else:  # one round of input per epoch, then until the group has committed all of it
        admin = Admin(bootstrap, 20000)
        per_round = -(-records // batches)
        deadline = time.monotonic() + 900
        for r in range(batches):
            produce(bootstrap, src, min(per_round, records - r * per_round), keys,
                    first=r * per_round)
            while streams.progress()["batches"] <= r and time.monotonic() < deadline:
                streams.await_termination(0.2)
        inputs = [(src, p) for p in range(4)]
        ends = admin.end_offsets(inputs)
        while time.monotonic() < deadline and not streams.await_termination(0.5):
            if all(admin.group_offsets(app_id).get(tp, 0) >= ends[tp] for tp in inputs):
                break
        durations = []
    streams.close()  # then the last epoch is counted too
    print(json.dumps({"progress": streams.progress(), "durations_ms": durations}), flush=True)
    spark.stop()


def produce(bootstrap: str, src: str, records: int, keys: int, first: int = 0) -> None:
    """``records`` records to ``src``: record ``i`` (from ``first``) has key ``k<i % keys>``."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                  "partitioner": "murmur2_random"})
    for i in range(first, first + records):
        p.produce(src, key=f"k{i % keys}".encode(), value=b"x", timestamp=1000 + i)
        if i % 10_000 == 0:
            p.poll(0)
    p.flush(60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=40_000)
    ap.add_argument("--keys", type=int, default=4_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--modes", nargs="+", default=["micro_batch", "real_time"],
                    choices=["micro_batch", "real_time"])
    ap.add_argument("--executors", nargs="+", type=int, default=[2, 4])
    ap.add_argument("--disks", nargs="+", default=["shared", "separate"],
                    choices=["shared", "separate"])
    ap.add_argument("--epoch-ms", type=int, default=4000, help="real_time: one epoch")
    ap.add_argument("--guarantees", nargs="+", default=["at_least_once", "exactly_once_v2"],
                    choices=["at_least_once", "exactly_once_v2"])
    ap.add_argument("--topologies", nargs="+", default=["count", "rekeyed"],
                    choices=["count", "rekeyed"],
                    help="count: counted by the tasks reading Kafka; rekeyed: group_by "
                         "first, so the counting tasks are after a shuffle")
    ap.add_argument("--connect", action="store_true",
                    help="run on a Spark Connect server (one per run, local-cluster[N,1,1024],"
                    " started from the PySpark package): no task placement there")
    args = ap.parse_args()
    from kspark._kafka.admin import Admin
    from kspark._local.broker import LocalBroker, free_port
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
        batch_src = f"moves-{uuid.uuid4().hex[:6]}"
        Admin(bootstrap).create_topics({batch_src: 4})
        produce(bootstrap, batch_src, args.records, args.keys)
        expected = {f"k{k}": args.records // args.keys + (k < args.records % args.keys)
                    for k in range(args.keys)}
        runs = [(t, m, g, n, d) for t in args.topologies for m in args.modes
                for g in args.guarantees for n in args.executors for d in args.disks]
        for topology, mode, guarantee, n, disks in runs:
            app_id = (f"moves-{topology[0]}{mode[0]}{guarantee[0]}{n}-{disks}-"
                      f"{uuid.uuid4().hex[:6]}")
            src, dst = batch_src, f"{app_id}-out"
            if mode == "real_time":  # its input arrives while it runs
                src = f"{app_id}-in"
                Admin(bootstrap).create_topics({src: 4})
            Admin(bootstrap).create_topics({dst: 4})
            state = "kspark-state" if disks == "separate" else str(work / app_id)
            master = f"local-cluster[{n},1,1024]"
            server = None
            if args.connect:
                from kspark._spark.connect_server import LocalConnectServer

                server = LocalConnectServer(work / f"connect-{app_id}", master=master,
                                            conf={"spark.task.maxFailures": "8"}).start()
                master = server.url
            try:
                out = subprocess.run(
                    [sys.executable, __file__, RUN, bootstrap, src, dst, app_id, state,
                     master, mode, guarantee, topology, str(args.records),
                     str(args.keys), str(args.batches), str(args.epoch_ms)],
                    capture_output=True, text=True, timeout=1800,
                    cwd=Path(__file__).resolve().parents[1])
            finally:
                if server is not None:
                    server.stop()
            line = [x for x in out.stdout.splitlines() if x.startswith("{")]
            if out.returncode != 0 or not line:
                raise SystemExit(f"run {app_id} failed:\n{out.stdout}\n"
                                 f"{out.stderr[-3000:]}")
            result = json.loads(line[-1])
            latest = {m.key().decode(): int.from_bytes(m.value(), "big")
                      for m in read_all(bootstrap, dst)}
            written = len(read_all(bootstrap, f"{app_id}-counts-changelog"))
            line = report(topology, mode, guarantee, n, disks, result, written,
                          latest == expected)
            print(line.replace("task_moves:", "task_moves (Spark Connect):") if args.connect
                  else line, flush=True)
    finally:
        broker.stop()
        import shutil

        for path in (set(spark_work.iterdir()) if spark_work.exists() else set()) - before:
            shutil.rmtree(path, ignore_errors=True)


def report(topology: str, mode: str, guarantee: str, n: int, disks: str, result: dict,
           written: int, exact: bool) -> str:
    """One run's line (``written``: the changelog records the run wrote)."""
    prog = result["progress"]
    batches = max(1, prog["batches"])
    # task batches per batch (or task epochs per epoch): one task per partition and
    # sub-topology (rekeyed: 4 reading Kafka, 4 counting after the shuffle)
    tasks = 4 if topology == "count" else 8
    unit, one = ("batches", "batch") if mode == "micro_batch" else ("epochs", "epoch")
    took = (f"median batch {statistics.median(result['durations_ms']):.0f} ms"
            if result["durations_ms"] else f"{prog.get('tasks_kept', 0)} tasks kept open")
    return (f"task_moves: {topology}, {mode}, {guarantee}, {n} executors, {disks} disk: "
            f"{prog['batches']} {unit}, "
            f"{prog.get('task_moves', 0)} of {batches * tasks} task {unit} moved "
            f"({100 * prog.get('task_moves', 0) / (batches * tasks):.1f} %), "
            f"{prog['task_restores']} restored, {prog['restored_records'] / batches:.0f} "
            f"changelog records restored per {one} "
            f"({100 * prog['restored_records'] / max(1, written):.1f} % of the {written} "
            f"written), {took}; "
            f"output {'exact' if exact else 'WRONG'}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == RUN:
        a = sys.argv[2:]
        app_main(*a[:9], *map(int, a[9:]))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        main()
