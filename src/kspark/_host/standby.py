"""Standby tasks: warm copies of another thread's task, kept by tailing its changelogs.

Kafka Streams keeps a *standby task* of a stateful task on another instance (KIP-441): its
stores, brought up to the changelogs' ends as they grow, so that when the active task's
instance is lost the task moves there and restores only the tail. A
:class:`StandbyTask` does that for one task on a stream thread: each :meth:`~StandbyTask.
update` opens the copy, restores it from its checkpoint to the changelogs' read_committed
ends (under exactly-once only committed state: exactly the active's state at one of its
commits), checkpoints and closes it. No processor of the topology runs (no user code).

The copy lives apart from the active stores, under ``<state.dir>/<application.id>/.standby``
(:func:`standby_root`), so a copy never touches the store directory or the RocksDB lock of
an active task on the same disk; when the task becomes active on this thread,
:func:`promote_standby` moves the copy into the task's own directory if it is fresher than
what is there. Only persistent (RocksDB) stores are copied: an in-memory store lives in one
Python worker and is rebuilt from its changelog wherever its task runs.

Example (needs a broker, so not run)::

    copy = StandbyTask(ctx, partition=3)
    copy.update()              # -> changelog records applied; copy.lag, copy.position
    promote_standby(ctx.state_dir, ctx.app_id, "0_3")   # before opening 0_3 as active
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from kspark._engine.collector import RecordCollector
from kspark._engine.state.build import bottom, task_store_dir
from kspark._engine.state.checkpoint import read_checkpoint, write_checkpoint, write_progress
from kspark._engine.task import StreamTask
from kspark._graph.instantiate import resolve_store
from kspark._host.context import HostContext
from kspark._iq.host import query_host
from kspark._host.restore import LOCAL_PROGRESS, restore_task
from kspark._host.state import TaskHostState, state_location
from kspark.errors import ConfigError

__all__ = ["StandbyTask", "StandbyUpdater", "standby_root", "promote_standby", "standbys_for"]

log = logging.getLogger("kspark")
_updating = threading.local()  # set while this thread updates a copy


class _QuietCopies(logging.Filter):
    """A copy's updates are restores, every second: their INFO lines (each restore's
    start and end) are left out, as Kafka Streams logs no line per standby update."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not getattr(_updating, "on", False)


log.addFilter(_QuietCopies())


def standbys_for(config: Any) -> int:
    """``num.standby.replicas``, refused under at_least_once: a copy tails the changelogs,
    and under at_least_once they hold records of intervals not committed yet (a task that
    fails replays them), which a copy would take for its task's state.

    >>> standbys_for({"num.standby.replicas": 1, "processing.guarantee": "exactly_once_v2"})
    1
    """
    n = int(config["num.standby.replicas"])
    if n and config["processing.guarantee"] != "exactly_once_v2":
        raise ConfigError(
            f"num.standby.replicas={n} needs processing.guarantee=exactly_once_v2: a standby "
            "copy reads its task's changelogs, and under at_least_once they hold records of "
            "intervals not committed yet, which the task replays after a failure. Set "
            "processing.guarantee=exactly_once_v2, or num.standby.replicas=0")
    return n


def standby_root(state_dir: str, app_id: str) -> str:
    """The ``state.dir`` the copies of ``app_id``'s tasks live under, on this disk.

    >>> standby_root("/s", "app")
    '/s/app/.standby'
    """
    return os.path.join(state_dir, app_id, ".standby")


class _NoOutput(RecordCollector):
    """A standby task writes nothing."""

    sent = 0

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
             headers: Any, partition: int | None) -> None:
        raise AssertionError("a standby task does not write records")


