"""Incremental batch runs (KIP-95, ``autostop.at=eol``) on Spark and a real broker.

A run's stop offsets live in the application's metadata topic: a restarted run stops where
its first start would have, even when records arrived meanwhile; the next run processes
exactly what arrived since. The topology is the exactly-once test application's: a
single-stage echo, and a repartition into a per-key aggregation whose every task is fed by
all three upstream tasks (KIP-95's "deadlock" shape), so the three shapes the issue names
are checked in every run. Output is read with read_committed and checked record by record.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kspark import KafkaStreams, Serdes
from kspark._kafka.stopoffsets import StopOffsets, metadata_topic
from tests.integration import eos_app, soak

pytestmark = pytest.mark.integration
KEYS = 20
ROOT = Path(__file__).resolve().parents[2]


def _topics(admin, topic_name, base: str) -> str:
    src = topic_name(base)
    admin.create_topics({src: 3, f"{src}-echo": 3, f"{src}-agg": 3})
    return src


def _values_below(broker: str, topic: str, stop: dict[tuple[str, int], int]) -> list[int]:
    """The input values at offsets below the stop offsets."""
    from kspark._kafka.clients import read_range

    long = Serdes.Long()
    out = []
    for (t, p), end in stop.items():
        assert t == topic
        for msgs in read_range(broker, t, p, 0, end, 30000):
            out += [long.deserialize(t, m.value()) for m in msgs]
    return out


def _echoed(broker: str, src: str) -> list[int]:
    long = Serdes.Long()
    return [long.deserialize(src, m.value()) for m in soak.read_all(broker, f"{src}-echo")]


def _assert_exact(broker: str, src: str, app_id: str, n: int) -> None:
    """Values 0..n-1 processed exactly once, and nothing else (aggregates exact)."""
    f = soak.verify(broker, src, app_id, n, KEYS)
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions, f.disordered) == (0, 0, 0, 0, 0), f
    echoed = _echoed(broker, src)
    assert len(echoed) == n and max(echoed) == n - 1, (len(echoed), max(echoed))


class _Producer:
    """Keeps appending values to ``src`` in the background until stopped."""

    def __init__(self, broker: str, src: str, first: int):
        self.broker, self.src, self.next = broker, src, first
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            soak.produce(self.broker, self.src, self.next, 100, KEYS)
            self.next += 100

    def __enter__(self) -> "_Producer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def test_a_run_stops_at_its_first_start_ends_while_a_producer_keeps_writing(
        broker, admin, spark, topic_name, tmp_path):
    src = _topics(admin, topic_name, "kip95-clean")
    n = 3000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"kip95-clean-{src}"
    cfg = eos_app.config(broker, app_id, str(tmp_path / "state"), "exactly_once_v2", 1000)
    with _Producer(broker, src, n) as producer:
        streams = KafkaStreams(eos_app.topology(src), cfg, spark=spark)
        streams.start()
        stop = streams.stop_offsets()
        assert streams.await_termination(300)
        assert streams.batch_finished()
        streams.close()
    assert producer.next > n, "the producer kept writing during the run"
    # What the run processed is exactly what was below its stop offsets...
    expected = sorted(_values_below(broker, src, stop))
    assert len(expected) >= n
    assert sorted(_echoed(broker, src)) == expected
    assert streams.progress()["records_in"] == len(expected)
    assert streams.progress()["records_out"] >= 2 * len(expected)  # echo + aggregate updates
    # ... and the metadata topic holds them, completed and finished (KIP-95's layout).
    state = StopOffsets(broker, app_id).read()
    assert (state.offsets, state.completed, state.finished) == (stop, True, True)
    assert admin.partition_counts()[metadata_topic(app_id)] == 1
