"""kspark on a real Spark standalone cluster (a master and two workers, each with its own
work directory, as separate machines), the application submitted with ``spark-submit``.

One submission (tests/integration/standalone_app.py) runs the application twice at once,
under exactly_once_v2 and under at_least_once: a windowed count fed with records of which
some are late by two windows (Kafka Streams drops them), and a stream-table join, as
incremental batch runs in small micro-batches. After the first micro-batches one worker
is SIGKILLed together with its executor while that runs a task; Spark goes on with the
other worker's executor and both runs must finish with the right output: exact under
exactly_once_v2 (read_committed), right final values per key and window under
at_least_once (duplicates allowed). In both, late records stay dropped.

Two more submissions (tests/integration/standalone_rt_app.py) run a stateful application
over many epochs in real-time mode and over many micro-batches: its tasks return to the
executor whose disk holds their stores, and after an executor is killed only its tasks move
and restore, once.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark import Serdes, StreamsBuilder
from kspark.testing import TopologyTestDriver
from tests.conftest import consume_all
from tests.integration import standalone_app as app
from tests.integration.soak import descendants
from tests.integration.standalone import stop_process_group

pytestmark = pytest.mark.integration

S, L = Serdes.String(), Serdes.Long()
APP = Path(app.__file__).resolve()
PARTITIONS = 4
WIN_PER_PARTITION, WIN_KEYS = 500, 5          # windowed count input: 2,000 records
USERS_PER_PARTITION = CLICKS_PER_PARTITION = 150  # join input: 600 users, 600 clicks
MAX_OFFSETS = 300                               # per source and micro-batch: 7 batches
BASE = 1_700_000_000_000                        # a multiple of the window size


# -- the input --------------------------------------------------------------------------
def windowed_input() -> dict[int, list[tuple[str, str, int]]]:
    """Per partition, in offset order, ``(key, value, timestamp)``: 100 ms apart; every
    25th record late by two windows (20 s: dropped, its window closed long ago), every
    20th another 1.5 s late (within the 2 s grace: counted, sometimes in the window before).

    A micro-batch takes 75 records of each partition (MAX_OFFSETS shared by equal lags), so
    every micro-batch after the first starts with a late record: only the stream time the
    task resumes (its progress after the previous batch, wherever that ran) says it is late."""
    out = {}
    for p in range(PARTITIONS):
        recs = []
        for i in range(WIN_PER_PARTITION):
            ts = BASE + i * 100
            if i % 25 == 0 and i:
                ts -= 100 + 2 * app.WINDOW_MS
            elif i % 20 == 9:
                ts -= 1_500
            recs.append((f"w{p}-{(i // 3) % WIN_KEYS}", f"v{i}", ts))
        out[p] = recs
    return out


def join_input() -> tuple[dict[int, list], dict[int, list]]:
    """Per partition: users (the table; one record per key, all older than every click)
    and clicks. Click ``i`` names a user written at an offset <= i of the same partition
    (users and clicks have equal lags, so a micro-batch takes equal offset ranges of both
    and a click's user is always read by then); every 10th click names no user."""
    rng = random.Random(11)
    users, clicks = {}, {}
    for p in range(PARTITIONS):
        users[p] = [(f"u{p}-{j}", f"name{p}-{j}", BASE + j) for j in range(USERS_PER_PARTITION)]
        clicks[p] = [(f"nobody{p}-{i}" if i % 10 == 9 else f"u{p}-{rng.randrange(i + 1)}",
                      f"c{p}-{i}", BASE + 100_000 + 10 * i) for i in range(CLICKS_PER_PARTITION)]
    return users, clicks


def produce(broker: str, topic: str, per_partition: dict[int, list]) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True, "linger.ms": 5})
    for part, recs in per_partition.items():
        for k, v, ts in recs:
            p.produce(topic, key=k.encode(), value=v.encode(), partition=part, timestamp=ts)
    assert p.flush(30) == 0