class StandbyTask:
    """The warm copy of task ``partition`` of ``ctx``'s sub-topology on this worker."""

    def __init__(self, ctx: HostContext, partition: int):
        self.ctx = ctx
        self.task_id = f"{ctx.plan.stage}_{partition}"
        self.config = {**ctx.config, "state.dir": standby_root(ctx.state_dir, ctx.app_id)}
        logged = {name: resolve_store(b, self.config, ctx.graph.origin(name))
                  for name, (b, procs) in ctx.graph.stores.items()
                  if procs & set(ctx.plan.nodes) and b.logging_enabled}
        self.builders = self._persistent(logged)
        self.position: dict[tuple[str, int], int] = {}  # changelog offsets the copy holds
        self.lag: int | None = None  # records the last update applied (None: not yet)
        self.updates = 0

    def _persistent(self, logged: dict[str, Any]) -> dict[str, Any]:
        """Of the task's logged stores, the persistent ones (built once to see which)."""
        if not logged:
            return {}
        probe = StreamTask(self.task_id, {}, [], self.config, _NoOutput(),
                           store_builders=logged)
        try:
            return {n: logged[n] for n, s in probe.stores.items() if bottom(s).persistent}
        finally:
            probe.close()

    @property
    def empty(self) -> bool:
        """Whether the task has nothing to copy (no persistent logged store)."""
        return not self.builders

    def update(self) -> int:
        """Bring the copy up to the changelogs' read_committed ends; the records applied."""
        if self.empty:
            return 0
        host = TaskHostState()
        _updating.on = True
        try:
            return self._update(host)
        finally:
            _updating.on = False

    def _update(self, host: TaskHostState) -> int:
        task = StreamTask(self.task_id, {}, [], self.config, _NoOutput(),
                          store_builders=self.builders,
                          restore=lambda t: restore_task(t, self.ctx.builders, None,
                                                         LOCAL_PROGRESS, host=host,
                                                         settings=self.ctx.settings))
        try:
            ends = dict(task.restored or {})
            for store in task.stores.values():
                store.flush()
        finally:
            task.close()
        directory = self.directory
        if host.changelog_ids:
            write_progress(directory / ".changelog-ids", host.changelog_ids)
        write_checkpoint(directory / ".checkpoint", ends)
        self.position, self.lag = ends, host.restored_records
        self.updates += 1
        query_host().hold_standby(self.ctx, self.task_id, directory, self.builders,
                                  state_location(self.ctx.state_dir))
        return host.restored_records

    def drop(self) -> None:
        """The copy is no longer kept by this thread: no stale read is answered from it."""
        query_host().drop_standby(self.ctx.app_id, self.task_id)

    @property
    def directory(self) -> Path:
        return task_store_dir(self.config["state.dir"], self.ctx.app_id, self.task_id)


def promote_standby(state_dir: str, app_id: str, task_id: str) -> bool:
    """Before task ``task_id`` opens as active here: its warm copy on this disk, if fresher
    than the task's own directory (by the changelog offsets of their checkpoints), becomes
    that directory (the copy is closed: only this thread keeps it, between updates);
    whether it did."""
    query_host().drop_standby(app_id, task_id)
    copy = task_store_dir(standby_root(state_dir, app_id), app_id, task_id)
    held = read_checkpoint(copy / ".checkpoint")
    if held is None:
        return False
    active = task_store_dir(state_dir, app_id, task_id)
    own = read_checkpoint(active / ".checkpoint")
    if own is not None and sum(own.values()) >= sum(held.values()):
        shutil.rmtree(copy, ignore_errors=True)
        return False
    shutil.rmtree(active, ignore_errors=True)
    active.parent.mkdir(parents=True, exist_ok=True)
    os.replace(copy, active)
    log.info("task %s: its standby copy (changelogs at %s) becomes its stores", task_id, held)
    return True


class StandbyUpdater:
    """A stream thread's standby tasks, updated one after another in a background thread
    every ``every_s`` (so the thread's own loop never waits for a copy); a failed update
    is logged and tried again next round (a copy never fails its thread). ``lags``: per
    task id, the records its last update applied (how far behind it was)."""

    def __init__(self, copies: list[StandbyTask], every_s: float):
        self.copies, self.every_s = [c for c in copies if not c.empty], every_s
        self.lags: dict[str, int] = {}
        # Kafka Streams' update-total/-rate of each copied task, since last taken
        self._stats: dict[str, list] = {f"=shape-standby|{c.task_id}|": [1, 0, 0, 0]
                                         for c in self.copies}
        self._stats_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kspark-standby", daemon=True)
        if self.copies:
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for copy in self.copies:
                if self._stop.is_set():
                    return
                try:
                    applied = copy.update()
                    self.lags[copy.task_id] = int(copy.lag or 0)
                    with self._stats_lock:
                        s = self._stats.setdefault(f"update|{copy.task_id}|", [0, 0, 0, 0])
                        s[0] += applied
                except Exception as e:  # noqa: BLE001 - the copy is tried again next round
                    log.warning("standby task %s: update failed (%s); trying again", copy.task_id,
                                e)
            self._stop.wait(self.every_s)

    def take_stats(self) -> dict[str, list]:
        """The copies' metric counts (``_engine/metrics/stats.py`` keys) since last taken."""
        with self._stats_lock:
            out, self._stats = self._stats, {}
            return out

    def close(self) -> None:
        """Stop after the update under way (its copy stays consistent: closed, checkpointed)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for copy in self.copies:
            copy.drop()
