"""What one lost Spark executor costs a running application (failover on a cluster).

A logged RocksDB count (``stream(src).group_by_key().count(...)`` with a persistent store
``counts``, caching off, to ``dst``; String keys, Long counts; 6 partitions in and out) runs
on Spark ``local-cluster[N,1,1024]`` (N = ``--executors``, default 3) with a relative
``state.dir``, so each executor keeps its state in its own working directory (separate
disks, as on a cluster: ``tests/integration/separate_disks.py``), in each execution mode
(``--modes``, default ``real_time``), ``processing.guarantee`` exactly_once_v2 by default.

Each run is its own process (a Spark application of its own). Before it starts, ``--keys``
distinct keys (default 200,000) are written once each, so the store is large; while it runs,
a producer thread of the benchmark writes ``--rate`` records/s (default 1,000) round-robin
over the keys (Kafka's default partitioner: murmur2 of the key). Once the application has
committed the preload and run for ``--warm-s`` more, one executor (its
``CoarseGrainedExecutorBackend`` JVM and its Python daemon and workers; the executor whose
processes hold the most task stores open, then with the most task directories) is
SIGKILLed, as the soak harness does (``tests/integration/soak.py``), and the output topic is
watched (read_committed, every partition, the wall-clock arrival of each record) for
``--after-s`` more.

Movers are the tasks whose directories are in the killed executor's ``state.dir`` just
before the kill (task ``0_p`` reads partition p and writes partition p); every other
partition is a bystander. Reported per run (a JSON line, ``failover: {...}``, and a table):

- bystanders: the longest gap between two arrivals of one bystander partition's output in
  [kill - 5 s, kill + after-s] (the gap from its last arrival to the window's end counts
  too);
- movers: seconds from the kill to each mover partition's first output written after it (an
  offset at or past the partition's end at the kill: the killed tasks' open transactions
  are aborted), and their longest gap as the bystanders';
- restored records, task restores and task moves (``KafkaStreams.progress()``, which the
  application prints every second), the ``restoring``/``wiping`` log lines per task (the
  ``kspark`` logger at INFO in the driver and every Python worker, through a
  ``sitecustomize`` put on the application's ``PYTHONPATH``), whether any bystander
  restored, and the restore throughput (records / seconds of the ``restored`` log lines
  after the kill);
- the changelog's size (end offsets of ``<application.id>-counts-changelog``);
- the output check: after the producer stops and the application has caught up and closed,
  every key's last count (read_committed) equals the records written for it, and under
  exactly_once_v2 each key's counts are 1, 2, 3, ... (no duplicate, no gap); every key's
  output is on its input partition.

``--standbys N`` passes ``num.standby.replicas`` when N > 0; where kspark's config refuses
it, the variant is skipped with a message. It needs
exactly_once_v2 (the default here).

``--no-kill`` measures what a scheduled epoch end costs instead (real-time mode: each
stream thread's Spark job lasts ``real_time.epoch.ms`` (by default 0: no scheduled end), set with
``--set real_time.epoch.ms=...``; at its end the thread commits and its next epoch starts
at once as a new Spark job, the threads' ends staggered): the same application and input
run ``--duration-s`` (default 1,200) after the preload is caught up and ``--warm-s``
passed, and nothing is killed. Reported over that steady window:

- each partition's longest output gap and overall, and when it began (seconds from the
  application's ``start()``);
- the epochs that started in the window (the driver's ``stream thread i to executor e``
  lines, one per epoch start with several executors: each follows that thread's epoch end),
  the longest output gap of any partition within 10 s of each, ``batches`` (epochs every
  thread finished) at both ends, and any lost epoch or reassignment line;
- ``restored_records``/``task_restores``/``task_moves`` at the window's start, its end,
  their growth, and at the close (the counters count an epoch's restores when it ends, so
  the close has the epochs still running at the window's end), and the ``restoring``/
  ``wiping`` log lines stamped in the window;
- the changelog's size and the output check, as above.

``python benchmarks/failover.py [--modes real_time micro_batch] [--standbys 0 1]
[--keys 200000] [--rate 1000] [--warm-s 20] [--after-s 60] [--guarantee exactly_once_v2]
[--executors 3] [--no-kill [--duration-s 1200]] [--conf spark.key=value ...]
[--set kspark.key=value ...] [--keep]``; starts its own broker.

Results
-------

2026-11-29, the 2-core machine with other work running (load average 10-13), 200,000 keys,
1,000 records/s, exactly_once_v2, ``local-cluster[3,1,1024]``; every output check OK:

- real_time, no standby: bystanders' longest gap 0.81 s; movers' first output 8.8-8.9 s;
  80,621 records restored (2 tasks) at 106,220 records/s; no bystander restored.
- real_time, ``num.standby.replicas=1``: bystanders 2.18 s (the keeper's partitions while it
  opened the lost tasks; the others 0.48 s); movers 3.3-3.8 s; 0 records restored.
- micro_batch: bystanders 6.37 s; movers 5.9-6.3 s; 77,279 restored at 250,906 records/s.
- ``--no-kill`` (20 minutes, ``real_time.epoch.ms`` 300000, 12 epoch ends): nothing restored
  or moved; longest output gap 1.77 s (0.41-1.77 s around the epoch ends).

Later the same day (load average about 2), after the keeper opened the tasks it takes
beside its loop, a thread's tasks opened at once, micro-batch standbys, and no scheduled
epoch end by default:

- real_time, ``num.standby.replicas=1``: bystanders 0.47 s; movers 4.35 s; 0 restored.
- micro_batch, ``num.standby.replicas=1``: bystanders 7.75 s and 8.07 s; movers 7.23 s and
  6.88 s; 365 and 0 records restored (two runs).
- micro_batch, no standby: bystanders 4.63 s; movers 5.37 s; 76,772 records restored.
- ``--no-kill`` with ``--set real_time.epoch.ms=30000`` (240 s, 24 epoch ends): longest gap
  1.72 s, 8 of 24 over 1 s; with the default (no scheduled end), 20 minutes: longest gap
  0.204 s, nothing restored or moved.

docs/cluster.md ("Failover") has them with what they mean.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

RUN = "--run"
PARTITIONS = 6
ROOT = Path(__file__).resolve().parents[1]
EVENT = "failover-app "  # the application's JSON lines on its stdout start with this
LOG_ENV = "KSPARK_FAILOVER_LOG"
# put on the application's PYTHONPATH: the driver and every Python worker (the daemon, and
# the workers it forks) log kspark's INFO lines, with their time, to their stderr (a
# worker's goes to its executor's stderr file)
SITECUSTOMIZE = f"""\
import os as _os
if _os.environ.get({LOG_ENV!r}):
    import logging as _logging
    import sys as _sys
    _h = _logging.StreamHandler(_sys.stderr)
    _h.setFormatter(_logging.Formatter(
        "%(created).3f %(process)d %(name)s %(levelname)s %(message)s"))
    _logger = _logging.getLogger("kspark")
    _logger.addHandler(_h)
    _logger.setLevel(_logging.INFO)
