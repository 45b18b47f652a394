"""Exactly-once soak harness, modelled on Kafka's EOS system test.

Each round appends a slice of the input (keys ``k<n>``, values 0, 1, 2, ... in 3
partitions), runs the application of :mod:`tests.integration.eos_app` in a child process
(``local-cluster``: a driver and two executor processes), SIGKILLs the driver or an
executor at a random moment, and runs it again until it finishes. At the end it reads every
output with ``read_committed`` and prints as its last line::

    soak: rounds R, duplicates D, lost L, wrong aggregates W, open transactions T

``make soak`` runs it (20 rounds, 200,000 records, exactly_once_v2, then at_least_once,
where it must see duplicates; ``make soak SOAK_MODE=real_time`` in real-time mode);
``python -m tests.integration.soak --help`` for the options.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3


@dataclass
class Kill:
    """One round's SIGKILL: the victim, the processes killed (none if the app had finished),
    how many executor processes the driver had at that moment, and how many runs it took
    after the killed one to finish."""

    victim: str
    pids: list[int] = field(default_factory=list)
    executors: int = 0
    restarts: int = 0


@dataclass
class Figures:
    duplicates: int = 0
    lost: int = 0
    wrong: int = 0
    open_transactions: int = 0
    disordered: int = 0
    kills: list[Kill] = field(default_factory=list)

    def line(self, rounds: int) -> str:
        return (f"soak: rounds {rounds}, duplicates {self.duplicates}, lost {self.lost}, "
                f"wrong aggregates {self.wrong}, open transactions {self.open_transactions}")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def executors(pid: int) -> list[int]:
    """The Spark executor JVMs started under the driver process ``pid`` (local-cluster)."""
    found = []
    for p in descendants(pid):
        try:
            if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(p)
        except OSError:
            pass
    return found


def produce(bootstrap: str, src: str, start: int, n: int, keys: int) -> None:
    """Values ``start .. start+n-1``, value i under key ``k<i % keys>``."""
    from confluent_kafka import Producer

    from kspark import Serdes

    # Idempotent: a retried request on a busy machine must not reorder the input, which the
    # checks compare the output's order with.
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 20, "enable.idempotence": True})
    long = Serdes.Long()
    for i in range(start, start + n):
        while True:
            try:
                p.produce(src, key=f"k{i % keys}".encode(), value=long.serialize(src, i),
                          timestamp=1_000_000 + i)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def expected_aggregates(n: int, keys: int) -> dict[str, dict]:
    out = {}
    for k in range(min(keys, n)):
        values = range(k, n, keys)
        out[f"k{k}"] = {"count": len(values), "sum": sum(values), "min": values[0],
                        "max": values[-1]}
    return out


def app_command(bootstrap: str, src: str, app_id: str, state_dir: str, *options: str) -> list[str]:
    return [sys.executable, "-m", "tests.integration.eos_app", bootstrap, src, app_id,
            state_dir, *options]


def start_app(cmd: list[str], env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=cwd or ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**(env or os.environ), "PYTHONPATH": str(ROOT)})


def finish(proc: subprocess.Popen, timeout_s: float = 600) -> tuple[int, list[str]]:
    """Wait for the app to exit; its exit code and output."""
    lines = []
    deadline = time.monotonic() + timeout_s
    for line in proc.stdout:
        lines.append(line)
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the app did not finish in time:\n" + "".join(lines[-40:]))
    return proc.wait(60), lines


def kill_and_finish(cmd: list[str], victim: str, delay_s: float, log=print,
                    env: dict[str, str] | None = None, cwd: Path | None = None) -> Kill:
    """Run the app, SIGKILL ``victim`` ("driver" or "executor") ``delay_s`` after its first
    micro-batch completed (so that later batches are writing when it dies), then run it
    again (as often as needed) until it exits 0."""
    proc = start_app(cmd, env, cwd)
    lines = []
    kill = Kill(victim)
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("batches ") and int(line.split()[1]) >= 1 or line.startswith("done"):
                break
        time.sleep(delay_s)  # a random moment: this is what the soak varies
        if proc.poll() is None:
            found = executors(proc.pid)
            kill.executors = len(found)
            kill.pids = [proc.pid] if victim == "driver" else found[:1]
            for pid in kill.pids:
                os.kill(pid, signal.SIGKILL)
            log(f"  killed the {victim} ({kill.pids}) {delay_s:.1f}s after batch 1")
        code, more = finish(proc)
        lines += more
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in descendants(proc.pid):  # the driver's executors and workers, if orphaned
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for _attempt in range(3):
        if code == 0:
            return kill
        code, lines = finish(start_app(cmd, env, cwd))
        kill.restarts += 1
    raise AssertionError(f"the app did not recover (exit {code}):\n" + "".join(lines[-60:]))


def verify(bootstrap: str, src: str, app_id: str, n: int, keys: int) -> Figures:
    """Read every output with read_committed and count what is wrong."""
    from kspark import Serdes

    f = Figures()
    long = Serdes.Long()
    seen: dict[int, int] = {}
    last_per_key: dict[str, int] = {}
    for m in read_all(bootstrap, f"{src}-echo"):
        v = long.deserialize("", m.value())
        seen[v] = seen.get(v, 0) + 1
        k = m.key().decode()
        if v <= last_per_key.get(k, -1):
            f.disordered += 1
        last_per_key[k] = v
    f.duplicates += sum(c - 1 for c in seen.values())
    f.lost += sum(1 for i in range(n) if i not in seen)
    counts: dict[str, list[int]] = {}
    final: dict[str, dict] = {}
    for m in read_all(bootstrap, f"{src}-agg"):
        k, agg = m.key().decode(), json.loads(m.value())
        counts.setdefault(k, []).append(agg["count"])
        final[k] = agg
    expected = expected_aggregates(n, keys)
    for k, want in expected.items():
        got = counts.get(k, [])
        f.duplicates += len(got) - len(set(got))
        f.lost += len(set(range(1, want["count"] + 1)) - set(got))
        f.disordered += sum(1 for a, b in itertools.pairwise(got) if b < a)
        f.wrong += final.get(k) != want
    f.wrong += len(set(final) - set(expected))
    f.open_transactions = open_transactions(
        bootstrap, [f"{src}-echo", f"{src}-agg", f"{app_id}-aggs-changelog"])
    return f


def read_all(bootstrap: str, topic: str, timeout_s: float = 120) -> list:
    """Every record of ``topic`` up to its read_committed end, read with read_committed."""
    from kspark._kafka.admin import Admin
    from kspark._kafka.clients import read_range

    admin = Admin(bootstrap, 20000)
    n = admin.partition_counts()[topic]
    out = []
    for p in range(n):
        end = admin.end_offsets([(topic, p)])[(topic, p)]
        for msgs in read_range(bootstrap, topic, p, 0, end, int(timeout_s * 1000)):
            out.extend(msgs)
    return out


def open_transactions(bootstrap: str, topics: list[str]) -> int:
    """Partitions whose last stable offset is behind their end: a transaction is still open."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    counts = {t: len(md.partitions) for t, md in admin.list_topics(timeout=20).topics.items()}
    req = {TopicPartition(t, p): OffsetSpec.latest() for t in topics if t in counts
           for p in range(counts[t])}

    def ends(level):
        res = admin.list_offsets(req, isolation_level=level, request_timeout=20)
        return {(tp.topic, tp.partition): f.result().offset for tp, f in res.items()}

    committed = ends(IsolationLevel.READ_COMMITTED)
    uncommitted = ends(IsolationLevel.READ_UNCOMMITTED)
    return sum(1 for tp, end in committed.items() if end < uncommitted[tp])


