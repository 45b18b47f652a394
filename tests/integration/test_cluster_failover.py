"""Stateful processing on local-cluster: tasks move between executor processes, and an
executor killed mid-run loses nothing: the final state equals the expected one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark import Serdes
from tests.integration.separate_disks import STATE_DIR, executor_state_dirs, separate_disks_env
from tests.conftest import consume_all
from tests.integration.soak import descendants, executors

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
N, KEYS = 1200, 13


@pytest.mark.full_matrix(reason="test_exactly_once.py kills an executor mid-batch on "
                         "local-cluster in both modes")
def test_executor_killed_mid_run_final_state_is_exact(broker, admin, topic_name, tmp_path):
    src, dst = topic_name("cluster-in"), topic_name("cluster-out")
    admin.create_topics({src: 2, dst: 2})
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random",
                  "enable.idempotence": True})
    for i in range(N):
        p.produce(src, key=f"k{i % KEYS}".encode(), value=b"x", timestamp=1000 + i)
    p.flush(10)
    app_id = f"cluster-{src}"
    # each executor keeps its state on a disk of its own (its own working directory)
    env = {**separate_disks_env(tmp_path), "PYTHONPATH": str(ROOT)}
    # a task holds its record (see cluster_app.py) until `release` exists: the kill falls in
    # it, on the executor running it, in the third micro-batch or later
    held, release = tmp_path / "held", tmp_path / "release"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.cluster_app", broker, src, dst, app_id,
         STATE_DIR, str(tmp_path / "checkpoint"), str(tmp_path)], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []

    def drain() -> None:
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    killed = None
    try:
        deadline = time.monotonic() + 600
        while not held.exists():  # a file: once there, it stays (the task waits)
            assert proc.poll() is None, "the app ended before a task held:\n" + "".join(
                lines[-40:])
            assert time.monotonic() < deadline, "no task held in time:\n" + "".join(lines[-40:])
            time.sleep(0.2)
        holder = json.loads(held.read_text())["pid"]
        execs = executors(proc.pid)
        assert len(execs) >= 2, f"expected 2 executor processes, saw {execs}"
        (killed,) = [e for e in execs if holder in descendants(e)]
        os.kill(killed, signal.SIGKILL)
        release.touch()
        assert proc.wait(600) == 0, "".join(lines[-40:])
        reader.join(60)
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
    expected = {f"k{k}": len(range(k, N, KEYS)) for k in range(KEYS)}
    changelog = {}
    for m in consume_all(broker, f"{app_id}-counts-changelog", 1, timeout_s=30):
        changelog[m.key().decode()] = Serdes.Long().deserialize("", m.value())
    assert changelog == expected, "the store's final state (its changelog) is exact"
    assert len(executor_state_dirs(tmp_path)) >= 2, "each executor kept its own state"
    last = {}
    for m in consume_all(broker, dst, N):
        k, v = m.key().decode(), Serdes.Long().deserialize("", m.value())
        last[k] = max(last.get(k, 0), v)
    assert last == expected, "the last count emitted per key is exact (at-least-once output)"