"""


# --- the application (a subprocess) ---------------------------------------------------

def app_main(spec: dict) -> int:
    """One run's application: start, print progress every ``progress_s`` until stdin closes
    or ``stop_file`` exists, then close; every event a JSON line on stdout."""
    from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder, spark_session
    from kspark.state import Stores

    def emit(**event) -> None:
        print(EVENT + json.dumps({"t": time.time(), **event}), flush=True)

    string, long = Serdes.String(), Serdes.Long()
    b = StreamsBuilder()
    (b.stream(spec["src"], key_serde=string, value_serde=string).group_by_key()
      .count(Materialized.as_(Stores.persistent_key_value_store("counts"))
             .with_caching_disabled())  # every update comes out: the check sees 1, 2, 3, ...
      .to_stream().to(spec["dst"], key_serde=string, value_serde=long))
    spark = spark_session({"spark.master": spec["master"], "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8", **spec["spark_conf"]})
    streams = KafkaStreams(b.build(), spec["config"], spark=spark)
    stopping = threading.Event()

    def watch_stdin() -> None:  # the benchmark closes our stdin to stop us
        for _ in sys.stdin:
            pass
        stopping.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    stop_file = Path(spec["stop_file"])
    streams.start()
    emit(event="started")
    code = 0
    try:
        while not stopping.is_set() and not stop_file.exists():
            try:
                if streams.await_termination(spec["progress_s"]):
                    emit(event="terminated", state=str(streams.state()))
                    code = 2
                    break
            except Exception as e:  # noqa: BLE001 - reported to the benchmark
                emit(event="failed", error=f"{type(e).__name__}: {str(e)[:2000]}")
                code = 2
                break
            try:
                emit(event="progress", state=str(streams.state()), progress=streams.progress())
            except Exception as e:  # noqa: BLE001 - a moment without progress
                emit(event="no-progress", error=f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        began = time.time()
        try:
            streams.close()
        except Exception as e:  # noqa: BLE001
            emit(event="close-failed", error=f"{type(e).__name__}: {str(e)[:2000]}")
            code = code or 3
        try:
            emit(event="closed", close_s=time.time() - began, progress=streams.progress())
        except Exception as e:  # noqa: BLE001
            emit(event="closed", close_s=time.time() - began, error=str(e)[:300])
        spark.stop()
    return code


# --- the benchmark --------------------------------------------------------------------

def proc_start_time(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), to tell it from a reused pid."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class App:
    """The application subprocess: its events (JSON lines on stdout, with arrival times),
    and every process it started (seen so far), to kill what is left at the end."""

    def __init__(self, spec: dict, root: Path, env: dict[str, str]):
        self.log_path = root / "app.log"
        self.launched = time.time()
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in reap()
        self.proc = subprocess.Popen([sys.executable, __file__, RUN, json.dumps(spec)],
                                     cwd=root, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True)
        self.events: list[dict] = []
        self.seen: dict[int, int | None] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith(EVENT):
                try:
                    self.events.append(json.loads(line[len(EVENT):]))
                except ValueError:
                    pass
            else:
                self._log.write(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def remember(self) -> None:
        """Note every process below the application now (executors started after a kill
        included): :meth:`reap` kills those still running at the end."""
        from tests.integration.soak import descendants

        for pid in descendants(self.proc.pid):
            self.seen.setdefault(pid, proc_start_time(pid))

    def event(self, name: str) -> dict | None:
        return next((e for e in reversed(self.events) if e.get("event") == name), None)

    def progress_before(self, t: float) -> dict | None:
        """The last progress the application printed before wall time ``t``."""
        before = [e for e in self.events if e.get("event") == "progress" and e["t"] <= t]
        return before[-1]["progress"] if before else None

    def failure(self) -> str | None:
        bad = [e for e in self.events if e.get("event") in ("failed", "terminated")]
        if bad:
            return bad[-1].get("error") or f"the application stopped ({bad[-1].get('state')})"
        if self.proc.poll() not in (None, 0):
            return f"the application exited {self.proc.returncode}"
        return None

    def stop(self, stop_file: Path, timeout_s: float = 300) -> None:
        """Ask the application to close (stop file, stdin closed) and wait for it."""
        self.remember()
        stop_file.touch()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            print(f"  the application did not close within {timeout_s:.0f}s: killed",
                  flush=True)
        self._reader.join(30)

    def reap(self) -> None:
        """Kill the application if it still runs, and every process of it still alive."""
        if self.proc.poll() is None:
            self.remember()
            self.proc.kill()
            self.proc.wait(60)
        for pid, started in self.seen.items():
            if proc_start_time(pid) == started and started is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self._log.close()

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


class SteadyProducer(threading.Thread):
    """Writes ``rate`` records/s, record i under key ``k<i % keys>``, counting per key."""

    def __init__(self, bootstrap: str, topic: str, keys: int, rate: float):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.keys, self.rate = bootstrap, topic, keys, rate
        self.counts = [0] * keys
        self.sent = 0
        self.stopping = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        from _common import producer, send

        p = producer(self.bootstrap, **{"linger.ms": 5})
        began = time.monotonic()
        try:
            while not self.stopping.is_set():
                due = int((time.monotonic() - began) * self.rate)
                while self.sent < due:
                    k = self.sent % self.keys
                    send(p, self.topic, f"k{k}".encode(), b"x")
                    self.counts[k] += 1
                    self.sent += 1
                p.poll(0)
                self.stopping.wait(0.01)
        except Exception as e:  # noqa: BLE001 - reported by the run
            self.error = f"{type(e).__name__}: {e}"
        finally:
            left = p.flush(60)
            if left:
                self.error = self.error or f"{left} records not delivered"


class OutputWatch(threading.Thread):
    """A read_committed consumer of every output partition from its end: the wall-clock
    arrival time of every record, per partition (``offsets``: each record's offset)."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        from confluent_kafka import OFFSET_END, Consumer, TopicPartition

        self.arrivals: dict[int, list[float]] = defaultdict(list)
        self.offsets: dict[int, list[int]] = defaultdict(list)
        self.stopping = threading.Event()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id":
                                  f"failover-watch-{uuid.uuid4().hex[:8]}",
                                  "enable.auto.commit": False,
                                  "isolation.level": "read_committed",
                                  "fetch.wait.max.ms": 10})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(PARTITIONS)])

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                msgs = self.consumer.consume(10_000, 0.05)
                now = time.time()
                for m in msgs:
                    if m.error() is None:
                        self.arrivals[m.partition()].append(now)
                        self.offsets[m.partition()].append(m.offset())
        finally:
            self.consumer.close()


