"""Side-by-side benchmark: kspark and four peers on the same input, on this machine.

Optional, not part of ``make test``; ``make bench-peers`` runs it. Each system runs in its
own process (its peak RSS is that of the whole process tree), against one local broker,
reading the same input topic and writing a fresh output topic that is read back and
verified. Runs are interleaved: the order of the systems rotates with each repeat.

    .venv/bin/python benchmarks/peers/run.py [--records 1000000] [--repeat 3]
        [--systems raw,quix,bytewax,spark,kspark,kspark_rt] [--workloads w1,w2,w3,w4]

W3 (windowed count) and W4 (stream-table join) are run by raw, spark, kspark and kspark_rt
only; ``--workloads`` defaults to W1 and W2, the workloads all six systems run.

Native Spark's Kafka connector is resolved (Ivy) before the runs, unless ``PEERS_SPARK_JARS``
already names its jars (the ``JARS=`` line of ``systems/spark_native.py --resolve VERSION``).

Quix Streams and Bytewax are installed into their own virtualenv (benchmarks/peers/.venv,
made on first use), as they pin other confluent-kafka versions than kspark.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

try:
    import psutil
except ImportError:
    sys.exit("psutil is missing: .venv/bin/pip install -e '.[peers]' (or make bench-peers)")
import pyspark  # noqa: E402
from _common import local_broker, produce, producer, send  # noqa: E402  (benchmarks/_common.py)

import measure  # noqa: E402
import report  # noqa: E402
from kspark._kafka.admin import Admin  # noqa: E402
from workload import USERS_TOPIC, WORKLOADS, Expected, generate, users  # noqa: E402

PEERS_VENV = HERE / ".venv"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
SYSTEMS = {  # name: (script, runs in the peers' virtualenv)
    "raw": ("raw_loop.py", False),
    "quix": ("quix_app.py", True),
    "bytewax": ("bytewax_flow.py", True),
    "spark": ("spark_native.py", False),
    "kspark": ("kspark_app.py", False),
    "kspark_rt": ("kspark_rt_app.py", False),  # execution.mode=real_time
}
AFTER_S = 0.5  # "after start-up" begins this long after the first output's append
ONLY = {"w3": ("raw", "spark", "kspark", "kspark_rt"),  # the systems that run a workload
        "w4": ("raw", "spark", "kspark", "kspark_rt")}
PEER_PACKAGES = {"quix": ("quixstreams==3.28.1", "quixstreams"),
                 "bytewax": ("bytewax==0.21.1", "bytewax")}


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def prepare_peers(systems: list[str]) -> dict[str, str]:
    """Make the peers' virtualenv and install what ``systems`` need; returns {system: skip reason}."""
    wanted = [s for s in systems if s in PEER_PACKAGES]
    skip: dict[str, str] = {}
    if not wanted:
        return skip
    if not PEERS_PYTHON.exists():
        print(f"creating {PEERS_VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run([str(PEERS_PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                       check=False)
    for s in wanted:
        requirement, module = PEER_PACKAGES[s]
        marker = PEERS_VENV / f".installed-{requirement}"
        if not marker.exists():
            print(f"installing {requirement} into {PEERS_VENV} ...", flush=True)
            r = subprocess.run([str(PEERS_PYTHON), "-m", "pip", "install", "--quiet", requirement],
                               capture_output=True, text=True)
            if r.returncode != 0:
                skip[s] = f"pip install {requirement} failed: {_tail(r.stderr, 5)}"
                continue
            marker.touch()
        r = subprocess.run([str(PEERS_PYTHON), "-c", f"import {module}"], capture_output=True, text=True)
        if r.returncode != 0:
            skip[s] = f"import {module} failed: {_tail(r.stderr, 5)}"
    return skip


def prepare_spark(version: str) -> tuple[dict[str, str], str | None]:
    """Let Ivy fetch Spark's Kafka connector once, untimed; returns (skip, the jars' paths)."""
    print(f"resolving spark-sql-kafka-0-10_2.13:{version} (Ivy) ...", flush=True)
    r = subprocess.run([sys.executable, str(HERE / "systems" / "spark_native.py"), "--resolve",
                        version], capture_output=True, text=True, timeout=900)
    jars = [ln[5:] for ln in r.stdout.splitlines() if ln.startswith("JARS=")]
    if r.returncode != 0 or not jars:
        found = re.findall(r"unresolved dependency: [^\]]*", r.stdout + r.stderr)
        why = found[-1] if found else _tail(r.stdout + r.stderr, 8)
        return {"spark": f"could not get spark-sql-kafka-0-10_2.13:{version} from Maven Central "
                         f"({why}); --spark-kafka-version picks another connector version"}, None
    return {}, jars[-1]


def produce_users(bootstrap: str) -> None:
    """W4's table: every user's row to ``USERS_TOPIC``."""
    p = producer(bootstrap)
    for key, value, ts in users():
        send(p, USERS_TOPIC, key, value, ts)
    p.flush(120)


def one_run(system: str, workload: str, repeat: int, args, bootstrap: str, work: str,
            expected: Expected, spark_jars: str | None) -> dict:
    script, in_peers = SYSTEMS[system]
    dst = f"out-{workload}-{system}-{repeat}"
    Admin(bootstrap).create_topics({dst: args.partitions},
                                   config={"message.timestamp.type": "LogAppendTime"})
    rundir = os.path.join(work, dst)
    os.makedirs(rundir)
    python = str(PEERS_PYTHON) if in_peers else sys.executable
    cmd = [python, str(HERE / "systems" / script), "--workload", workload, "--bootstrap", bootstrap,
           "--src", "input", "--dst", dst, "--records", str(args.records),
           "--partitions", str(args.partitions), "--workdir", rundir]
    # PYTHONPATH: Spark's Python workers unpickle kspark's functions from workload.py
    # (a PYTHONPATH of the caller's comes after: e.g. another checkout's src to compare with)
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PEERS_SPARK_JARS=spark_jars or "", PYTHONPATH=path)
    log = os.path.join(rundir, "log.txt")
    proc = measure.run(cmd, log, timeout_s=180 + args.records / 2000, env=env)
    result = {"system": system, "workload": workload, "repeat": repeat, "ok": False, "error": None,
              "outputs": None, "wall_s": None, "first_s": None, "rate_whole": None,
              "rate_after": None, "exit_s": proc.end - proc.start,
              "peak_rss_mb": proc.peak_rss / 2**20}
    if proc.timed_out or proc.returncode != 0:
        result["error"] = "timed out" if proc.timed_out else f"exit code {proc.returncode}"
        result["log_tail"] = _tail(Path(log).read_text(errors="replace"))
        Admin(bootstrap).delete_topics([dst])
        return result
    out = measure.read_output(bootstrap, dst, args.partitions)
    result["outputs"] = len(out.records)
    result["error"] = measure.verify(workload, out, expected)
    if out.records and not out.problem:
        n, outputs = args.records, len(out.records)
        rates = {"wall_s": out.last - proc.start, "first_s": out.first - proc.start,
                 "rate_whole": n / (out.last - proc.start), "rate_after": None}
        # input records/s after start-up: from AFTER_S past the first output to the last,
        # counting the input records processed in that time (by what the output reflects),
        # so that a system emitting in bursts (one per micro-batch) is not credited with the
        # records of its first burst
        t0 = out.first + AFTER_S
        if out.last > t0 and outputs > 1:
            done = measure.processed_by(workload, out, t0, n, args.partitions)
            rates["rate_after"] = (n - done) / (out.last - t0)
        if result["error"] is None:
            result.update(ok=True, **rates)
        else:  # kept apart: the figures of a run whose output is wrong
            result["unverified"] = rates
    Admin(bootstrap).delete_topics([dst])
    return result