def soak(bootstrap: str, rounds: int, records: int, guarantee: str, keys: int = 100,
         master: str = "local-cluster[2,1,1024]", seed: int | None = None,
         work_dir: str | None = None, log=print, victims: tuple[str, ...] = ("driver", "executor"),
         max_delay_s: float = 3.0, max_offsets: int | None = None,
         slow_ms: float = 0.2, mode: str = "micro_batch",
         spark_conf: dict[str, str] | None = None) -> Figures:
    """Run the soak against the broker at ``bootstrap``; returns the figures. Each round kills
    one of ``victims`` (at random) up to ``max_delay_s`` after its first micro-batch; the app
    reads ``max_offsets`` records per micro-batch (default: an eighth of a round's);
    ``spark_conf``: Spark settings for the app's session (``PYSPARK_SUBMIT_ARGS``)."""
    from kspark._kafka.admin import Admin

    rng = random.Random(seed)
    tag = f"{guarantee}-{mode}-{os.getpid()}-{rng.randrange(10**6)}"
    src, app_id = f"soak-{tag}", f"soak-app-{tag}"
    Admin(bootstrap, 20000).create_topics({src: PARTITIONS, f"{src}-echo": PARTITIONS,
                                           f"{src}-agg": PARTITIONS})
    from tests.integration.separate_disks import STATE_DIR, separate_disks_env

    # each executor keeps its state on a disk of its own (its working directory)
    root = Path(tempfile.mkdtemp(prefix="kspark-soak-", dir=work_dir))
    env = separate_disks_env(root)
    if spark_conf:
        env["PYSPARK_SUBMIT_ARGS"] = " ".join(
            [f"--conf {k}={v}" for k, v in spark_conf.items()] + ["pyspark-shell"])
    per_batch = max_offsets or max(500, records // rounds // 8)
    cmd = app_command(bootstrap, src, app_id, STATE_DIR, "--master", master, "--guarantee",
                      guarantee, "--max-offsets", str(per_batch), "--slow-ms", str(slow_ms),
                      "--checkpoint", str(root / "checkpoint"), "--mode", mode)
    produced, kills = 0, []
    for r in range(rounds):
        n = records // rounds + (records % rounds if r == rounds - 1 else 0)
        produce(bootstrap, src, produced, n, keys)
        produced += n
        victim = rng.choice(victims)
        delay = rng.uniform(0.0, max_delay_s)
        log(f"round {r + 1}/{rounds}: {n} records, kill the {victim} at ~{delay:.1f}s")
        kills.append(kill_and_finish(cmd, victim, delay, log, env, root))
    figures = verify(bootstrap, src, app_id, produced, keys)
    figures.kills = kills
    log(f"order: {figures.disordered} records out of input order ({guarantee}, {mode})")
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--guarantee", default="exactly_once_v2")
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", default="micro_batch", choices=("micro_batch", "real_time"),
                    help="the application's execution.mode")
    ap.add_argument("--bootstrap", default=None, help="default: start a local broker")
    a = ap.parse_args(argv)
    broker = None
    bootstrap = a.bootstrap
    if bootstrap is None:
        from kspark._kafka.broker import LocalBroker, free_port

        broker = LocalBroker(Path(tempfile.mkdtemp(prefix="kspark-soak-broker-")), port=free_port())
        bootstrap = broker.start()
    try:
        began = time.monotonic()
        f = soak(bootstrap, a.rounds, a.records, a.guarantee, a.keys, seed=a.seed, mode=a.mode)
        print(f"({a.guarantee}, {a.mode}, {a.records} records, "
              f"{time.monotonic() - began:.0f}s)")
        print(f.line(a.rounds), flush=True)
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