def wait_committed(admin, app: App, group: str, ends: dict[tuple[str, int], int],
                   timeout_s: float, what: str) -> float:
    """Wait until consumer group ``group`` has committed ``ends``; the wall time then."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = admin.group_offsets(group)
        if all(got.get(tp, 0) >= end for tp, end in ends.items()):
            return time.time()
        if not app.alive() or app.failure():
            raise RuntimeError(f"the application stopped while {what}: {app.failure()}\n"
                               f"{app.tail()}")
        if time.monotonic() > deadline:
            behind = {tp[1]: end - got.get(tp, 0) for tp, end in ends.items()
                      if got.get(tp, 0) < end}
            raise RuntimeError(f"{what}: not committed after {timeout_s:.0f}s (records "
                               f"behind per partition: {behind})\n{app.tail()}")
        time.sleep(0.5)


def sleep_watching(app: App, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not app.alive():
            raise RuntimeError(f"the application exited while {what}: {app.failure()}\n"
                               f"{app.tail()}")
        app.remember()
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def executor_layout(app: App, app_id: str) -> list[dict]:
    """Each executor JVM of the application: its id, pid, working directory, the task
    directories in its ``state.dir`` and the tasks whose files its processes hold open."""
    from tests.integration.separate_disks import STATE_DIR
    from tests.integration.soak import descendants, executors

    out = []
    for pid in executors(app.proc.pid):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        exec_id = args[args.index("--executor-id") + 1] if "--executor-id" in args else "?"
        state = cwd / STATE_DIR / app_id
        tasks = sorted(p.name for p in state.iterdir()
                       if p.is_dir() and re.fullmatch(r"\d+_\d+", p.name)) if state.is_dir() \
            else []
        held = set()
        below = descendants(pid)
        for q in [pid, *below]:
            try:
                fds = os.listdir(f"/proc/{q}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(f"/proc/{q}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(f"{state}/"):
                    task = target[len(f"{state}/"):].split("/", 1)[0]
                    if re.fullmatch(r"\d+_\d+", task):
                        held.add(task)
        out.append({"id": exec_id, "pid": pid, "below": below, "dir": cwd, "tasks": tasks,
                    "open": sorted(held)})
    return sorted(out, key=lambda e: int(e["id"]) if e["id"].isdigit() else 1 << 30)


def kill_executor(victim: dict) -> float:
    """SIGKILL an executor's JVM and its Python daemon and workers; the wall time of it."""
    from tests.integration.soak import descendants

    below = set(victim["below"]) | set(descendants(victim["pid"]))
    os.kill(victim["pid"], signal.SIGKILL)
    at = time.time()
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return at


LINE_TIME = re.compile(r"^(\d{9,}\.\d{3}) ")
TASK_LINE = re.compile(r"task (\d+_\d+): (.*)")
RESTORED = re.compile(r"restored '[^']*' \((\d+) records, \d+ of a retried batch skipped\) "
                      r"in ([\d.]+)s")


