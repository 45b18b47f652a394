"""Exactly-once soak harness, modelled on Kafka's EOS system test.

Each round appends a slice of the input (keys ``k<n>``, values 0, 1, 2, ... in 3
partitions), runs the application of :mod:`tests.integration.eos_app` in a child process
(``local-cluster``: a driver and two executor processes), SIGKILLs the driver or an
executor at a random moment, and runs it again until it finishes. At the end it reads every
output with ``read_committed`` and prints as its last line::

    soak: rounds R, duplicates D, lost L, wrong aggregates W, open transactions T

``make soak`` runs it (20 rounds, 200,000 records, exactly_once_v2, then at_least_once,
where it must see duplicates; ``make soak SOAK_MODES=real_time`` in real-time mode);
``python -m tests.integration.soak --help`` for the options.

``--faults broker`` (``make soak-faults``) runs it on a three-node cluster of its own and
adds to every round one fault of Kafka's own, in a thread while the app runs: a node
SIGKILLed and started again after 0-10 s, or a rolling restart; the process kill then comes
in two rounds out of three only. Before the last line it prints, per fault kind, how long
the faults took and how long the output paused (:func:`output_pause`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
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
    output: str = ""  # what the killed run printed (its driver's log included)


@dataclass
class BrokerFault:
    """One round's fault of the cluster (``--faults broker``): ``kind`` "kill" (node ``node``
    SIGKILLed, started again ``down_s`` later) or "rolling" (a rolling restart); when it
    began and ended (monotonic; the end is when every ISR is full again), how long the
    output paused around it (None: the app had finished before it began), whether the round
    killed no process (``alone``) and the error if the fault itself failed."""

    kind: str
    node: int = 0
    down_s: float = 0.0
    began: float = 0.0
    ended: float = 0.0
    pause_s: float | None = None
    alone: bool = True
    error: str | None = None

    @property
    def took_s(self) -> float:
        return self.ended - self.began

    def describe(self) -> str:
        if self.kind == "kill":
            return f"kill node {self.node} (down {self.down_s:.1f}s)"
        return "rolling restart"


@dataclass
class Figures:
    duplicates: int = 0
    lost: int = 0
    wrong: int = 0
    open_transactions: int = 0
    disordered: int = 0
    kills: list[Kill] = field(default_factory=list)
    faults: list[BrokerFault] = field(default_factory=list)
    delta: tuple[int, int, int] | None = None  # the Delta sink's (rows, duplicates, lost)

    def line(self, rounds: int) -> str:
        delta = "" if self.delta is None else (
            f"; Delta table: rows {self.delta[0]}, duplicates {self.delta[1]}, lost "
            f"{self.delta[2]}")
        return (f"soak: rounds {rounds}, duplicates {self.duplicates}, lost {self.lost}, "
                f"wrong aggregates {self.wrong}, open transactions {self.open_transactions}"
                f"{delta}")


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
    env = env or dict(os.environ)  # SOAK_SITE: a directory of a sitecustomize (zoned_env)
    path = os.pathsep.join(p for p in (str(ROOT), env.get("SOAK_SITE")) if p)
    return subprocess.Popen(cmd, cwd=cwd or ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**env, "PYTHONPATH": path})


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


def sigkill(proc: subprocess.Popen, kill: Kill, delay_s: float, log=print) -> None:
    """SIGKILL ``kill.victim`` of the running app ``proc``: the driver or its first executor
    (nothing if the app has exited)."""
    if proc.poll() is not None:
        return
    found = executors(proc.pid)
    kill.executors = len(found)
    kill.pids = [proc.pid] if kill.victim == "driver" else found[:1]
    for pid in kill.pids:
        os.kill(pid, signal.SIGKILL)
    log(f"  killed the {kill.victim} ({kill.pids}) {delay_s:.1f}s after batch 1")


def reap(proc: subprocess.Popen) -> None:
    """Kill the app ``proc`` if it still runs, and what it left (executors, workers)."""
    if proc.poll() is None:
        proc.kill()
    for pid in descendants(proc.pid):  # the driver's executors and workers, if orphaned
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def kill_and_finish(cmd: list[str], victim: str, delay_s: float, log=print,
                    env: dict[str, str] | None = None, cwd: Path | None = None,
                    ready: str | None = None) -> Kill:
    """Run the app, SIGKILL ``victim`` ("driver" or "executor") ``delay_s`` after its first
    micro-batch completed (so that later batches are writing when it dies) and, if
    ``ready``, once it printed a line with that text, then run it again (as often as
    needed) until it exits 0."""
    proc = start_app(cmd, env, cwd)
    lines = []
    kill = Kill(victim)
    seen = ready is None
    try:
        for line in proc.stdout:
            lines.append(line)
            seen = seen or ready in line
            if line.startswith("done") or seen and line.startswith("batches ") \
                    and int(line.split()[1]) >= 1:
                break
        time.sleep(delay_s)  # a random moment: this is what the soak varies
        sigkill(proc, kill, delay_s, log)
        code, more = finish(proc)
        lines += more
        kill.output = "".join(lines)
    finally:
        reap(proc)
    for _attempt in range(3):
        if code == 0:
            return kill
        code, lines = finish(start_app(cmd, env, cwd))
        kill.restarts += 1
    raise AssertionError(f"the app did not recover (exit {code}):\n" + "".join(lines[-60:]))


def is_progress(line: str) -> bool:
    """A line of the app saying its output moved on: ``batches N`` (N >= 1) or ``done``."""
    return line.startswith("done") or (line.startswith("batches ")
                                       and int(line.split()[1]) >= 1)


def start_watched(cmd: list[str], lines: list[tuple[float, str]], env: dict[str, str] | None,
                  cwd: Path | None) -> tuple[subprocess.Popen, threading.Thread]:
    """Start the app with a thread appending its output to ``lines`` as (monotonic time,
    line): the time of each progress line is what :func:`output_pause` measures."""
    proc = start_app(cmd, env, cwd)

    def pump() -> None:
        for line in proc.stdout:
            lines.append((time.monotonic(), line))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    return proc, reader


def wait_watched(proc: subprocess.Popen, reader: threading.Thread,
                 lines: list[tuple[float, str]], timeout_s: float = 600) -> int:
    """The exit code of a watched app (AssertionError with its output after ``timeout_s``)."""
    try:
        code = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        reap(proc)
        raise AssertionError(f"the app did not finish in {timeout_s:g}s:\n"
                             + "".join(line for _, line in lines[-60:])) from None
    reader.join(30)  # orphaned executors may hold the pipe open: do not wait for them
    return code


def first_progress(proc: subprocess.Popen, lines: list[tuple[float, str]],
                   timeout_s: float = 600) -> float:
    """When the app printed its first progress line (or now, if it exited without one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        moved = [t for t, line in list(lines) if is_progress(line)]
        if moved or proc.poll() is not None:
            return moved[0] if moved else time.monotonic()
        time.sleep(0.05)
    raise AssertionError("the app printed no progress:\n" + "".join(x for _, x in lines[-60:]))


def do_fault(cluster, fault: BrokerFault, log=print) -> None:
    """Do ``fault`` to ``cluster`` (a LocalCluster) and wait until every ISR is full again;
    an error is kept in ``fault.error`` (this runs in a thread of its own)."""
    fault.began = time.monotonic()
    try:
        if fault.kind == "kill":
            cluster.kill(fault.node)
            time.sleep(fault.down_s)  # the outage's length: what the soak varies
            cluster.start_node(fault.node)
        else:
            cluster.rolling_restart(log=lambda m: log(f"    {m}"))
        cluster.wait_in_sync()
    except Exception as e:  # noqa: BLE001 - the round reports it with the app's output
        fault.error = f"{type(e).__name__}: {e}"
    fault.ended = time.monotonic()


def output_pause(times: list[float], began: float, ended: float) -> float | None:
    """The longest stretch without a progress line (``times``, sorted) that overlaps the
    fault [``began``, ``ended``]: from the last progress line before it began, through those
    during it, to the first after it ended. None if no progress line came after it began
    (the app had finished its input: nothing could pause)."""
    if not times or times[-1] <= began:
        return None
    marks = [max((t for t in times if t <= began), default=began)]
    marks += [t for t in times if began < t <= ended]
    marks += [t for t in times if t > ended][:1]
    return max((b - a for a, b in itertools.pairwise(marks)), default=0.0)


def fault_round(cmd: list[str], cluster, fault: BrokerFault, kill: Kill,
                delays: tuple[float, float], log=print, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> Kill:
    """Run the app; ``delays[0]`` after its first progress line start ``fault`` in a thread
    (also if the app has finished by then), ``delays[1]`` after it SIGKILL ``kill.victim``
    (unless it is "none" or the app has exited); run the app again until it exits 0; wait
    for the fault to end with every ISR full, and time the output's pause around it."""
    lines: list[tuple[float, str]] = []
    faulting = threading.Thread(target=do_fault, args=(cluster, fault, log), daemon=True)
    proc, reader = start_watched(cmd, lines, env, cwd)
    try:
        t0 = first_progress(proc, lines)
        steps: list[tuple[float, Callable[[], None]]] = [(t0 + delays[0], faulting.start)]
        if kill.victim != "none":
            steps.append((t0 + delays[1], lambda: sigkill(proc, kill, delays[1], log)))
        for at, step in sorted(steps, key=lambda s: s[0]):
            while time.monotonic() < at and proc.poll() is None:
                time.sleep(0.05)
            step()
        code = wait_watched(proc, reader, lines)
        code = rerun_until_ok(cmd, lines, code, kill, log, env, cwd)
    finally:
        reap(proc)
        if cwd is not None:  # every round's output, for a post-mortem
            with open(Path(cwd) / "app-output.log", "a") as out:
                out.writelines(line for _, line in lines)
    faulting.join(600)
    if faulting.is_alive() or fault.error:
        raise AssertionError(f"the broker fault ({fault.describe()}) did not end: "
                             f"{fault.error or 'still running after 600s'}")
    if code != 0:
        raise AssertionError(f"the app did not recover (exit {code}):\n"
                             + "".join(line for _, line in lines[-60:]))
    cluster.wait_in_sync()
    fault.pause_s = output_pause([t for t, x in lines if is_progress(x)], fault.began, fault.ended)
    return kill


def why_failed(code: int, lines: list[str]) -> str:
    """A failed run's cause, from its output: its signal, else the exception of its last
    Python traceback and where it was raised, else its last line naming an error."""
    if code < 0:
        return f"killed by signal {-code}"
    starts = [i for i, x in enumerate(lines) if x.startswith("Traceback (most recent call")]
    if starts:
        tb = lines[starts[-1] + 1:]
        raised = [x for x in tb if x.strip() and not x[0].isspace()][:1]
        frames = [x.strip() for x in tb if x.lstrip().startswith('File "')]
        ours = [x for x in frames if str(ROOT) in x] or frames  # the last in kspark or tests
        if raised:
            return f"{raised[0].strip()[:400]} ({''.join(ours[-1:])})"
    said = [x for x in lines if "Error" in x or "Exception" in x] or ["(no error)"]
    return said[-1].strip()[:400]


def rerun_until_ok(cmd: list[str], lines: list[tuple[float, str]], code: int, kill: Kill,
                   log=print, env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
    """Run the app again while its last run failed (at most 3 times), logging why each failed;
    the last run's exit code."""
    mark = 0
    while code != 0 and kill.restarts < 3:
        log(f"  the run exited {code}: {why_failed(code, [x for _, x in lines[mark:]])}")
        kill.restarts += 1
        mark = len(lines)
        proc, reader = start_watched(cmd, lines, env, cwd)
        try:
            code = wait_watched(proc, reader, lines)
        finally:
            reap(proc)
    return code


def plan_fault(rng: random.Random, cluster, victim: str, kill_delay_s: float,
               max_delay_s: float) -> tuple[BrokerFault, Kill, tuple[float, float]]:
    """A round's broker fault and process kill (``victim``, or none in a third of the
    rounds), and their delays after the first progress line."""
    kill = Kill("none" if rng.random() < 1 / 3 else victim)
    fault = BrokerFault(rng.choice(("kill", "rolling")), node=rng.randint(1, cluster.size),
                        down_s=rng.uniform(0.0, 10.0), alone=kill.victim == "none")
    return fault, kill, (rng.uniform(0.0, max_delay_s), kill_delay_s)


def faulted_round(cmd: list[str], cluster, rng: random.Random, victim: str, kill_delay_s: float,
                  max_delay_s: float, log=print, env: dict[str, str] | None = None,
                  cwd: Path | None = None) -> tuple[Kill, BrokerFault]:
    """Plan and run one round of ``--faults broker`` (:func:`fault_round`), logging what was
    done and how long the fault took."""
    fault, kill, delays = plan_fault(rng, cluster, victim, kill_delay_s, max_delay_s)
    process = "no process kill" if kill.victim == "none" else (
        f"kill the {kill.victim} at ~{delays[1]:.1f}s")
    log(f"  {process}; broker fault at ~{delays[0]:.1f}s: {fault.describe()}")
    fault_round(cmd, cluster, fault, kill, delays, log, env, cwd)
    pause = "n/a (the app had finished)" if fault.pause_s is None else f"{fault.pause_s:.1f}s"
    log(f"  {fault.describe()} took {fault.took_s:.1f}s (node back, ISRs full); output paused "
        f"{pause}; {kill.restarts} rerun(s)")
    return kill, fault


def fault_summary(faults: list[BrokerFault]) -> list[str]:
    """One line per fault kind: how many, how long they took and the output paused."""
    def stats(xs: list[float]) -> str:
        return f"median {statistics.median(xs):.1f}s, max {max(xs):.1f}s" if xs else "n/a"

    out = []
    for kind in ("kill", "rolling"):
        fs = [f for f in faults if f.kind == kind]
        paused = [f.pause_s for f in fs if f.pause_s is not None]
        alone = [f.pause_s for f in fs if f.pause_s is not None and f.alone]
        out.append(f"faults: {kind} {len(fs)}, took {stats([f.took_s for f in fs])}; output "
                   f"paused {stats(paused)} ({len(paused)} timed; without a process kill: "
                   f"{stats(alone)}, {len(alone)} timed)")
    return out


def eos_topics(admin, topic_name, base: str) -> str:
    """A new input topic of the exactly-once application, with its two outputs (3 partitions
    each); its name."""
    src = topic_name(base)
    admin.create_topics({src: 3, f"{src}-echo": 3, f"{src}-agg": 3})
    return src


def assert_exact(bootstrap: str, src: str, app_id: str, n: int, keys: int) -> None:
    """Every output read with read_committed is exact (see :func:`verify`)."""
    f = verify(bootstrap, src, app_id, n, keys)
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions, f.disordered) == (0, 0, 0, 0, 0), f


def delta_exact(path: str, n: int) -> tuple[int, int, int]:
    """The echo's Delta table (``eos_app --delta``): its rows, the values in it more than
    once and the values 0..n-1 missing from it."""
    from deltalake import DeltaTable

    values = DeltaTable(path).to_pyarrow_table(columns=["value"]).column("value").to_pylist()
    seen: dict[int, int] = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    return (len(values), sum(c - 1 for c in seen.values()),
            sum(1 for i in range(n) if i not in seen))


def verify(bootstrap: str, src: str, app_id: str, n: int, keys: int,
           delta: str | None = None, with_counts: bool = False) -> Figures:
    """Read every output with read_committed and count what is wrong (``delta``: the echo's
    Delta table too, its duplicates and losses counted in the figures; ``with_counts``: the
    cached counts too)."""
    from kspark import Serdes

    f = Figures()
    if delta is not None:
        f.delta = delta_exact(delta, n)
        f.duplicates += f.delta[1]
        f.lost += f.delta[2]
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
    if with_counts:
        _verify_counts(f, read_all(bootstrap, f"{src}-count"), expected)
    f.open_transactions = open_transactions(
        bootstrap, [f"{src}-echo", f"{src}-agg", f"{app_id}-aggs-changelog",
                    *([f"{src}-count", f"{app_id}-counts-changelog"] if with_counts else [])])
    return f


def _verify_counts(f: Figures, records: list, expected: dict[str, dict]) -> None:
    """The cached counts (the batch path): each key's emitted counts rising (a cache leaves
    updates out; a count emitted twice is a duplicate, a lower one out of order), its last
    the exact count."""
    from kspark import Serdes

    long = Serdes.Long()
    got: dict[str, list[int]] = {}
    for m in records:
        got.setdefault(m.key().decode(), []).append(long.deserialize("", m.value()))
    for k, want in expected.items():
        seq = got.get(k, [])
        f.duplicates += len(seq) - len(set(seq))
        f.disordered += sum(1 for a, b in itertools.pairwise(seq) if b < a)
        f.wrong += (seq[-1] if seq else None) != want["count"]
    f.wrong += len(set(got) - set(expected))


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
         spark_conf: dict[str, str] | None = None, cluster=None, delta: bool = False,
         standbys: int = 0, zones: bool = False, counts: bool = False) -> Figures:
    """Run the soak against the broker at ``bootstrap``; returns the figures. Each round kills
    one of ``victims`` (at random) up to ``max_delay_s`` after its first micro-batch; the app
    reads ``max_offsets`` records per micro-batch (default: an eighth of a round's);
    ``spark_conf``: Spark settings for the app's session (``PYSPARK_SUBMIT_ARGS``).
    ``cluster``: the LocalCluster at ``bootstrap``, to add a broker fault to every round
    (:func:`faulted_round`). ``delta``: the app writes its echo to a Delta table too
    (``KStream.to_spark``), checked exact as well. ``standbys``: the app's
    ``num.standby.replicas``. ``zones``: three executors in two zones (``zoned_env``) and
    ``rack.aware.assignment.tags=zone``. ``counts``: the app keeps cached counts too (the
    batch path of ``count()``), checked exact."""
    from kspark._kafka.admin import Admin

    rng = random.Random(seed)
    # unique to the run: two runs of one process with the same seed (a test's variants)
    # must not share topics and an application id (the second would count the first's output)
    tag = f"{guarantee}-{mode}-{os.getpid()}-{rng.randrange(10**6)}-{uuid.uuid4().hex[:6]}"
    src, app_id = f"soak-{tag}", f"soak-app-{tag}"
    Admin(bootstrap, 20000).create_topics({src: PARTITIONS, f"{src}-echo": PARTITIONS,
                                           f"{src}-agg": PARTITIONS, f"{src}-count": PARTITIONS})
    from tests.integration.separate_disks import STATE_DIR, separate_disks_env, zoned_env

    # each executor keeps its state on a disk of its own (its working directory)
    root = Path(tempfile.mkdtemp(prefix="kspark-soak-", dir=work_dir))
    env = zoned_env(root, separate_disks_env(root)) if zones else separate_disks_env(root)
    master = "local-cluster[3,1,1024]" if zones else master
    if cluster is not None:  # a crash in a client library under a fault prints its stacks
        env["PYTHONFAULTHANDLER"] = "1"
    if spark_conf:
        env["PYSPARK_SUBMIT_ARGS"] = " ".join(
            [f"--conf {k}={v}" for k, v in spark_conf.items()] + ["pyspark-shell"])
    per_batch = max_offsets or max(500, records // rounds // 8)
    cmd = app_command(bootstrap, src, app_id, STATE_DIR, "--master", master, "--guarantee",
                      guarantee, "--max-offsets", str(per_batch), "--slow-ms", str(slow_ms),
                      "--checkpoint", str(root / "checkpoint"), "--mode", mode)
    if delta:
        cmd += ["--delta", str(root / "delta")]
    if standbys:
        cmd += ["--standbys", str(standbys)]
    if counts:
        cmd += ["--counts"]
    if zones:
        cmd += ["--rack-tags", "zone"]
    # micro-batch standbys: the kill waits for the first round of copies (so they are used)
    ready = "standby copies kept" if standbys and mode == "micro_batch" else None
    produced, kills, faults = 0, [], []
    for r in range(rounds):
        n = records // rounds + (records % rounds if r == rounds - 1 else 0)
        produce(bootstrap, src, produced, n, keys)
        produced += n
        victim = rng.choice(victims)
        delay = rng.uniform(0.0, max_delay_s)
        if cluster is None:
            log(f"round {r + 1}/{rounds}: {n} records, kill the {victim} at ~{delay:.1f}s")
            kills.append(kill_and_finish(cmd, victim, delay, log, env, root, ready))
            continue
        log(f"round {r + 1}/{rounds}: {n} records")
        kill, fault = faulted_round(cmd, cluster, rng, victim, delay, max_delay_s, log, env, root)
        kills.append(kill)
        faults.append(fault)
    figures = verify(bootstrap, src, app_id, produced, keys,
                     str(root / "delta") if delta else None, counts)
    figures.kills, figures.faults = kills, faults
    log(f"order: {figures.disordered} records out of input order ({guarantee}, {mode})")
    return figures


def own_brokers(faults: str):
    """The soak's own Kafka, not started: a single broker, or (``faults`` "broker") a
    cluster of three nodes, each in a temporary directory."""
    from kspark._local.broker import LocalBroker, free_port
    from kspark._local.cluster import LocalCluster

    if faults == "broker":
        return LocalCluster(Path(tempfile.mkdtemp(prefix="kspark-soak-cluster-")), brokers=3)
    return LocalBroker(Path(tempfile.mkdtemp(prefix="kspark-soak-broker-")), port=free_port())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--guarantee", default="exactly_once_v2")
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", default="micro_batch", choices=("micro_batch", "real_time"),
                    help="the application's execution.mode")
    ap.add_argument("--delta", action="store_true",
                    help="the app also writes its echo to a Delta table (KStream.to_spark), "
                    "checked exact")
    ap.add_argument("--standbys", type=int, default=0,
                    help="the app's num.standby.replicas (real_time mode)")
    ap.add_argument("--no-counts", action="store_true",
                    help="leave out the app's cached counts (the batch path of count(), "
                    "checked exact by default)")
    ap.add_argument("--bootstrap", default=None, help="default: start a local broker")
    ap.add_argument("--faults", default="none", choices=("none", "broker"),
                    help="broker: a three-node cluster of the soak's own, and a broker fault "
                    "(a node killed, or a rolling restart) in every round")
    a = ap.parse_args(argv)
    if a.faults == "broker" and a.bootstrap:
        ap.error("--faults broker restarts brokers of its own cluster: leave out --bootstrap")
    broker = None if a.bootstrap else own_brokers(a.faults)
    bootstrap = a.bootstrap or broker.start()
    try:
        began = time.monotonic()
        f = soak(bootstrap, a.rounds, a.records, a.guarantee, a.keys, seed=a.seed, mode=a.mode,
                 cluster=broker if a.faults == "broker" else None, delta=a.delta,
                 standbys=a.standbys, counts=not a.no_counts)
        print(f"({a.guarantee}, {a.mode}, {a.records} records, "
              f"{time.monotonic() - began:.0f}s)")
        for line in fault_summary(f.faults) if a.faults == "broker" else []:
            print(line)
        print(f.line(a.rounds), flush=True)
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
