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
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kspark import KafkaStreams, Serdes
from kspark._graph.resources import metadata_topic
from kspark._control.stop_offsets import StopOffsets
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


def _run_args(app_file: Path, broker: str, app_id: str, state: Path, spark: bool) -> list[str]:
    """``kspark run``'s arguments (``spark``: with the session's keys, for a process of its own)."""
    sets = {"application.id": app_id, "bootstrap.servers": broker, "state.dir": str(state),
            "autostop.at": "eol", "processing.guarantee": "exactly_once_v2",
            "statestore.cache.max.bytes": 0, "max.offsets.per.trigger": 1000,
            "request.timeout.ms": 20000, "execution.mode": "micro_batch"}
    if spark:
        sets.update({"spark.master": "local[2]", "spark.ui.enabled": "false",
                     "spark.sql.shuffle.partitions": 2})
    return ["run", f"{app_file}:TOPOLOGY", "--every", "1",
            *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")]]


def _start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _kill_after_a_batch(cmd: list[str]) -> str:
    """Run ``kspark run``, SIGKILL it (driver and workers) once a micro-batch has completed
    and more are left; the stop offsets it printed at start."""
    proc = _start(cmd)
    started, lines = None, []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "started (batch run); stop offsets" in line:
                started = line.split("stop offsets ", 1)[1].strip()
            if re.search(r", commits [1-9]", line) or "finished its batch run" in line:
                break
        assert proc.poll() is None and "finished" not in lines[-1], "".join(lines[-30:])
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert started is not None, "".join(lines[-30:])
    return started


def _finish_in_process(argv: list[str], capsys) -> tuple[str, list[str]]:
    """``kspark run`` to the end in this process (its session is the tests' shared one):
    exit code 0, and the stop offsets it started with."""
    from kspark._cli.main import main

    assert main(argv) == 0, capsys.readouterr().err[-4000:]
    lines = capsys.readouterr().out.splitlines()
    started = next(l for l in lines if "started (batch run); stop offsets" in l)
    return started.split("stop offsets ", 1)[1].strip(), lines


@pytest.mark.full_matrix(reason="56 s; a killed batch run resuming at its stop offsets runs "
                         "always in test_incremental_batch.py's other tests and the Delta "
                         "sink's SIGKILL round")
def test_a_run_killed_twice_stops_at_its_original_offsets_and_the_next_run_takes_the_rest(
        broker, admin, spark, topic_name, tmp_path, capsys):
    """SIGKILLed twice with new records arriving each time (a run that keeps failing), the
    run still finishes, at the stop offsets of its first start; the next run processes
    exactly the records that arrived since. ``kspark run`` drives every run: the killed
    ones as processes of their own, the last two in this process.

    micro_batch only, for the suite's time budget (a real-time variant, killed once, took
    30 s): the stop offsets and their resumption are the application's, shared by both
    modes; real-time batch runs (stop offsets, repartition topics drained, the next run
    taking the rest) are in ``test_real_time.py``, a driver killed in real-time mode in
    ``test_async_on_spark.py``."""
    src = _topics(admin, topic_name, "kip95-kill")
    app_id = f"kip95-kill-{src}"
    app_file = tmp_path / "kip95_app.py"
    app_file.write_text("from tests.integration.eos_app import topology\n"
                        f"TOPOLOGY = topology({src!r}, slow_ms=1.0)\n")
    cmd = [sys.executable, "-m", "kspark._cli.main",
           *_run_args(app_file, broker, app_id, tmp_path / "state", spark=True)]
    in_process = _run_args(app_file, broker, app_id, tmp_path / "state", spark=False)
    n1, n2, n3 = 4000, 500, 500
    soak.produce(broker, src, 0, n1, KEYS)
    first = _kill_after_a_batch(cmd)
    soak.produce(broker, src, n1, n2, KEYS)  # arrive while the run is down
    assert _kill_after_a_batch(cmd) == first
    soak.produce(broker, src, n1 + n2, n3, KEYS)
    resumed, lines = _finish_in_process(in_process, capsys)
    assert resumed == first
    summary = lines[-1]
    assert "finished its batch run" in summary and f"stop offsets reached: {first}" in summary
    _assert_exact(broker, src, app_id, n1)  # nothing that arrived after the first start
    # The next run begins anew: new stop offsets, exactly the records that arrived since.
    following, lines = _finish_in_process(in_process, capsys)
    assert following != first
    _assert_exact(broker, src, app_id, n1 + n2 + n3)
    assert f" {n2 + n3} records in" in lines[-1], lines[-1]
    state = StopOffsets(broker, app_id).read()
    assert state.finished and state.offsets == {(src, p): e for (_, p), e in
                                                admin.end_offsets(
                                                    [(src, p) for p in range(3)]).items()}


def test_batch_stopped_by_the_user_resumes_then_streaming_then_batch_again(
        broker, admin, spark, topic_name, tmp_path):
    """close() leaves a batch run unfinished: the next start resumes it at the same stop
    offsets. A streaming start deletes the stop offsets; the batch run after it is new. No
    record is lost or duplicated across the switches."""
    src = _topics(admin, topic_name, "kip95-switch")
    app_id = f"kip95-switch-{src}"
    n1, n2, n3 = 2500, 800, 800
    soak.produce(broker, src, 0, n1, KEYS)

    def streams_with(autostop: str, slow_ms: float = 0.0) -> KafkaStreams:
        cfg = eos_app.config(broker, app_id, str(tmp_path / "state"), "exactly_once_v2", 500)
        cfg["autostop.at"] = autostop
        return KafkaStreams(eos_app.topology(src, slow_ms), cfg, spark=spark)

    first = streams_with("eol", slow_ms=2.0)
    first.start()
    stop = first.stop_offsets()
    deadline = time.monotonic() + 300
    while first.progress()["batches"] < 1 and time.monotonic() < deadline:
        assert not first.await_termination(0.2), "finished before it could be stopped"
    first.close()  # the user stops it
    assert not first.batch_finished()
    assert StopOffsets(broker, app_id).read().resumable
    soak.produce(broker, src, n1, n2, KEYS)
    resumed = streams_with("eol")
    resumed.start()
    assert resumed.stop_offsets() == stop
    assert resumed.await_termination(300) and resumed.batch_finished()
    resumed.close()
    _assert_exact(broker, src, app_id, n1)

    streaming = streams_with("none")
    streaming.start()
    meta = StopOffsets(broker, app_id).read()
    assert (meta.live_keys, meta.offsets) == (set(), {}), "streaming deletes the stop offsets"
    # close() cancels a micro-batch in flight: wait until both stages (echo and aggregate)
    # have committed everything, else the aggregates' part of the last batch is still open
    deadline = time.monotonic() + 300
    while soak.verify(broker, src, app_id, n1 + n2, KEYS).lost and time.monotonic() < deadline:
        assert not streaming.await_termination(1)
    streaming.close()
    _assert_exact(broker, src, app_id, n1 + n2)

    soak.produce(broker, src, n1 + n2, n3, KEYS)
    again = streams_with("eol")
    again.start()
    assert again.stop_offsets() != stop
    assert again.await_termination(300) and again.batch_finished()
    again.close()
    _assert_exact(broker, src, app_id, n1 + n2 + n3)
    assert again.progress()["records_in"] == n3