def restore_lines(files: list[Path], since: float, until: float | None = None) -> dict:
    """The ``restoring`` and ``wiping`` lines per task id in ``files`` (all, and those
    stamped at or after ``since``, and before ``until`` if given), and the ``restored``
    lines in that span: records and seconds per task."""
    every: dict[str, int] = defaultdict(int)
    after: dict[str, int] = defaultdict(int)
    restored: dict[str, list[tuple[int, float]]] = defaultdict(list)
    began: dict[tuple[str, str], float] = {}  # (pid, task) -> its "restoring store" line
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            m = TASK_LINE.search(line)
            if not m or not ("restoring" in line or "wiping" in line or "restored" in line):
                continue
            stamp = LINE_TIME.match(line)
            later = stamp is None or (float(stamp.group(1)) >= since and (  # no stamp: counted
                until is None or float(stamp.group(1)) < until))
            task = m.group(1)
            pid = line.split()[1] if stamp else ""
            if stamp and "restoring store" in line:
                began[(pid, task)] = float(stamp.group(1))
            if "restoring" in line or "wiping" in line:
                every[task] += 1
                if later:
                    after[task] += 1
            r = RESTORED.search(line)
            if r and later:  # timed by the stamps (ms) if it can be, else its own 0.1 s
                start = began.pop((pid, task), None)
                took = float(stamp.group(1)) - start if stamp and start else float(r.group(2))
                restored[task].append((int(r.group(1)), round(took, 3)))
    return {"all": dict(every), "after_kill": dict(after), "restored": dict(restored)}


def gaps(times: list[float], start: float, end: float) -> tuple[float, float | None]:
    """The longest gap between consecutive ``times`` in [start, end], counting the one from
    the last of them to ``end``; and when it began (None: no arrival in the window)."""
    inside = [t for t in sorted(times) if start <= t <= end]
    if not inside:
        return end - start, None
    marks = inside + [end]
    worst, began = 0.0, inside[0]
    for a, b in zip(marks, marks[1:], strict=False):
        if b - a > worst:
            worst, began = b - a, a
    return worst, began


def check_output(bootstrap: str, dst: str, written: list[int], guarantee: str) -> dict:
    """Every key's counts in the output (read_committed, in offset order): the last equals
    the records written for it; under exactly_once_v2 they are 1, 2, ..., n."""
    from kspark import Serdes
    from kspark._engine.partitioner import default_partition
    from tests.integration.soak import read_all

    long = Serdes.Long()
    seq: dict[str, list[int]] = defaultdict(list)
    where: dict[str, set[int]] = defaultdict(set)
    for m in read_all(bootstrap, dst, timeout_s=300):
        k = m.key().decode()
        seq[k].append(long.deserialize(dst, m.value()))
        where[k].add(m.partition())
    wrong_final, not_sequential, missing = 0, 0, 0
    examples = []
    for i, n in enumerate(written):
        k = f"k{i}"
        got = seq.get(k)
        if not got:
            missing += 1
            if len(examples) < 5:
                examples.append(f"{k}: no output, {n} written")
            continue
        if got[-1] != n:
            wrong_final += 1
            if len(examples) < 5:
                examples.append(f"{k}: last count {got[-1]}, {n} written")
        if guarantee == "exactly_once_v2" and got != list(range(1, len(got) + 1)):
            not_sequential += 1
            if len(examples) < 5:
                examples.append(f"{k}: counts not 1..n ({got[:8]}{'...' if len(got) > 8 else ''})")
    moved = sum(1 for k, ps in where.items()
                if ps != {default_partition(k.encode(), PARTITIONS)})
    ok = wrong_final == 0 and not_sequential == 0 and missing == 0 and moved == 0 \
        and set(seq) <= {f"k{i}" for i in range(len(written))}
    return {"ok": ok, "records": sum(len(v) for v in seq.values()), "keys": len(seq),
            "wrong_final": wrong_final, "not_sequential": not_sequential,
            "missing": missing, "keys_on_another_partition": moved, "examples": examples}


def logs_of(root: Path) -> list[Path]:
    """The run's kspark log files: the driver's (``app.log``) and every executor's stderr."""
    return [root / "app.log", *sorted((root / "spark-home" / "work").glob("*/*/stderr"))]


EPOCH_START = re.compile(r"stream thread (\d+) to executor (\S+) \(free slots")
EPOCH_LOST = re.compile(r"real-time stream thread (\d+)'s epoch ended")
NEW_TASKS = re.compile(r"stream threads \S.* take new tasks")


def driver_lines(path: Path, start: float, end: float) -> dict:
    """The driver's epoch lines stamped in [start, end): each ``stream thread i to executor
    e`` (a thread's job, i.e. an epoch, being placed as it starts: with several executors
    the driver logs one per epoch), each lost epoch (``epoch ended ... starting it again``)
    and each ``take new tasks`` (a reassignment)."""
    starts, lost, reassigned = [], [], []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        stamp = LINE_TIME.match(line)
        if not stamp or not start <= float(stamp.group(1)) < end:
            continue
        at = float(stamp.group(1))
        if m := EPOCH_START.search(line):
            starts.append((at, int(m.group(1)), m.group(2)))
        elif m := EPOCH_LOST.search(line):
            lost.append((at, int(m.group(1))))
        elif NEW_TASKS.search(line):
            reassigned.append((at, line.split(" INFO ", 1)[-1][:200]))
    return {"starts": starts, "lost": lost, "reassigned": reassigned}


def steady_window(app: App, seconds: float, result: dict) -> tuple[float, float]:
    """``--no-kill``: the application runs ``seconds`` at the steady rate and nothing is
    killed; the window's wall times (start, end). Notes the progress at both ends."""
    app.remember()
    start = time.time()
    result["progress_at_window_start"] = app.progress_before(start)
    print(f"  steady window of {seconds:g}s, nothing killed", flush=True)
    sleep_watching(app, seconds, "running the steady window")
    end = time.time()
    result["progress_at_window_end"] = app.progress_before(end)
    return start, end


