"""Stateful processing on local-cluster: tasks move between executor processes, and an
executor killed mid-run loses nothing: the final state equals the expected one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark import Serdes
from tests.integration.separate_disks import STATE_DIR, executor_state_dirs, separate_disks_env
from tests.conftest import consume_all
from tests.integration.soak import executors

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
N, KEYS = 1200, 13


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
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.cluster_app", broker, src, dst, app_id,
         STATE_DIR, str(tmp_path / "checkpoint")], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env)
    killed, lines = None, []
    try:
        deadline = time.monotonic() + 600
        for line in proc.stdout:
            lines.append(line)
            if killed is None and line.startswith("batches ") and int(line.split()[1]) >= 1:
                time.sleep(0.5)  # into the next batch's processing
                execs = executors(proc.pid)
                assert len(execs) >= 2, f"expected 2 executor processes, saw {execs}"
                killed = execs[0]
                os.kill(killed, signal.SIGKILL)
            assert time.monotonic() < deadline, "the cluster app did not finish in time"
        assert proc.wait(60) == 0, "".join(lines[-40:])
    finally:
        if proc.poll() is None:
            proc.kill()
    assert killed is not None, "".join(lines[-40:])
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
