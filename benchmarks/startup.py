"""Start-up: how long until the first output record, kspark against native PySpark.

A 10-record passthrough (input topic → output topic, 2 partitions), each run in a fresh
process, against one local broker that is warm (its ``__consumer_offsets`` and transaction
state topics exist before the first timed run):

- kspark: ``StreamsBuilder().stream(src).to(dst)`` run by ``KafkaStreams`` with
  ``autostop.at=eol``; the session is built first (``spark_session``), then ``start()`` is
  timed on its own, and its steps come from ``SparkApplication.start_timings``.
- native PySpark: Spark's own Kafka source and sink (``spark-sql-kafka-0-10``, fetched from
  Maven as ``benchmarks/peers`` does), ``trigger(availableNow=True)``.

"First output" is the broker's append time (``LogAppendTime``) of the first record of the
output topic, read back with read_committed, minus the time just before the process was
started. Runs alternate between the systems; the table gives the median and min–max.

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--spark-kafka-version 4.2.0]
        [--systems kspark,spark] [--guarantee at_least_once|exactly_once_v2]

It reuses benchmarks/peers (process measurement, the native Spark session), so it needs
psutil: ``pip install -e '.[peers]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "peers"), str(HERE / "peers" / "systems")]

RECORDS = 10
PARTITIONS = 2


# ---- the child processes: one run of one system -------------------------------------------

def _report(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def _instrument_planner(timings: dict) -> None:
    """Time the parts of planning that start Spark work (benchmark-only wrappers): the data
    source's ``load()`` and, while it exists, the Spark job that finds shuffle keys."""
    from kspark._spark import planner

    def timed(name: str, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - t
        return wrapper

    for attr, name in (("_kafka_df", "planning: data source load()"),
                       ("_shuffle_keys", "planning: shuffle-key Spark job")):
        if hasattr(planner, attr):
            setattr(planner, attr, timed(name, getattr(planner, attr)))


def child_kspark(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session

    imported = time.perf_counter() - t0
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    b.stream(a.src, key_serde=raw, value_serde=raw).to(a.dst, key_serde=raw, value_serde=raw)
    t = time.perf_counter()
    spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false"})
    session = time.perf_counter() - t
    detail: dict = {}
    _instrument_planner(detail)
    streams = KafkaStreams(b.build(), {
        "application.id": f"startup-{a.dst}", "bootstrap.servers": a.bootstrap,
        "state.dir": str(Path(a.workdir) / "state"), "autostop.at": "eol",
        "execution.mode": "micro_batch",  # the micro-batch start-up steps it instruments
        "processing.guarantee": a.guarantee}, spark=spark)
    t = time.perf_counter()
    streams.start()
    start = time.perf_counter() - t
    steps = dict(streams._app.start_timings)  # noqa: SLF001 - the application object's timings
    _report({"import_s": imported, "session_s": session, "start_s": start, "start_at": time.time(),
             "steps": steps, "detail": detail})
    streams.await_termination()
    streams.close()
    spark.stop()


def child_spark(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    from spark_native import session as native_session  # benchmarks/peers/systems

    imported = time.perf_counter() - t0
    t = time.perf_counter()
    spark = native_session()
    session = time.perf_counter() - t
    t = time.perf_counter()
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
          .option("subscribe", a.src).option("startingOffsets", "earliest").load())
    q = (df.select("key", "value").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", a.bootstrap).option("topic", a.dst)
         .option("checkpointLocation", str(Path(a.workdir) / "checkpoint"))
         .trigger(availableNow=True).start())
    start = time.perf_counter() - t
    _report({"import_s": imported, "session_s": session, "start_s": start, "start_at": time.time(),
             "steps": {}, "detail": {}})
    q.awaitTermination()
    spark.stop()


# ---- the runner -------------------------------------------------------------------------

def warm_broker(bootstrap: str) -> None:
    """Make the broker warm: a committed group offset creates ``__consumer_offsets``, a
    transactional producer the transaction state log."""
    from confluent_kafka import Producer

    from kspark._kafka.admin import Admin

    Admin(bootstrap).commit_group_offsets("startup-warm-up", {("input", 0): 0})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "startup-warm-up"})
    p.init_transactions(60)
    p.begin_transaction()
    p.commit_transaction(60)