def steady_figures(result: dict, app: App, watch: OutputWatch, window: tuple[float, float],
                   final: dict | None, logs: list[Path]) -> None:
    """``--no-kill``'s figures over the steady window: each partition's longest output gap
    (and when it began, from the application's start), the epochs that started (and so
    ended) in it with the longest output gap around each, the restore counters at both
    ends of it and at the close, and the restore log lines in it."""
    start, end = window
    started = (app.event("started") or {}).get("t", start)
    result["window_s"] = round(end - start, 1)
    # times are from the application's start (its streams.start() returned)
    result["started_s"] = round(started - app.launched, 1)  # from the process's launch
    result["window_began_s"] = round(start - started, 1)
    by_gap = {q: gaps(watch.arrivals.get(q, []), start, end) for q in range(PARTITIONS)}
    result["gaps_s"] = {q: round(g, 3) for q, (g, _) in by_gap.items()}
    result["gap_began_s"] = {q: (round(b - started, 1) if b is not None else None)
                             for q, (_, b) in by_gap.items()}
    worst = max(by_gap.items(), key=lambda kv: kv[1][0])
    result["max_gap_s"] = round(worst[1][0], 3)
    result["max_gap_partition"] = worst[0]
    result["max_gap_began_s"] = (round(worst[1][1] - started, 1)
                                 if worst[1][1] is not None else None)
    result["records_in_window"] = sum(sum(1 for t in watch.arrivals.get(q, [])
                                          if start <= t <= end) for q in range(PARTITIONS))
    seen = driver_lines(logs[0], start, end)
    around = []
    for at, thread, executor in seen["starts"]:
        near = {q: gaps(watch.arrivals.get(q, []), max(start, at - 10), min(end, at + 10))[0]
                for q in range(PARTITIONS)}
        q = max(near, key=near.get)
        around.append({"at_s": round(at - started, 1), "thread": thread,
                       "executor": executor, "max_gap_s": round(near[q], 3), "partition": q})
    result["epoch_starts"] = around  # each: an epoch end of that thread just before it
    # the baseline: the longest gap of any partition with no epoch start within 10 s
    marks = sorted(at for at, _, _ in seen["starts"])
    spans, lo = [], start
    for at in marks:
        if at - 10 > lo:
            spans.append((lo, at - 10))
        lo = max(lo, at + 10)
    if end > lo:
        spans.append((lo, end))
    away = [(gaps(watch.arrivals.get(q, []), a, b)[0], q) for a, b in spans
            for q in range(PARTITIONS)]
    result["max_gap_away_from_epoch_starts_s"] = round(max(away)[0], 3) if away else None
    result["epoch_starts_in_window"] = len(around)
    result["epochs_lost"] = [{"at_s": round(at - started, 1), "thread": th}
                             for at, th in seen["lost"]]
    result["reassignments"] = [{"at_s": round(at - started, 1), "line": s}
                               for at, s in seen["reassigned"]]
    a = result.get("progress_at_window_start") or {}
    b = result.get("progress_at_window_end") or {}
    for key in ("restored_records", "task_restores", "task_moves", "tasks_kept", "batches"):
        result[f"{key}_at_window_start"] = a.get(key)
        result[f"{key}_at_window_end"] = b.get(key)
        result[key] = (final or {}).get(key)  # at the close: every epoch's counts
        result[f"{key}_growth"] = (b[key] - a[key]) if key in a and key in b else None
    lines = restore_lines(logs, start, end)
    result["restore_log_lines_in_window"] = lines["after_kill"]
    result["restore_log_lines_outside_window"] = {
        t: n - lines["after_kill"].get(t, 0) for t, n in lines["all"].items()
        if n - lines["after_kill"].get(t, 0)}
    result["restored_in_window"] = {t: [{"records": n, "s": s} for n, s in v]
                                    for t, v in lines["restored"].items()}


def standbys_refused(standbys: int, mode: str, guarantee: str) -> str | None:
    """Why kspark's config refuses ``num.standby.replicas`` in ``mode`` under
    ``guarantee`` (None: it takes it)."""
    from kspark import StreamsConfig
    from kspark.errors import ConfigError

    try:
        StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1",
                       "execution.mode": mode, "processing.guarantee": guarantee,
                       "num.standby.replicas": standbys})
    except ConfigError as e:
        return str(e)
    return None


