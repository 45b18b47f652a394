"""Start-up: how long until the first output record, kspark against native PySpark.

A 10-record passthrough (input topic → output topic, 2 partitions), each run in a fresh
process, against one local broker that is warm (its ``__consumer_offsets`` and transaction
state topics exist before the first timed run):

- kspark: ``StreamsBuilder().stream(src).to(dst)`` run by ``KafkaStreams`` with
  ``autostop.at=eol``, once per execution mode (``--modes``: a column each); the session is
  built first (``spark_session``), then ``start()`` is timed on its own, and its steps come
  from ``SparkApplication.start_timings``.
- native PySpark: Spark's own Kafka source and sink (``spark-sql-kafka-0-10``, fetched from
  Maven as ``benchmarks/peers`` does), ``trigger(availableNow=True)``.

"First output" is the broker's append time (``LogAppendTime``) of the first record of the
output topic, read back with read_committed, minus the time just before the process was
started. Runs alternate between the systems; the table gives the median and min–max.

Before the runs, the imports on the start path are timed, each in a fresh process (median
of ``--import-repeat``): the driver's (``kspark``'s names, then the modules ``start()``
loads) and a Python worker's (what kspark's worker daemon preloads before it forks, then
what a forked worker still imports: a real-time stream thread, a micro-batch task).

``--src DIR`` runs kspark from another checkout's ``src`` (``PYTHONPATH``, which Spark's
workers inherit), for before/after figures against an older commit::

    git worktree add /tmp/startup-old <commit>
    .venv/bin/python benchmarks/startup.py --systems kspark --src /tmp/startup-old/src

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--spark-kafka-version 4.2.0]
        [--systems kspark,spark] [--modes micro_batch,real_time] [--src DIR]
        [--guarantee at_least_once|exactly_once_v2]

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
    source's ``load()``, while it exists the Spark job that finds shuffle keys, and the
    real-time threads' placement preparation (it runs after ``start()`` returned)."""
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
    try:  # real-time: the placement preparation before the stream threads' first jobs
        from kspark._spark.realtime.thread_jobs import ThreadJobs
    except ImportError:  # an older checkout (--src)
        return
    ThreadJobs.prepare = timed("real-time: ThreadJobs.prepare (placement)", ThreadJobs.prepare)


def child_kspark(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session

    imported = time.perf_counter() - t0
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    b.stream(a.topic, key_serde=raw, value_serde=raw).to(a.dst, key_serde=raw, value_serde=raw)
    t = time.perf_counter()
    spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                           "execution.mode": a.mode})  # micro-batch: its source prepared
    session = time.perf_counter() - t
    detail: dict = {}
    _instrument_planner(detail)
    streams = KafkaStreams(b.build(), {
        "application.id": f"startup-{a.dst}", "bootstrap.servers": a.bootstrap,
        "state.dir": str(Path(a.workdir) / "state"), "autostop.at": "eol",
        "execution.mode": a.mode,
        "processing.guarantee": a.guarantee}, spark=spark)
    t = time.perf_counter()
    streams.start()
    start = time.perf_counter() - t
    started_at = time.time()
    steps = dict(streams._app.start_timings)  # noqa: SLF001 - the application object's timings
    streams.await_termination()  # reported after: real-time threads prepare after start()
    _report({"import_s": imported, "session_s": session, "start_s": start, "start_at": started_at,
             "steps": steps, "detail": detail})
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
          .option("subscribe", a.topic).option("startingOffsets", "earliest").load())
    q = (df.select("key", "value").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", a.bootstrap).option("topic", a.dst)
         .option("checkpointLocation", str(Path(a.workdir) / "checkpoint"))
         .trigger(availableNow=True).start())
    start = time.perf_counter() - t
    _report({"import_s": imported, "session_s": session, "start_s": start, "start_at": time.time(),
             "steps": {}, "detail": {}})
    q.awaitTermination()
    spark.stop()


# the modules the driver's start() loads after kspark's names, and a worker's: what
# kspark's daemon preloads before forking (_spark/daemon.py), then what a forked worker
# still imports for a real-time stream thread and for a micro-batch task
DRIVER_START = ("kspark._spark.app", "kspark._spark.modes", "kspark._spark.realtime.query",
                "kspark._spark.micro_batch", "kspark._spark.planner")
WORKER_PRELOAD = ("pyspark.worker", "pyarrow", "pyarrow.compute", "confluent_kafka",
                  "kspark._spark.stage", "kspark._spark.source")
WORKER_FORKED = {"worker: real-time stream thread": ("kspark._spark.realtime.stream_thread",),
                 "worker: micro-batch task": ("kspark._spark.task_batch",)}


