"""Interactive queries on Spark local-cluster, each executor with a disk of its own: every
key is answered by the executor holding its task; after that executor is SIGKILLed the
queries for its keys fail with a clear "not available" error (or, stale reads enabled,
answer what some worker still holds), never a wrong count, and then recover."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark._iq.routes import RouteTable
from tests.integration.iq_cluster_app import KEYS
from tests.integration.separate_disks import STATE_DIR, executor_state_dirs, separate_disks_env
from tests.integration.soak import descendants, executors

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _produce(broker, src, start, n):
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                  "enable.idempotence": True})
    for i in range(start, start + n):
        p.produce(src, key=KEYS[i % len(KEYS)].encode(), value=b"x",
                  timestamp=int(time.time() * 1000))
    p.flush(10)


def _counts(n):
    return {k: len(range(i, n, len(KEYS))) for i, k in enumerate(KEYS)}


def _rounds(out):
    path = out / "rounds.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _wait_for(out, proc, expected, timeout_s=300):
    deadline = time.monotonic() + timeout_s
    while True:
        rounds = _rounds(out)
        if rounds and rounds[-1]["values"] == expected:
            return len(rounds)
        assert proc.poll() is None, f"the application ended: {proc.stdout.read()[-3000:]}"
        assert time.monotonic() < deadline, f"not answered in time: {rounds[-1:]}"
        time.sleep(0.2)


def _start_app(tmp_path, broker, src, app_id, mode, out, *more):
    """iq_cluster_app on local-cluster, each executor with a disk of its own."""
    env = {**separate_disks_env(tmp_path), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.iq_cluster_app", broker, src, app_id,
         STATE_DIR, mode, str(out), *more], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env)


def _listener(port):
    """The pid of the process listening on TCP ``port`` (read from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port and f[3] == "0A":  # 0A: LISTEN
                inodes.add(f"socket:[{f[9]}]")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return int(pid)
            except OSError:
                continue
    raise AssertionError(f"no process listens on port {port}")


def _executor_serving(app_pid, endpoint):
    """The executor JVM whose Python worker listens on ``endpoint``'s port."""
    pid = _listener(int(endpoint.rsplit(":", 1)[1]))
    (owner,) = [e for e in executors(app_pid) if pid in descendants(e)]
    return owner


@pytest.mark.timeout(900)
@pytest.mark.full_matrix(reason="in make test, test_standalone_cluster.py reads the stores "
                         "after a worker's SIGKILL")
def test_queries_follow_the_tasks_across_executors_and_an_executor_kill(
        broker, admin, topic_name, tmp_path, execution_mode):
    src = topic_name("iq-cluster")
    admin.create_topics({src: 2})
    app_id, out = f"iq-{src}", tmp_path / "out"
    out.mkdir()
    _produce(broker, src, 0, 600)
    proc = _start_app(tmp_path, broker, src, app_id, execution_mode, out)
    try:
        first = _wait_for(out, proc, _counts(600))  # every key, from both executors
        with RouteTable(broker, app_id) as routes:
            assert routes.catch_up(30)
            holders = {p: r.endpoint for p, r in routes.for_store("counts").items()}
        assert sorted(holders) == [0, 1]
        victim = _executor_serving(proc.pid, holders[0])
        os.kill(victim, signal.SIGKILL)
        _produce(broker, src, 600, 120)  # micro-batch: the next batch reopens the tasks
        last = _wait_for(out, proc, _counts(720))
        (out / "stop").touch()
        assert proc.wait(120) == 0
    finally:
        (out / "stop").touch()
        if proc.poll() is None:
            proc.kill()
    rounds = _rounds(out)[first - 1:last]
    final = _counts(720)
    for r in rounds:
        for k, v in r["values"].items():
            assert v is None or _counts(600)[k] <= v <= final[k], (k, v)  # never wrong
        for k, v in r["stale"].items():
            assert v is None or v <= final[k], (k, v)
        assert all(e.startswith("StateStoreNotAvailableError") for e in r["errors"].values()), r
    failed = [e for r in rounds for e in r["errors"].values()]
    assert all("cannot be queried now" in e for e in failed), failed[:3]
    assert len(executor_state_dirs(tmp_path)) >= 2, "each executor kept its own state"


def _partition_zero_held_by_copy(rounds: list[dict], expected: dict) -> dict | None:
    """The first round whose keys of partition 0 (its active's executor killed, no input
    since) fail a fresh read yet are answered by the standby copy: stale reads and IQv2
    with the exact count, IQv2 with the changelog position the copy holds."""
    for r in rounds:
        zero = [k for k, (p, _, _) in r["meta"].items() if p == 0]
        if not zero:
            continue
        if zero and all(k in r["errors"] and r["stale"].get(k) == expected[k]
                        and r["v2"][k].get("value") == expected[k] for k in zero):
            return r
    return None


@pytest.mark.timeout(600)
@pytest.mark.full_matrix(reason="the suite's time (36 s); standby copies answering stale "
                         "reads are unit-tested in test_query_host.py, and real-time standby "
                         "copies run in make test in test_standby.py")
def test_a_micro_batch_standby_copy_answers_stale_reads_with_its_position(
        broker, admin, topic_name, tmp_path):
    """Micro-batch mode with ``num.standby.replicas=1`` on two executors: every key's
    metadata names the other executor's worker as its standby host; after the active
    executor of partition 0 is SIGKILLed (and no input arrives, so no batch moves the
    task), a fresh read of its keys fails (not available), while stale reads and IQv2
    queries (not ``require_active``) are answered by the copy: the exact count, with the
    changelog position the copy holds. New input then moves the task to its copy."""
    src = topic_name("iq-standby")
    admin.create_topics({src: 2})
    app_id, out = f"iq-{src}", tmp_path / "out"
    out.mkdir()
    _produce(broker, src, 0, 600)
    proc = _start_app(tmp_path, broker, src, app_id, "micro_batch", out, "1")
    try:
        _wait_for(out, proc, _counts(600))
        deadline = time.monotonic() + 120  # the first round of copies announces them
        while not (rounds := _rounds(out)) or not rounds[-1]["meta"] or not all(
                hosts and hosts != [active] for _, active, hosts in rounds[-1]["meta"].values()):
            assert proc.poll() is None and time.monotonic() < deadline, rounds[-1:]
            time.sleep(0.2)
        meta = rounds[-1]["meta"]
        active = {p: a for p, a, _ in meta.values()}
        assert sorted(active) == [0, 1] and active[0] != active[1], meta
        victim = _executor_serving(proc.pid, active[0])
        seen = len(rounds)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while (held := _partition_zero_held_by_copy(_rounds(out)[seen:], _counts(600))) is None:
            assert proc.poll() is None and time.monotonic() < deadline, _rounds(out)[-1:]
            time.sleep(0.2)
        changelog = f"{app_id}-counts-changelog"
        positions = [held["v2"][k]["position"] for k, (p, _, _) in meta.items() if p == 0]
        assert all(pos.get(changelog, {}).get("0", 0) > 0 for pos in positions), positions
        _produce(broker, src, 600, 120)  # the next batch moves the task to its copy
        _wait_for(out, proc, _counts(720))
        (out / "stop").touch()
        assert proc.wait(120) == 0
    finally:
        (out / "stop").touch()
        if proc.poll() is None:
            proc.kill()
    assert "which keeps a warm copy of its stores" in (out / "app.log").read_text()