def one_run(args, bootstrap: str, work: Path, mode: str, standbys: int) -> dict:
    from _common import producer, send
    from kspark._kafka.admin import Admin
    from tests.integration.separate_disks import STATE_DIR, separate_disks_env

    admin = Admin(bootstrap, 20000)
    tag = uuid.uuid4().hex[:6]
    app_id = f"failover-{mode[0]}{args.guarantee[0]}{standbys}-{tag}"
    src, dst = f"{app_id}-in", f"{app_id}-out"
    admin.create_topics({src: PARTITIONS, dst: PARTITIONS})
    root = work / app_id
    (root / "pylog").mkdir(parents=True)
    (root / "pylog" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = separate_disks_env(root)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(root / "pylog"), str(ROOT), str(ROOT / "benchmarks")]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[LOG_ENV] = "1"
    print(f"\n== {mode}, {args.guarantee}, standbys {standbys}, {args.keys} keys, "
          f"{args.rate:g} records/s, {args.executors} executors ({app_id})", flush=True)

    # the preload: every key once
    began = time.monotonic()
    p = producer(bootstrap)
    for k in range(args.keys):
        send(p, src, f"k{k}".encode(), b"x")
        if k % 10_000 == 0:
            p.poll(0)
    assert p.flush(120) == 0, "the preload was not all delivered"
    inputs = [(src, q) for q in range(PARTITIONS)]
    preload_end = admin.end_offsets(inputs)
    print(f"  preload: {args.keys} records in {time.monotonic() - began:.1f}s", flush=True)

    config = {"application.id": app_id, "bootstrap.servers": bootstrap,
              "state.dir": STATE_DIR, "processing.guarantee": args.guarantee,
              "execution.mode": mode, "autostop.at": "none"}
    if mode == "micro_batch":
        config["checkpoint.location"] = str(root / "checkpoint")
    elif args.guarantee == "at_least_once":  # else Kafka Streams' 30 s between commits
        config["commit.interval.ms"] = 1000
    if standbys:
        config["num.standby.replicas"] = standbys
    for item in args.set:
        key, _, value = item.partition("=")
        config[key] = int(value) if value.lstrip("-").isdigit() else value
    spark_conf = dict(item.partition("=")[::2] for item in args.conf)
    stop_file = root / "stop"
    spec = {"src": src, "dst": dst, "master": f"local-cluster[{args.executors},1,1024]",
            "config": config, "spark_conf": spark_conf, "stop_file": str(stop_file),
            "progress_s": 1.0}
    app = App(spec, root, env)
    steady = watch = None
    result: dict = {"mode": mode, "guarantee": args.guarantee, "standbys": standbys,
                    "keys": args.keys, "rate": args.rate, "executors": args.executors,
                    "no_kill": args.no_kill, "config": {k: v for k, v in config.items()
                                                        if k not in ("bootstrap.servers",
                                                                     "checkpoint.location")}}
    try:
        started_at = time.time()
        deadline = time.monotonic() + 600
        while app.event("started") is None:
            if not app.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the application did not start: {app.failure()}\n"
                                   f"{app.tail()}")
            time.sleep(0.2)
        app.remember()
        steady = SteadyProducer(bootstrap, src, args.keys, args.rate)
        steady.start()
        caught = wait_committed(admin, app, app_id, preload_end,
                                900 + args.keys / 100, "catching up with the preload")
        result["preload_caught_up_s"] = round(caught - started_at, 1)
        print(f"  caught up with the preload {caught - started_at:.1f}s after the start; "
              f"warming for {args.warm_s:g}s", flush=True)
        watch = OutputWatch(bootstrap, dst)
        watch.start()
        sleep_watching(app, args.warm_s, "warming")

        if args.no_kill:
            window = steady_window(app, args.duration_s, result)
            layout_after = executor_layout(app, app_id)
            result["executors_after"] = [
                {"id": e["id"], "tasks": e["tasks"], "open": e["open"]}
                for e in layout_after]
        else:
            layout = executor_layout(app, app_id)
            for e in layout:
                print(f"  executor {e['id']} (pid {e['pid']}): task dirs {e['tasks']}, "
                      f"open {e['open']}", flush=True)
            with_tasks = [e for e in layout if e["tasks"]]
            if not with_tasks:
                raise RuntimeError(f"no executor has task directories: {layout}")
            victim = max(with_tasks, key=lambda e: (len(e["open"]), len(e["tasks"])))
            movers = sorted(int(t.split("_")[1]) for t in victim["tasks"] if t.startswith("0_"))
            bystanders = [q for q in range(PARTITIONS) if q not in movers]
            if set(victim["open"]) != set(victim["tasks"]):
                print(f"  note: executor {victim['id']} holds open {victim['open']}, its state.dir "
                      f"has {victim['tasks']}; movers are taken from the directories", flush=True)
            app.remember()
            progress_at_kill = app.progress_before(time.time())
            kill_at = kill_executor(victim)
            # what the output held when the executor died: a record at or after these offsets
            # was written after the kill (the killed tasks' open transactions are aborted)
            written_by_kill = admin.end_offsets([(dst, q) for q in range(PARTITIONS)],
                                                committed=False)
            print(f"  killed executor {victim['id']} (pid {victim['pid']} and "
                  f"{len(victim['below'])} Python processes); movers {movers}, bystanders "
                  f"{bystanders}", flush=True)
            result.update({"killed_executor": victim["id"], "movers": movers,
                           "bystanders": bystanders, "executors_before": [
                               {"id": e["id"], "tasks": e["tasks"], "open": e["open"]}
                               for e in layout]})
            sleep_watching(app, args.after_s, "running after the kill")
            layout_after = executor_layout(app, app_id)
            result["executors_after"] = [{"id": e["id"], "tasks": e["tasks"], "open": e["open"]}
                                         for e in layout_after]

        # the end: no more input; the application catches up and closes
        stopped_at = time.time()
        steady.stopping.set()
        steady.join(120)
        if steady.error:
            raise RuntimeError(f"the producer failed: {steady.error}")
        written = [1 + c for c in steady.counts]  # the preload wrote every key once
        ends = admin.end_offsets(inputs)
        done = wait_committed(admin, app, app_id, ends, 600, "catching up at the end")
        print(f"  caught up with the input {done - stopped_at:.1f}s after the "
              f"producer stopped ({steady.sent} records written while it ran)", flush=True)
        time.sleep(2)  # the last committed transactions reach the watch
        watch.stopping.set()
        watch.join(30)
        failure = app.failure()
        app.stop(stop_file)
        closed = app.event("closed")
        final = (closed or {}).get("progress") or app.progress_before(time.time())
        result["close_s"] = round((closed or {}).get("close_s", float("nan")), 1)
        result["app_failure"] = failure

        # the figures
        if args.no_kill:
            steady_figures(result, app, watch, window, final, logs_of(root))
        else:
            window = (kill_at - 5, kill_at + args.after_s)
            by_gap = {q: gaps(watch.arrivals.get(q, []), *window) for q in bystanders}
            worst = max(by_gap.items(), key=lambda kv: kv[1][0]) if by_gap else None
            result["bystander_max_gap_s"] = round(worst[1][0], 2) if worst else None
            result["bystander_max_gap_partition"] = worst[0] if worst else None
            result["bystander_max_gap_began_s"] = (
                round(worst[1][1] - kill_at, 2) if worst and worst[1][1] is not None else None)
            result["bystander_gaps_s"] = {q: round(g, 2) for q, (g, _) in by_gap.items()}
            firsts = {}
            for q in movers:  # its first record written after the kill: by the moved task
                after = [t for t, o in zip(watch.arrivals.get(q, []), watch.offsets.get(q, []),
                                           strict=True) if o >= written_by_kill[(dst, q)]]
                firsts[q] = round(min(after) - kill_at, 2) if after else None
            result["mover_first_output_s"] = firsts
            known = [v for v in firsts.values() if v is not None]
            result["mover_max_s"] = (max(known) if known and len(known) == len(firsts)
                                     else None)
            # the longest gap of the movers too, for comparison with the bystanders'
            result["mover_gaps_s"] = {q: round(gaps(watch.arrivals.get(q, []), *window)[0], 2)
                                      for q in movers}
            for key in ("restored_records", "task_restores", "task_moves", "tasks_kept",
                        "batches"):
                result[key] = (final or {}).get(key)
                result[f"{key}_at_kill"] = (progress_at_kill or {}).get(key)
            logs = logs_of(root)
            lines = restore_lines(logs, kill_at)
            result["restore_log_lines_per_task"] = lines["after_kill"]
            result["restore_log_lines_before_kill"] = {
                t: n - lines["after_kill"].get(t, 0) for t, n in lines["all"].items()
                if n - lines["after_kill"].get(t, 0)}
            restored_bystanders = sorted(t for t in lines["after_kill"]
                                         if int(t.split("_")[1]) in bystanders)
            result["bystanders_restoring"] = restored_bystanders
            recs = sum(n for v in lines["restored"].values() for n, _ in v)
            secs = sum(s for v in lines["restored"].values() for _, s in v)
            result["restore_log"] = {t: [{"records": n, "s": s} for n, s in v]
                                     for t, v in lines["restored"].items()}
            result["restore_records_per_s"] = round(recs / secs) if secs > 0 else None
        changelog = f"{app_id}-counts-changelog"
        cl_ends = admin.end_offsets([(changelog, q) for q in range(PARTITIONS)],
                                    committed=False)
        result["changelog_end_offsets"] = sum(cl_ends.values())
        result["records_written"] = sum(written)
        check = check_output(bootstrap, dst, written, args.guarantee)
        result["output"] = check
        result["output_ok"] = check["ok"] and failure is None
    finally:
        if steady is not None:
            steady.stopping.set()
        if watch is not None:
            watch.stopping.set()
        if app.alive():
            app.stop(stop_file, timeout_s=120)
        app.reap()
    return result