def child_imports(a: argparse.Namespace) -> None:
    """Seconds each group of imports takes in this fresh process, in order."""
    import importlib

    def timed(names) -> float:
        t = time.perf_counter()
        for n in names:
            importlib.import_module(n)
        return time.perf_counter() - t

    if a.side == "driver":
        out = {"driver: kspark's names": _names_s(),
               "driver: start() modules": timed(DRIVER_START)}
    else:
        out = {"worker: daemon preload": timed(WORKER_PRELOAD)}
        out.update((k, timed(v)) for k, v in WORKER_FORKED.items())
    _report(out)


def _names_s() -> float:
    t = time.perf_counter()
    from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session  # noqa: F401

    return time.perf_counter() - t


def import_times(repeat: int, env: dict) -> dict[str, list[float]]:
    import subprocess

    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        for side in ("driver", "worker"):
            text = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child", "imports",
                 "--side", side], env=env, capture_output=True, text=True, check=True).stdout
            line = [ln[7:] for ln in text.splitlines() if ln.startswith("RESULT ")][-1]
            for k, v in json.loads(line).items():
                out.setdefault(k, []).append(v)
    return out


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

    child, _, mode = system.partition(":")
    dst = f"out-{child}-{mode or 'native'}-{rep}"
    Admin(bootstrap).create_topics({dst: PARTITIONS},
                                   config={"message.timestamp.type": "LogAppendTime"})
    rundir = os.path.join(work, dst)
    os.makedirs(rundir)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", child, "--bootstrap",
           bootstrap, "--topic", "input", "--dst", dst, "--workdir", rundir,
           "--guarantee", a.guarantee, "--mode", mode or "micro_batch"]
    env = dict(child_env(a), PEERS_SPARK_JARS=jars or "")
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


def child_env(a: argparse.Namespace) -> dict:
    """The children's environment: kspark from ``--src`` if given (Spark's workers inherit
    ``PYTHONPATH``)."""
    if not a.src:
        return dict(os.environ)
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=a.src + (os.pathsep + path if path else ""))


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):5.2f} ({min(values):.2f}–{max(values):.2f})"


def import_table(times: dict[str, list[float]]) -> str:
    lines = ["imports on the start path, seconds, median (min–max) of fresh processes:"]
    lines += [f"  {name:<44}{_fmt(v)}" for name, v in times.items()]
    return "\n".join(lines)


def table(runs: list[dict], systems: list[str]) -> str:
    rows = [("first output", "first_s"), ("process exit", "exit_s"), ("imports", "import_s"),
            ("SparkSession", "session_s"), ("start()", "start_s"),
            ("start() return → first output", "after_start_s")]
    head = f"{'seconds, median (min–max)':<34}" + "".join(f"{s:>24}" for s in systems)
    lines = [head, "-" * len(head)]
    for label, key in rows:
        cells = [_fmt([r[key] for r in runs if r["system"] == s and r["ok"]]) for s in systems]
        lines.append(f"{label:<34}" + "".join(f"{c:>24}" for c in cells))
    for s in systems:
        ok = [r for r in runs if r["system"] == s and r["ok"] and s.startswith("kspark")]
        if ok:
            lines += ["", f"{s} start() by step (SparkApplication.start_timings):"]
            for name in ok[-1]["steps"]:
                lines.append(f"  {name:<44}{_fmt([r['steps'].get(name, 0.0) for r in ok])}")
            for name in ok[-1]["detail"]:
                lines.append(f"  {name:<44}{_fmt([r['detail'].get(name, 0.0) for r in ok])}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--systems", default="kspark,spark")
    ap.add_argument("--modes", default="micro_batch,real_time",
                    help="kspark's execution modes, a column each")
    ap.add_argument("--src", default=None,
                    help="run kspark from this checkout's src directory (an older commit)")
    ap.add_argument("--import-repeat", type=int, default=5)
    ap.add_argument("--guarantee", default="at_least_once")
    ap.add_argument("--spark-kafka-version", default=None,
                    help="spark-sql-kafka-0-10_2.13 version for native Spark (default PySpark's)")
    ap.add_argument("--child", choices=("kspark", "spark", "imports"))
    for opt in ("--bootstrap", "--topic", "--dst", "--workdir", "--mode", "--side"):
        ap.add_argument(opt)
    a = ap.parse_args()
    if a.child:
        {"kspark": child_kspark, "spark": child_spark, "imports": child_imports}[a.child](a)
        return 0
    import pyspark
    from _common import local_broker, produce
    from run import prepare_spark  # benchmarks/peers/run.py

    modes = [m for m in a.modes.split(",") if m]
    systems = [f"kspark:{m}" if s == "kspark" else s
               for s in a.systems.split(",") if s for m in (modes if s == "kspark" else [""])]
    imports = import_times(a.import_repeat, child_env(a)) if a.import_repeat else {}
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
    if imports:
        print("\n" + import_table(imports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
