"""Kafka's own faults under a running application (issue: survive broker restarts): run the
exactly-once test application (:mod:`tests.integration.eos_app`) as a child process, do a
fault to the brokers once its output has started, and time how long processing paused.

Used by ``test_broker_faults.py`` and by the soak's broker-fault mode (``soak.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field

from tests.integration.soak import start_app


@dataclass
class FaultRun:
    """What one run under a fault showed: its exit code, its output (with the monotonic time
    of each line), when the fault ended, and how long the output paused around it."""

    code: int | None = None
    lines: list[tuple[float, str]] = field(default_factory=list)
    fault_began: float = 0.0
    fault_ended: float = 0.0

    def text(self, last: int = 60) -> str:
        return "".join(line for _, line in self.lines[-last:])

    def pause_s(self) -> float:
        """From the fault's start to the first progress line after the fault ended: how
        long processing stood still (the outage itself included)."""
        after = [t for t, line in self.lines if t >= self.fault_ended
                 and (line.startswith("batches ") or line.startswith("done"))]
        return (after[0] if after else self.fault_ended) - self.fault_began

    def recovery_s(self) -> float:
        """From the fault's end (the brokers back) to the next progress line."""
        return self.pause_s() - (self.fault_ended - self.fault_began)


def run_with_fault(cmd: list[str], fault: Callable[[], None], timeout_s: float = 420,
                   env: dict[str, str] | None = None) -> FaultRun:
    """Run the app; once it printed ``batches 1`` (its output has started), call ``fault``
    (which returns when the brokers are back, or stay down); then wait for the app to exit,
    at most ``timeout_s`` (it is killed then, and the run's code stays None)."""
    return run_all_with_fault([cmd], fault, timeout_s, env)[0]


def run_all_with_fault(cmds: list[list[str]], fault: Callable[[], None],
                       timeout_s: float = 420,
                       env: dict[str, str] | None = None) -> list[FaultRun]:
    """``run_with_fault`` for several apps at once: one fault, once every app's output has
    started (applications of both execution modes through one broker bounce)."""
    runs = [FaultRun() for _ in cmds]
    procs = [start_app(cmd, env) for cmd in cmds]
    started = [threading.Event() for _ in cmds]

    def pump(run: FaultRun, proc: Any, started: threading.Event) -> None:
        for line in proc.stdout:
            run.lines.append((time.monotonic(), line))
            if line.startswith(("batches ", "done")) and not line.startswith("batches 0"):
                started.set()
        started.set()

    readers = [threading.Thread(target=pump, args=a, daemon=True)
               for a in zip(runs, procs, started, strict=True)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout_s
    try:
        for run, proc, up in zip(runs, procs, started, strict=True):
            if not up.wait(max(0.0, deadline - time.monotonic())) or proc.poll() is not None:
                raise AssertionError("the app never started its output:\n" + run.text())
        began = time.monotonic()
        fault()
        ended = time.monotonic()
        for run, proc, reader in zip(runs, procs, readers, strict=True):
            run.fault_began, run.fault_ended = began, ended
            try:
                run.code = proc.wait(max(1.0, deadline + timeout_s - time.monotonic()))
            except Exception:  # noqa: BLE001 - a hang: the caller reports it
                proc.kill()
                proc.wait(30)
            reader.join(30)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return runs


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` (Kafka places a group's and a transactional id's
    coordinator by it: ``abs(hash) % partitions`` of ``__consumer_offsets`` /
    ``__transaction_state``).

    >>> java_hash("a"), java_hash("hello world")
    (97, 1794106052)
    """
    data, h = text.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):  # over UTF-16 code units, as Java's chars
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


class LeaderWatch:
    """Watches a rolling restart move the leaders (``LocalCluster.rolling_restart``'s
    ``around``): before each node stops, which partitions it leads; once it stopped, waits
    (at most 30 s) until each of those has a leader elsewhere, and records them as
    ``moved``, or as ``stuck`` (never raises: the restart goes on; the test asserts).

    A consumer group's coordinator is the leader of its ``__consumer_offsets`` partition:
    ``coordinator_moved(group)`` says whether that one moved."""

    def __init__(self, bootstrap: str):
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.moved: set[tuple[str, int]] = set()
        self.stuck: set[tuple[str, int]] = set()
        self._led: list[tuple[str, int]] = []

    def leaders(self) -> dict[tuple[str, int], int]:
        md = self.admin.list_topics(timeout=10)
        return {(t, p.id): p.leader for t, tm in md.topics.items()
                for p in tm.partitions.values()}

    def coordinator_moved(self, group: str) -> bool:
        n = len(self.admin.list_topics("__consumer_offsets", timeout=10)
                .topics["__consumer_offsets"].partitions)
        return ("__consumer_offsets", abs(java_hash(group)) % n) in self.moved

    def __call__(self, node: int, phase: str) -> None:
        if phase == "stopping":
            self._led = [tp for tp, leader in self.leaders().items() if leader == node]
            return
        deadline, left = time.monotonic() + 30, set(self._led)
        while left and time.monotonic() < deadline:
            try:
                now = self.leaders()
            except Exception:  # noqa: BLE001 - the metadata is moving: ask again
                now = {}
            left = {tp for tp in left if now.get(tp, -1) in (-1, node)}
            if left:
                time.sleep(0.2)
        self.moved.update(set(self._led) - left)
        self.stuck.update(left)