def s(v, unit="s"):
    """A figure, readable (n/a when not measured)."""
    return "n/a" if v is None else f"{v:g}{unit}" if isinstance(v, (int, float)) else str(v)


def _check(r: dict) -> str:
    """The output check's verdict, with what was wrong when it failed."""
    if r["output_ok"]:
        return "OK"
    out = r["output"]
    return (f"FAILED (wrong final {out['wrong_final']}, not 1..n {out['not_sequential']}, "
            f"missing {out['missing']}, keys on another partition "
            f"{out['keys_on_another_partition']}"
            f"{', app: ' + r['app_failure'] if r['app_failure'] else ''}; "
            f"{'; '.join(out['examples'][:3])})")


def table(r: dict) -> str:
    """A run's figures, readable."""
    movers = ", ".join(f"p{q} {s(v)}" for q, v in r["mover_first_output_s"].items())
    restoring = r["restore_log_lines_per_task"]
    rows = [
        ("run", f"{r['mode']}, {r['guarantee']}, standbys {r['standbys']}, {r['keys']} keys, "
                f"{r['rate']:g} records/s, {r['executors']} executors"),
        ("killed", f"executor {r['killed_executor']}: movers {r['movers']}, bystanders "
                   f"{r['bystanders']}"),
        ("bystanders", f"longest output gap {s(r['bystander_max_gap_s'])} (partition "
                       f"{r['bystander_max_gap_partition']}, from kill"
                       f"{r['bystander_max_gap_began_s']:+g}s)"
                       if r["bystander_max_gap_began_s"] is not None else
                       f"longest output gap {s(r['bystander_max_gap_s'])} (no output)"),
        ("", "per partition: " + ", ".join(f"p{q} {s(g)}" for q, g in
                                           r["bystander_gaps_s"].items())),
        ("movers", f"first output after the kill: max {s(r['mover_max_s'])} ({movers})"),
        ("restored", f"{r['restored_records']} records, {r['task_restores']} task restores, "
                     f"{r['task_moves']} task moves (at the kill: {r['restored_records_at_kill']}"
                     f", {r['task_restores_at_kill']}, {r['task_moves_at_kill']})"),
        ("restore log", (", ".join(f"{t} {n}" for t, n in sorted(restoring.items())) or "none")
         + (f"; BYSTANDERS RESTORING: {r['bystanders_restoring']}"
            if r["bystanders_restoring"] else "; no bystander restored")),
        ("restore rate", s(r["restore_records_per_s"], " records/s") + " (the restore "
                         "log lines after the kill)"),
        *_closing_rows(r),
    ]
    return "\n".join(f"  {k:<12} {v}" for k, v in rows)