# -- the expected output, two ways ------------------------------------------------------
def expected_windowed(inp: dict[int, list]) -> tuple[dict[str, list[int]], int]:
    """Kafka Streams' rule, computed here: a task per partition; its stream time is the
    highest timestamp seen; a record whose window ends at or before stream time - grace is
    dropped. Returns every update per ``<key>@<start>`` (in order) and how many were dropped."""
    updates: dict[str, list[int]] = defaultdict(list)
    dropped = 0
    for recs in inp.values():
        stream_time, counts = -1, defaultdict(int)
        for key, _, ts in recs:
            stream_time = max(stream_time, ts)
            start = ts - ts % app.WINDOW_MS
            if start + app.WINDOW_MS <= stream_time - app.GRACE_MS:
                dropped += 1
                continue
            counts[(key, start)] += 1
            updates[f"{key}@{start}"].append(counts[(key, start)])
    return dict(updates), dropped


def expected_joined(users: dict[int, list], clicks: dict[int, list]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for p in users:
        table = {k: v for k, v, _ in users[p]}
        for k, v, _ in clicks[p]:
            if k in table:
                out[k].append(f"{v}:{table[k]}")
    return dict(out)


def driver_output(add, inputs: list[tuple[str, list]], out_topic: str, value_serde) -> dict:
    """The same sub-topology on the TopologyTestDriver, one driver per input partition (a
    Kafka Streams task each), inputs piped in a task's order; every update per key."""
    got: dict[str, list] = defaultdict(list)
    for p in range(PARTITIONS):
        b = StreamsBuilder()
        add(b)
        with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
            pipes = {topic: d.create_input_topic(topic, S, S) for topic, _ in inputs}
            for topic, (k, v, ts) in by_head_timestamp([(topic, per[p]) for topic, per in inputs]):
                pipes[topic].pipe_input(k, v, ts)
            for k, v in d.create_output_topic(out_topic, S, value_serde).read_key_values_to_list():
                got[k].append(v)
    return dict(got)


def by_head_timestamp(partitions: list[tuple[str, list]]):
    """A task's order: each partition in offset order, the partition whose next record has
    the lowest timestamp first (ties: the earlier one), as Kafka Streams' PartitionGroup."""
    pos = [0] * len(partitions)
    while True:
        heads = [(recs[pos[n]][2], n) for n, (_, recs) in enumerate(partitions)
                 if pos[n] < len(recs)]
        if not heads:
            return
        _, n = min(heads)
        yield partitions[n][0], partitions[n][1][pos[n]]
        pos[n] += 1


def read(broker: str, topic: str, value_serde, at_least: int) -> dict[str, list]:
    """Every record of ``topic`` read with read_committed: the values per key, in order."""
    got: dict[str, list] = defaultdict(list)
    for m in consume_all(broker, topic, at_least, timeout_s=60):
        got[m.key().decode()].append(value_serde.deserialize(topic, m.value()))
    return dict(got)


def await_driver(proc: subprocess.Popen, timeout_s: float, tail: Callable[[], str]) -> None:
    """spark-submit ``proc`` ends, with exit code 0, within ``timeout_s``; ``tail()``: its
    log's end, for the failure message."""
    try:
        rc = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the driver did not finish in time:\n{tail()}") from None
    assert rc == 0, f"spark-submit exited {rc}:\n{tail()}"


def committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([f for f in commits.iterdir() if f.name.isdigit()]) if commits.is_dir() else 0


# -- one run, both guarantees ----------------------------------------------------------
GUARANTEES = ("exactly_once_v2", "at_least_once")
NAMES = ("win-in", "win-out", "users", "clicks", "joined")
CONF = {"spark.task.maxFailures": "8",
        "spark.executor.memory": "512m", "spark.ui.enabled": "false",
        # kspark's session defaults, given here: the app takes spark-submit's session
        "spark.python.daemon.module": "kspark._spark.daemon",
        "spark.python.worker.reuse": "true"}


@pytest.fixture(scope="module")
def run(broker, admin, standalone_cluster, tmp_path_factory):
    """One ``spark-submit`` running the application once per guarantee (at once, on the
    same two executors); worker 0 SIGKILLed, with its executor, while it runs a task (one
    held there by the application, see standalone_app.py) after both applications completed
    two micro-batches. Returns what the checks need."""
    cluster = standalone_cluster
    cluster.revive()  # every worker alive (another test may have killed one)
    tmp = tmp_path_factory.mktemp("standalone-run")
    tag = uuid.uuid4().hex[:6]
    t = {n: f"standalone-{n}-{tag}" for n in NAMES}
    outputs = {f"{t[n]}-{g}": PARTITIONS for n in ("win-out", "joined") for g in GUARANTEES}
    admin.create_topics({**{t[n]: PARTITIONS for n in ("win-in", "users", "clicks")}, **outputs})
    win, (users, clicks) = windowed_input(), join_input()
    produce(broker, t["win-in"], win)
    produce(broker, t["users"], users)
    produce(broker, t["clicks"], clicks)

    app_id = f"standalone-{tag}"
    checkpoints = tmp / "shared" / "checkpoints"   # shared storage stand-in: absolute
    driver_dir, log = tmp / "driver", tmp / "driver.log"
    victim = 0
    # a task on the victim's executor, once both applications committed two micro-batches,
    # holds its record until `release` exists (see standalone_app.py): the kill falls in it
    hold_dir = tmp / "hold"
    hold_dir.mkdir()
    held, release = hold_dir / "held", hold_dir / "release"
    t0 = time.monotonic()
    proc = cluster.submit(APP, [broker, ",".join(t[n] for n in NAMES), app_id,
                                ",".join(GUARANTEES), "kspark-state", str(checkpoints),
                                str(MAX_OFFSETS), str(cluster.work_dirs[victim].resolve()),
                                str(hold_dir)], conf=CONF, cwd=driver_dir, log=log)

    def tail() -> str:
        return log.read_text(errors="replace")[-6000:] if log.exists() else ""

    def batches() -> list[int]:
        return [committed_batches(checkpoints / f"{app_id}-{g}") for g in GUARANTEES]

    try:
        deadline = time.monotonic() + 180
        while not held.exists():   # a file: once there, it stays (the task waits)
            assert proc.poll() is None, f"the driver ended early ({proc.returncode}):\n{tail()}"
            assert time.monotonic() < deadline, (
                f"no task held a record on worker {victim} in time (micro-batches "
                f"{batches()}):\n{tail()}")
            time.sleep(0.2)
        holder = json.loads(held.read_text())
        executors = [cluster.executors(i) for i in range(2)]
        assert all(executors), f"expected an executor on each worker, saw {executors}"
        assert holder["pid"] in {q for e in executors[victim]
                                 for q in descendants(e)}, (holder, executors)
        # the held task's "Running task" line is in its executor's log (written before the
        # task ran), its "Finished task" cannot be: a bounded wait on a lasting state
        while not (running := cluster.running_tasks(victim)):
            assert time.monotonic() < deadline, (
                f"worker {victim} logs no running task while {holder} is held:\n{tail()}")
            time.sleep(0.2)
        before = batches()
        assert min(before) >= 2, before
        executor_dirs = [cluster.executor_dirs(i) for i in range(2)]
        killed = cluster.kill_worker(victim)
        t_kill = time.monotonic() - t0
        assert set(executors[victim]) <= set(killed)
        assert holder["pid"] in killed, (holder, killed)
        release.touch()
        await_driver(proc, 180, tail)
    finally:
        release.touch()
        stop_process_group(proc)
    print(f"\nstandalone: killed worker {victim} (pids {killed}) running task(s) {running} "
          f"(holding {holder['value']} of {holder['key']}) "
          f"after micro-batches {before}, {t_kill:.1f} s after spark-submit; finished after "
          f"{time.monotonic() - t0:.1f} s with micro-batches {batches()}")
    return {"cluster": cluster, "topics": t, "app_id": app_id, "log": log.read_text(
        errors="replace"), "driver_dir": driver_dir, "executor_dirs": executor_dirs,
        "before": before, "after": batches(), "inputs": (win, users, clicks)}


def test_the_run_used_the_cluster_and_each_executors_own_state_dir(run):
    """spark-submit's master held; micro-batches went on after the kill; state.dir is
    relative, so each executor's stores are in its own working directory:
    <work-dir>/<spark app id>/<executor id>/kspark-state/<application.id>/<task>."""
    assert f"master {run['cluster'].url} at" in run["log"], run["log"][-3000:]
    assert all(a > b for a, b in zip(run["after"], run["before"], strict=True)), (
        run["before"], run["after"])
    for g in GUARANTEES:
        app_name = f"{run['app_id']}-{g}"
        for i, dirs in enumerate(run["executor_dirs"]):
            assert dirs, f"worker {i} ran no executor"
            tasks = {d.name for e in dirs for d in (e / "kspark-state" / app_name).glob("*_*")}
            assert tasks, f"{app_name}: no task state in worker {i}'s executor dirs {dirs}"
        assert not list((run["driver_dir"] / "kspark-state" / app_name).glob("*_*")), \
            "no task ran on the driver"


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_interactive_queries_read_every_key_from_the_executors(run, guarantee):
    """After the run (a worker killed in it), KafkaStreams.store reads both stores from the
    executors that hold their tasks: the users table whole, and each window's final count
    (windows past retention are gone, as in Kafka Streams)."""
    line = next(x for x in run["log"].splitlines()
                if x.startswith(f"{run['app_id']}-{guarantee} iq "))
    got = json.loads(line.split(" iq ", 1)[1])
    win, users, _ = run["inputs"]
    assert got["users"] == {k: v for p in sorted(users) for k, v, _ in users[p]}
    finals = {k: ups[-1] for k, ups in expected_windowed(win)[0].items()}
    assert got["windows"] and all(finals[k] == n for k, n in got["windows"].items()), got


def test_the_topologies_expected_output_is_kafka_streams():
    """The expected output, computed here, is what the same sub-topologies give on the
    TopologyTestDriver (one driver per partition, as one Kafka Streams task each)."""
    t = {n: n for n in NAMES}
    win, (users, clicks) = windowed_input(), join_input()
    want_win, dropped = expected_windowed(win)
    assert dropped == PARTITIONS * (WIN_PER_PARTITION // 25 - 1)  # the late-by-two-windows ones
    assert driver_output(lambda b: app.add_windowed_count(b, t["win-in"], t["win-out"]),
                         [(t["win-in"], win)], t["win-out"], L) == want_win
    assert driver_output(lambda b: app.add_join(b, t["users"], t["clicks"], t["joined"]),
                         [(t["users"], users), (t["clicks"], clicks)], t["joined"],
                         S) == expected_joined(users, clicks)


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_output_after_a_worker_was_killed(run, broker, guarantee):
    """exactly_once_v2: read_committed output exact (every update once, in order; nothing
    lost). at_least_once: duplicates allowed, final value per window and key right, late
    records dropped. Both: no window that only late records would open."""
    t = run["topics"]
    win, users, clicks = run["inputs"]
    want_win, _ = expected_windowed(win)
    want_join = expected_joined(users, clicks)
    got_win = read(broker, f"{t['win-out']}-{guarantee}", L, sum(map(len, want_win.values())))
    got_join = read(broker, f"{t['joined']}-{guarantee}", S,
                    sum(map(len, want_join.values())))
    late_keys = set(got_win) - set(want_win)
    assert not late_keys, f"windows only late records open: {sorted(late_keys)[:10]}"
    if guarantee == "exactly_once_v2":
        assert got_win == want_win, _diff(got_win, want_win)
        assert got_join == want_join, _diff(got_join, want_join)
    else:
        final = {k: max(v) for k, v in got_win.items()}
        want_final = {k: v[-1] for k, v in want_win.items()}
        assert final == want_final, "final counts (late records counted?) " + _diff(
            final, want_final)
        assert {k: sorted(set(v)) for k, v in got_win.items()} == want_win, _diff(
            {k: sorted(set(v)) for k, v in got_win.items()}, want_win)
        assert {k: set(v) for k, v in got_join.items()} == {
            k: set(v) for k, v in want_join.items()}, _diff(got_join, want_join)


def _diff(got: dict, want: dict, n: int = 8) -> str:
    keys = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    return f"{len(keys)} keys differ, e.g.: " + "; ".join(
        f"{k}: got {got.get(k)} want {want.get(k)}" for k in keys[:n])


# -- placement: tasks stay with their state, in both modes ------------------------------
RT_APP = Path(__file__).resolve().parent / "standalone_rt_app.py"
RT_ROUNDS, RT_PER_ROUND, RT_KEYS = 5, 400, 40  # the kill after round 4, then one more
DEADLINE_S = 240  # from spark-submit to the kill


# the full matrix only (the suite's time: 55-66 s a mode); make test keeps the placement
# rules (test_placement.py, test_placement_jar.py), the shim's run (test_spark_host.py) and
# a real-time thread keeping its tasks across epochs (test_real_time.py)
@pytest.mark.full_matrix(reason="the suite's time (55-66 s a mode); the placement rules and "
                         "shim are tested in make test")
def test_tasks_return_to_the_executor_holding_their_state(
        broker, admin, standalone_cluster, tmp_path, execution_mode):
    """A logged RocksDB count of 4 tasks on the two workers, each executor with its own
    state.dir, while input arrives in rounds. Real-time: 2 threads of 2 tasks, a new epoch
    (a new Spark job, placed anew by Spark) every 3 s. Micro-batch: a micro-batch every
    second, each a new Spark job. Python workers are not reused
    (``spark.python.worker.reuse=false``), so only the stores on each executor's disk can
    bring a task back to it. After the fourth round, worker 1's executor is SIGKILLed (the
    worker starts a new one, with an empty work directory; real-time: mid-epoch;
    micro-batch: between micro-batches, while the driver holds the fifth round back). Then
    exactly the 2 tasks of the lost executor move, once, and only they restore; every other
    task batch (task epoch) stays where its state is; the output is exact."""
    cluster = standalone_cluster
    cluster.revive()
    tag = uuid.uuid4().hex[:6]
    src, dst, app_id = f"placement-in-{tag}", f"placement-out-{tag}", f"placement-{tag}"
    admin.create_topics({src: PARTITIONS, dst: PARTITIONS})
    log = tmp_path / "driver.log"
    interval = "3000" if execution_mode == "real_time" else "1000"
    # micro-batch: the driver holds round 4 back until this file exists, once its query is
    # idle (every micro-batch of round 3 ended), so the kill falls between micro-batches
    resume = tmp_path / "resume"
    hold = [f"3:{resume}"] if execution_mode == "micro_batch" else []
    proc = cluster.submit(RT_APP, [broker, src, dst, app_id, "kspark-state", str(RT_ROUNDS),
                                   str(RT_PER_ROUND), str(RT_KEYS), interval, execution_mode,
                                   *hold],
                          conf={**CONF, "spark.python.worker.reuse": "false"},
                          cwd=tmp_path / "driver", log=log)

    def text() -> str:
        return log.read_text(errors="replace") if log.exists() else ""

    def tail() -> str:
        return text()[-6000:]

    def await_line(prefix: str, what: str, deadline: float) -> str:
        """The driver's first output line starting with ``prefix`` (a line, once written,
        stays: nothing to miss), within the deadline, while the driver runs."""
        while not (lines := [x for x in text().splitlines() if x.startswith(prefix)]):
            assert proc.poll() is None, (
                f"the driver ended ({proc.returncode}) before {what}:\n{tail()}")
            assert time.monotonic() < deadline, f"no {what} in {DEADLINE_S} s:\n{tail()}"
            time.sleep(0.2)
        return lines[0]

    try:
        deadline = time.monotonic() + DEADLINE_S
        if execution_mode == "real_time":
            # mid-epoch (Spark also loses the other executor when one dies while its sibling
            # barrier task waits in the epoch's allGather)
            await_line("round 3 processed", "fourth round", deadline)
        else:
            spark_app = await_line("spark app ", "Spark application id", deadline).split()[2]
            await_line("idle after round 3", "idle query after the fourth round", deadline)
            # the query is idle and stays so until `resume` exists: no task can start on
            # worker 1; its executor has logged the end of every task it ran
            while running := cluster.running_tasks(1, spark_app):
                assert time.monotonic() < deadline, (
                    f"worker 1 still runs {running} of {spark_app} while the query is idle:\n"
                    f"{tail()}")
                time.sleep(0.2)
        assert cluster.kill_executors(1), "worker 1 runs no executor"
        resume.touch()
        await_driver(proc, 300, tail)
    finally:
        stop_process_group(proc)
    done = [x for x in log.read_text(errors="replace").splitlines() if x.startswith("done ")]
    assert done, tail()
    progress = json.loads(done[-1][len("done "):])
    print(f"\nstandalone {execution_mode} placement: {progress}")
    assert progress["batches"] >= RT_ROUNDS, progress
    assert (progress["task_moves"], progress["task_restores"]) == (2, 2), progress
    assert 0 < progress["restored_records"] <= RT_ROUNDS * RT_PER_ROUND, progress
    got = read(broker, dst, L, RT_ROUNDS * RT_PER_ROUND)
    per_key = RT_ROUNDS * RT_PER_ROUND // RT_KEYS
    assert got == {f"k{k}": list(range(1, per_key + 1)) for k in range(RT_KEYS)}, _diff(
        got, {f"k{k}": list(range(1, per_key + 1)) for k in range(RT_KEYS)})
