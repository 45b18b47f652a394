"""Global stores on Spark local-cluster (two executor processes) and a real broker.

One application runs throughout (in each execution mode): every task joins against the full
table; updates reach every task in the next micro-batch; records deleted below the stores'
offsets (KIP-406) and the topic deleted and created again with new content make the stores
rebuild while the query goes on; no order is lost or duplicated (read_committed); each
worker's copy is checkpointed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.conftest import consume_all
from tests.integration.separate_disks import STATE_DIR, executor_state_dirs, separate_disks_env
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
COUNTRIES = 50


def _countries(broker: str, topic: str, version: str) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})  # keeps the order
    for k in range(COUNTRIES):
        p.produce(topic, key=f"c{k}".encode(), value=f"{version}-c{k}".encode())
    assert p.flush(30) == 0


def _orders(broker: str, topic: str, first: int, n: int) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for i in range(first, first + n):
        p.produce(topic, key=f"o{i}".encode(),
                  value=json.dumps({"id": i, "country": f"c{i % COUNTRIES}"}).encode())
    assert p.flush(30) == 0


def _joined(broker: str, out: str, expected: int,
            proc: subprocess.Popen) -> dict[int, list[str]]:
    """The joined orders once ``expected`` are in and a second passed without more (late
    duplicates show up), at most 180 s; fails at once, with the app's last lines, if the app
    ended meanwhile."""
    deadline = time.monotonic() + 180
    while True:
        began = time.monotonic()
        records = consume_all(broker, out, expected, timeout_s=5, until_quiet=True)
        quiet = time.monotonic() - began < 5  # returned before its timeout: quiet for 1 s
        if len(records) >= expected and quiet or time.monotonic() > deadline:
            break
        if proc.poll() is not None:
            rest = [line for line in proc.stdout.read().splitlines() if not line.startswith("\t")]
            raise AssertionError(f"the app ended (exit {proc.returncode}) with {len(records)} "
                                 f"of {expected} orders joined:\n" + "\n".join(rest[-40:]))
    got: dict[int, list[str]] = {}
    for m in records:
        i, country = m.value().decode().split(":", 1)
        got.setdefault(int(i), []).append(country)
    return got


def _assert_phase(broker: str, out: str, upto: int, first: int, version: str,
                  proc: subprocess.Popen) -> None:
    """Orders 0..upto-1 each joined exactly once; those from ``first`` with ``version``."""
    got = _joined(broker, out, upto, proc)
    assert sorted(got) == list(range(upto)), "lost or unexpected orders"
    assert all(len(v) == 1 for v in got.values()), "duplicated orders"
    wrong = {i: v for i, v in got.items() if i >= first and v != [f"{version}-c{i % COUNTRIES}"]}
    assert not wrong, dict(list(wrong.items())[:5])


def _start(broker: str, names: tuple[str, ...], root: Path, mode: str) -> subprocess.Popen:
    """The app on local-cluster; each executor keeps its state on a disk of its own."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.global_app", broker, *names, STATE_DIR,
         str(root / "checkpoint"), mode], cwd=root, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**separate_disks_env(root), "PYTHONPATH": str(ROOT)})
    for line in proc.stdout:
        if line.startswith("started"):
            return proc
    raise AssertionError(f"the app did not start (exit {proc.wait(60)})")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(60)


# the suite's time budget: micro_batch (about 35 s) in the full matrix; the global store's
# micro-batch path runs in test_global_state.py and the conformance suite
@sampled_modes("real_time")
def test_global_table_on_two_executors_updates_and_kip406_rebuilds(
        execution_mode, broker, admin, topic_name, tmp_path):
    """real_time is sampled: the full table in every task of both executors, the topic
    deleted and created again (KIP-406) and the checkpointed copies; it leaves out the
    update phase and the records deleted past the copies' offsets, which
    ``test_real_time.py`` runs in real-time mode already (on local[2]: updates reach the
    running threads; the KIP-406 rebuild after deleted records). The suite's time budget:
    this application on local-cluster is the cost, each phase a few seconds."""
    orders, countries, out = topic_name("g-orders"), topic_name("g-countries"), topic_name("g-out")
    admin.create_topics({orders: 4, out: 4})
    # compacted, and deletable: Kafka refuses delete_records on a compact-only topic
    admin.create_topics({countries: 1}, {"cleanup.policy": "compact,delete"})
    app_id = f"g-{orders}"
    names = (orders, countries, out, app_id)
    n = 200
    _countries(broker, countries, "v1")
    _orders(broker, orders, 0, n)
    proc = _start(broker, names, tmp_path, execution_mode)
    try:
        # Every task, on either executor, joins against the full table.
        _assert_phase(broker, out, n, 0, "v1", proc)
        if execution_mode == "micro_batch":
            _update_then_delete_records(broker, admin, countries, orders, out, app_id, n, proc)
            assert proc.poll() is None, "the query stopped"
        done = 3 * n if execution_mode == "micro_batch" else n
        # KIP-406: the topic deleted and created again, with other content.
        admin.delete_topics([countries])
        admin.create_topics({countries: 1}, {"cleanup.policy": "compact,delete"})
        _countries(broker, countries, "v4")
        _orders(broker, orders, done, n)
        _assert_phase(broker, out, done + n, done, "v4", proc)
        assert proc.poll() is None, "the query stopped"
    finally:
        _stop(proc)
    # Each worker's copy is checkpointed (a restarted worker adopts one: test_global_state.py)
    copies = sorted(c for d in executor_state_dirs(tmp_path)
                    for c in (d / app_id / "global").iterdir())
    assert len(executor_state_dirs(tmp_path)) >= 2, "each executor kept its own state"
    assert copies and all((d / ".checkpoint").exists() for d in copies)


def _update_then_delete_records(broker, admin, countries, orders, out, app_id, n, proc):
    """Orders n..3n-1: an update reaches every task in the next micro-batch; then the
    table's records are deleted past the copies' offsets (KIP-406) and new content joined."""
    # An update reaches every task in the next micro-batch.
    _countries(broker, countries, "v2")
    _orders(broker, orders, n, n)
    _assert_phase(broker, out, 2 * n, n, "v2", proc)
    # KIP-406: records deleted past the stores' offsets. An open transaction holds the
    # pinned (read_committed) end back while the records are deleted, so the copies'
    # offsets are below the new earliest offset when the next batch pins it.
    tx = Producer({"bootstrap.servers": broker, "transactional.id": f"{app_id}-truncate"})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce(countries, key=b"c0", value=b"never-seen")
    tx.flush(30)
    stable = admin.end_offsets([(countries, 0)])[(countries, 0)]
    c = Consumer({"bootstrap.servers": broker, "group.id": f"hw-{app_id}",
                  "isolation.level": "read_uncommitted"})
    _, high = c.get_watermark_offsets(TopicPartition(countries, 0), timeout=30)
    c.close()
    assert high > stable
    raw = AdminClient({"bootstrap.servers": broker})
    (fut,) = raw.delete_records([TopicPartition(countries, 0, high)]).values()
    fut.result(30)
    tx.abort_transaction(30)
    _countries(broker, countries, "v3")
    _orders(broker, orders, 2 * n, n)
    _assert_phase(broker, out, 3 * n, 2 * n, "v3", proc)