def one_run(system: str, rep: int, a: argparse.Namespace, bootstrap: str, work: str,
            jars: str | None) -> dict:
    import measure  # benchmarks/peers/measure.py

    from kspark._kafka.admin import Admin

    dst = f"out-{system}-{rep}"
    Admin(bootstrap).create_topics({dst: PARTITIONS},
                                   config={"message.timestamp.type": "LogAppendTime"})
    rundir = os.path.join(work, dst)
    os.makedirs(rundir)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", system, "--bootstrap",
           bootstrap, "--src", "input", "--dst", dst, "--workdir", rundir,
           "--guarantee", a.guarantee]
    env = dict(os.environ, PEERS_SPARK_JARS=jars or "")
    log = os.path.join(rundir, "log.txt")
    proc = measure.run(cmd, log, timeout_s=300, env=env)
    text = Path(log).read_text(errors="replace")
    lines = [ln[7:] for ln in text.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"system": system, "ok": False, "error": f"exit {proc.returncode}",
                "log": "\n".join(text.splitlines()[-15:])}
    r = json.loads(lines[-1])
    out = measure.read_output(bootstrap, dst, PARTITIONS)
    ok = out.problem is None and len(out.records) == RECORDS
    r.update(system=system, ok=ok, error=out.problem or (None if ok else
             f"{len(out.records)} records out"), exit_s=proc.end - proc.start)
    if ok:
        r["first_s"] = out.first - proc.start
        r["after_start_s"] = out.first - r["start_at"]  # from start() returning
    return r


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):5.2f} ({min(values):.2f}–{max(values):.2f})"


def table(runs: list[dict], systems: list[str]) -> str:
    rows = [("first output", "first_s"), ("process exit", "exit_s"), ("imports", "import_s"),
            ("SparkSession", "session_s"), ("start()", "start_s"),
            ("start() return → first output", "after_start_s")]
    head = f"{'seconds, median (min–max)':<34}" + "".join(f"{s:>24}" for s in systems)
    lines = [head, "-" * len(head)]
    for label, key in rows:
        cells = [_fmt([r[key] for r in runs if r["system"] == s and r["ok"]]) for s in systems]
        lines.append(f"{label:<34}" + "".join(f"{c:>24}" for c in cells))
    ok = [r for r in runs if r["system"] == "kspark" and r["ok"]]
    if ok:
        lines += ["", "kspark start() by step (SparkApplication.start_timings):"]
        for name in ok[-1]["steps"]:
            lines.append(f"  {name:<44}{_fmt([r['steps'].get(name, 0.0) for r in ok])}")
        for name in ok[-1]["detail"]:
            lines.append(f"  {name:<44}{_fmt([r['detail'].get(name, 0.0) for r in ok])}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--systems", default="kspark,spark")
    ap.add_argument("--guarantee", default="at_least_once")
    ap.add_argument("--spark-kafka-version", default=None,
                    help="spark-sql-kafka-0-10_2.13 version for native Spark (default PySpark's)")
    ap.add_argument("--child", choices=("kspark", "spark"))
    for opt in ("--bootstrap", "--src", "--dst", "--workdir"):
        ap.add_argument(opt)
    a = ap.parse_args()
    if a.child:
        (child_kspark if a.child == "kspark" else child_spark)(a)
        return 0
    import pyspark
    from _common import local_broker, produce
    from run import prepare_spark  # benchmarks/peers/run.py

    systems = [s for s in a.systems.split(",") if s]
    jars = None
    if "spark" in systems:
        skip, jars = prepare_spark(a.spark_kafka_version or pyspark.__version__)
        if skip:
            print(f"SKIPPED spark: {skip['spark']}")
            systems.remove("spark")
    runs: list[dict] = []
    with local_broker(["input"], PARTITIONS) as (bootstrap, work):
        produce(bootstrap, "input", ((f"k{i}".encode(), f"v{i}".encode()) for i in range(RECORDS)))
        warm_broker(bootstrap)
        for rep in range(a.repeat):
            for s in systems[rep % len(systems):] + systems[:rep % len(systems)]:
                r = one_run(s, rep, a, bootstrap, work, jars)
                runs.append(r)
                print(f"  {s:<7} run {rep + 1}: " + (
                    f"first output {r['first_s']:.2f} s, start() {r['start_s']:.2f} s"
                    if r["ok"] else f"FAILED {r['error']}\n{r.get('log', '')}"), flush=True)
    print(f"\n{RECORDS} records, {PARTITIONS} partitions, {a.guarantee}, {a.repeat} runs, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(table(runs, systems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