def _closing_rows(r: dict) -> list[tuple[str, str]]:
    """The rows both tables end with: where the tasks are, the changelog, the output check."""
    out = r["output"]
    return [("placement", "after: " + "; ".join(f"executor {e['id']} {e['open']}"
                                                for e in r["executors_after"])),
            ("changelog", f"{r['changelog_end_offsets']} (end offsets)"),
            ("output", f"{_check(r)}: {out['records']} records, {out['keys']} keys, "
                       f"{r['records_written']} written")]


def table_steady(r: dict) -> str:
    """A ``--no-kill`` run's figures, readable."""
    starts = r["epoch_starts"]
    by_thread: dict[int, int] = defaultdict(int)
    for e in starts:
        by_thread[e["thread"]] += 1
    worst_end = max(starts, key=lambda e: e["max_gap_s"]) if starts else None

    def counters(at: str) -> str:
        return ", ".join(f"{s(r.get(f'{k}_{at}'), '')}" for k in
                         ("restored_records", "task_restores", "task_moves"))

    rows = [
        ("run", f"{r['mode']}, {r['guarantee']}, standbys {r['standbys']}, {r['keys']} keys, "
                f"{r['rate']:g} records/s, {r['executors']} executors, nothing killed"),
        ("window", f"{s(r['window_s'])} from {s(r['window_began_s'])} after the start "
                   f"({r['records_in_window']} output records in it; times here are from "
                   f"start() returning, {s(r['started_s'])} after the launch)"),
        ("longest gap", f"{s(r['max_gap_s'])} (partition {r['max_gap_partition']}, began "
                        f"{s(r['max_gap_began_s'])} after the start)"),
        ("", "per partition: " + ", ".join(
            f"p{q} {s(g)} (at {s(r['gap_began_s'][q])})" for q, g in r["gaps_s"].items())),
        ("epoch ends", f"{len(starts)} epochs started in the window (per thread: "
                       + ", ".join(f"{th} {n}" for th, n in sorted(by_thread.items()))
                       + f"); batches {r['batches_at_window_start']} -> "
                         f"{r['batches_at_window_end']}; lost epochs {len(r['epochs_lost'])}, "
                         f"reassignments {len(r['reassignments'])}"),
        ("", "longest gap within 10 s of an epoch start (any partition): " + (
            f"{s(worst_end['max_gap_s'])} (thread {worst_end['thread']} at "
            f"{s(worst_end['at_s'])}, partition {worst_end['partition']})"
            if worst_end else "n/a")),
        ("", "longest gap with no epoch start within 10 s (the baseline): "
             f"{s(r.get('max_gap_away_from_epoch_starts_s'))}"),
        ("", "each: " + "; ".join(f"{s(e['at_s'])} t{e['thread']}@{e['executor']} "
                                   f"{s(e['max_gap_s'])}" for e in starts)),
        ("restored", "records, task restores, task moves: window start "
                     f"{counters('at_window_start')}; end {counters('at_window_end')}; "
                     f"growth {counters('growth')}; at the close "
                     f"{s(r['restored_records'], '')}, {s(r['task_restores'], '')}, "
                     f"{s(r['task_moves'], '')}"),
        ("restore log", "in the window: " + (", ".join(
            f"{t} {n}" for t, n in sorted(r["restore_log_lines_in_window"].items())) or "none")
         + "; outside it: " + (", ".join(
            f"{t} {n}" for t, n in sorted(r["restore_log_lines_outside_window"].items()))
            or "none")),
        *_closing_rows(r),
    ]
    return "\n".join(f"  {k:<12} {v}" for k, v in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", nargs="+", default=["real_time"],
                    choices=["real_time", "micro_batch"])
    ap.add_argument("--standbys", nargs="+", type=int, default=[0],
                    help="num.standby.replicas (0: not set)")
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=1000, help="records/s while the app runs")
    ap.add_argument("--warm-s", type=float, default=20)
    ap.add_argument("--after-s", type=float, default=60)
    ap.add_argument("--no-kill", action="store_true",
                    help="kill nothing: measure a steady window of --duration-s instead")
    ap.add_argument("--duration-s", type=float, default=1200,
                    help="--no-kill: the steady window's length")
    ap.add_argument("--guarantee", default="exactly_once_v2",
                    choices=["exactly_once_v2", "at_least_once"])
    ap.add_argument("--executors", type=int, default=3)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the application (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a kspark config key for the application (repeatable)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (logs, executors' directories)")
    args = ap.parse_args()
    from kspark._local.broker import LocalBroker, free_port

    variants = []
    for mode in args.modes:
        for n in args.standbys:
            why = standbys_refused(n, mode, args.guarantee) if n > 0 else None
            if why is not None:
                print(f"failover: standbys are not available (num.standby.replicas={n} is "
                      f"refused by kspark's config: {why}); skipping {mode} with {n} "
                      "standby(s)", flush=True)
                continue
            variants.append((mode, n))
    if not variants:
        return
    work = Path(tempfile.mkdtemp(prefix="kspark-failover-"))
    broker = LocalBroker(work / "broker", port=free_port(), heap="1g")
    bootstrap = broker.start()
    failed = False
    try:
        for mode, n in variants:
            try:
                r = one_run(args, bootstrap, work, mode, n)
            except Exception as e:  # noqa: BLE001 - the next variant still runs
                failed = True
                print(f"failover: {mode}, standbys {n}: FAILED: {e}", flush=True)
                continue
            print("failover: " + json.dumps(r, default=str), flush=True)
            print(table_steady(r) if args.no_kill else table(r), flush=True)
            failed |= not r["output_ok"]
    finally:
        broker.stop()
        if args.keep or failed:
            print(f"(work directory kept: {work})", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == RUN:
        sys.exit(app_main(json.loads(sys.argv[2])))
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