def progress(r: dict) -> str:
    head = f"  {r['workload']} {r['system']:<8} repeat {r['repeat'] + 1}:"
    if not r["ok"]:
        u = r.get("unverified")
        figures = "" if not u else (
            f" [unverified: {u['wall_s']:.1f}s to last output, first output {u['first_s']:.1f}s, "
            f"{u['rate_whole']:,.0f} rec/s whole, "
            f"{u['rate_after'] or 0:,.0f} rec/s after start-up]")
        return (f"{head} FAILED ({r['error']}){figures}"
                + (f"\n{r['log_tail']}" if r.get("log_tail") else ""))
    after = f"{r['rate_after']:,.0f}" if r["rate_after"] else "-"
    return (f"{head} {r['wall_s']:.1f}s to last output, first output {r['first_s']:.1f}s, "
            f"{r['rate_whole']:,.0f} rec/s whole, {after} rec/s after start-up, "
            f"peak RSS {r['peak_rss_mb']:,.0f} MB")


def versions(systems: list[str]) -> dict[str, str]:
    import confluent_kafka

    import kspark

    v = {"python": platform.python_version(), "pyspark": pyspark.__version__,
         "confluent-kafka": confluent_kafka.version()[0], "kspark": kspark.__version__}
    for s in systems:
        if s in PEER_PACKAGES:
            name = PEER_PACKAGES[s][1]
            r = subprocess.run([str(PEERS_PYTHON), "-c", "import importlib.metadata as m; "
                                f"print(m.version('{name}'), m.version('confluent-kafka'))"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                mine, ck = r.stdout.split()
                v[name] = mine
                v["confluent-kafka (peers)"] = ck
    return v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--workloads", default="w1,w2")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--out", default=str(HERE), help="where results.json and peers.png go "
                    "(default: beside this script, the published figures)")
    ap.add_argument("--spark-kafka-version", default=pyspark.__version__,
                    help="version of spark-sql-kafka-0-10_2.13 for native Spark "
                         "(default: PySpark's own, %(default)s)")
    args = ap.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = set(systems) - set(SYSTEMS) | set(workloads) - set(WORKLOADS)
    if unknown:
        ap.error(f"unknown system or workload: {', '.join(sorted(unknown))}")

    skip = prepare_peers(systems)
    spark_jars = None
    if "spark" in systems and os.environ.get("PEERS_SPARK_JARS"):
        spark_jars = os.environ["PEERS_SPARK_JARS"]  # resolved before: the connector's jars
    elif "spark" in systems:
        s, spark_jars = prepare_spark(args.spark_kafka_version)
        skip.update(s)
    for s, why in skip.items():
        print(f"SKIPPED {s}: {why}", flush=True)
    running = [s for s in systems if s not in skip]

    if not running:
        print("nothing to run")
        return 1
    expected = Expected()
    runs: list[dict] = []
    with local_broker(["input", USERS_TOPIC], args.partitions) as (bootstrap, work):
        t = time.perf_counter()
        if "w4" in workloads:  # the table first, with timestamps before the input's
            produce_users(bootstrap)
        produce(bootstrap, "input", generate(args.records, expected))
        print(f"loaded {args.records:,} records ({args.partitions} partitions, "
              f"{len(expected.counts):,} keys, {expected.w1_out:,} pass the W1 filter) "
              f"in {time.perf_counter() - t:.1f}s", flush=True)
        for rep in range(args.repeat):
            order = running[rep % len(running):] + running[:rep % len(running)]
            for w in workloads:
                for s in order:
                    if s not in ONLY.get(w, SYSTEMS):
                        continue
                    r = one_run(s, w, rep, args, bootstrap, work, expected, spark_jars)
                    runs.append(r)
                    print(progress(r), flush=True)

    summary = report.summarize(runs, running, workloads)
    for w in workloads:  # the systems that do not run a workload have no row for it
        summary[w] = {s: row for s, row in summary[w].items() if s in ONLY.get(w, SYSTEMS)}
    if "spark" in running and args.spark_kafka_version != pyspark.__version__:
        for w in workloads:
            row = summary[w]["spark"]
            row["note"] = "; ".join(filter(None, [row["note"], (
                f"Kafka connector {args.spark_kafka_version} on PySpark {pyspark.__version__}")]))
    for w in workloads:
        for s, why in skip.items():
            if s not in ONLY.get(w, SYSTEMS):
                continue
            summary[w][s] = {"ok": 0, "runs": 0, "note": f"skipped: {why.splitlines()[0]}",
                             "errors": [], **{m: None for m in report.METRICS}}
        summary[w] = {s: summary[w][s] for s in systems if s in summary[w]}
    print(report.table(summary, args.records, args.repeat))
    mem = psutil.virtual_memory().total / 2**30
    meta = {"date": datetime.date.today().isoformat(), "cores": os.cpu_count(),
            "ram_gb": round(mem, 1), "records": args.records, "partitions": args.partitions,
            "repeat": args.repeat, "systems": systems, "workloads": workloads,
            "skipped": skip, "versions": versions(running),
            "spark_kafka_connector": args.spark_kafka_version if "spark" in running else None}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(str(out / "results.json"), meta, runs, summary)
    try:
        report.chart(str(out / "peers.png"), summary,
                     f"kspark and peers, {args.records:,} records: {meta['date']}, "
                     f"{meta['cores']} cores, {mem:.0f} GB RAM")
    except ImportError:
        print("matplotlib is not installed: no chart (pip install -e '.[peers]')")
    print(f"wrote {out / 'results.json'} and {out / 'peers.png'}")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
