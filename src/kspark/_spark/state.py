"""Task state on Spark: restore stores from their changelogs, checkpoint what is on disk.

A task's stores live under ``<state.dir>/<application.id>/<task>``. Before a batch, each
logged store is brought up to the end of its changelog partition: from the checkpointed
offset when the local state has a valid checkpoint, else wiped and restored from the
beginning. After the batch (stores written down, producer flushed), the changelog end
offsets are written to the checkpoint file, and the task's progress (stream time,
partition times, punctuation due times) to ``.progress``, so a task rebuilt for the next
batch goes on where it was.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kspark._engine.documents import Invalid, check_progress
from kspark._engine.state.build import bottom, changelog_topic, task_store_dir
from kspark._engine.state.checkpoint import (
    read_checkpoint,
    read_progress,
    write_checkpoint,
    write_progress,
)
from kspark._engine.state.restore_check import restore_checker
from kspark._engine.task import BATCH_HEADER, StreamTask
from kspark._kafka.admin import Admin
from kspark._kafka.clients import read_range
from kspark._kafka.settings import as_settings
from kspark._spark.host_state import TaskHostState
from kspark.errors import ChangelogLostError, CorruptStateError

__all__ = ["LOCAL_PROGRESS", "restore_task", "checkpoint_task", "invalidate_checkpoint", "logged_partitions",
           "admin_for"]

log = logging.getLogger("kspark")
_ADMINS: dict[tuple, Admin] = {}


def admin_for(config: dict[str, Any]) -> Admin:
    """One admin client per worker process and cluster."""
    settings = as_settings(config)
    key = (settings, config["request.timeout.ms"])
    if key not in _ADMINS:
        _ADMINS[key] = Admin(settings, config["request.timeout.ms"])
    return _ADMINS[key]


def logged_partitions(task: StreamTask, builders: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """store name -> (changelog topic, partition) for the task's logged stores."""
    app = task.config["application.id"]
    return {name: (changelog_topic(app, name), task.partition) for name in task.stores
            if builders[name].logging_enabled}


def _checkpoint_path(task: StreamTask, name: str = ".checkpoint"):
    return task_store_dir(task.config["state.dir"], task.config["application.id"],
                          task.task_id) / name


# restore_task: resume the progress saved in the task directory. A string, not object():
# stage functions reach workers pickled by value, and an object() would lose its identity.
LOCAL_PROGRESS = "local"


def restore_task(task: StreamTask, builders: dict[str, Any],
                 batch: tuple[str, int] | None = None, saved: Any = LOCAL_PROGRESS,
                 replay: bool = False, *,
                 host: TaskHostState | None = None) -> dict[tuple[str, int], int]:
    """Bring every logged store of a new task to the state its ``batch`` (query id, batch
    id) starts from; returns the changelog end offsets.

    The task also resumes its progress: ``saved``, the progress in the task's marker in
    Kafka (under both guarantees; the Spark host always passes it), else the one saved
    locally (a cache: on a cluster it may be of an executor the task left batches ago). A batch that Spark runs again (its first
    attempt died, perhaps after writing its changelog and checkpoint) must not see its own
    first attempt: when the local progress is of this batch of the same query, the batch is
    a ``replay`` of a committed one, or the checkpoint is missing, the local state is wiped
    and restored, and changelog records that this query stamped with this batch or a later
    one are skipped.

    What the host keeps of the task (the progress resumed, the changelogs' topic ids, the
    records restored) goes to ``host``. (``host=None`` is a bridge for callers not yet
    passing it: the same fields are then set on the task.)
    """
    host, bridged = (TaskHostState(), True) if host is None else (host, False)
    try:
        return _restore_task(task, builders, batch, saved, replay, host)
    finally:
        if bridged:  # BRIDGE until every caller passes host=
            task.resumed_progress = host.resumed_progress
            if host.changelog_ids or hasattr(task, "changelog_ids"):
                task.changelog_ids = host.changelog_ids
            task.restored_records = getattr(task, "restored_records", 0) + host.restored_records


def _restore_task(task: StreamTask, builders: dict[str, Any], batch: tuple[str, int] | None,
                  saved: Any, replay: bool, host: TaskHostState) -> dict[tuple[str, int], int]:
    if replay:
        invalidate_checkpoint(task)  # the state of before the batch is not written down
    path = _checkpoint_path(task, ".progress")
    source = f"the progress saved in {str(path)!r}"
    progress = _checked(read_progress(path), task, source)
    ahead = (progress is not None and batch is not None and progress.get("query") == batch[0]
             and progress.get("batch", -1) >= batch[1])
    if ahead:
        progress = progress.get("previous")
    if not (isinstance(saved, str) and saved == LOCAL_PROGRESS):
        progress = saved
        source = (f"the progress in its marker (consumer group "
                  f"{task.config['application.id']!r})")
    if progress is not None:
        task.resume(progress, source)
    host.resumed_progress = progress
    parts = logged_partitions(task, builders)
    if not parts:
        return {}
    config = task.config
    ends = admin_for(config).end_offsets(parts.values())
    checkpoint = {} if ahead else (read_checkpoint(_checkpoint_path(task)) or {})
    host.changelog_ids = admin_for(config).topic_ids(sorted({t for t, _ in parts.values()}))
    if checkpoint:
        _check_same_topics(task, parts, checkpoint, host.changelog_ids)
    for name, tp in parts.items():
        raw = bottom(task.stores[name])
        end = ends[tp]
        start = checkpoint.get(tp) if raw.persistent else None
        if start is not None and start > end:
            raise ChangelogLostError(
                f"task {task.task_id}: changelog topic {tp[0]!r} partition {tp[1]} ends at "
                f"offset {end}, but store {name!r}'s local state was checkpointed at offset "
                f"{start}: the changelog was deleted or recreated, and restoring from it would "
                "silently lose state. Either rebuild the changelog from the local state "
                "(kspark changelog rebuild, see docs/architecture.md), or reset the application "
                f"(delete {task.config['state.dir']}/{task.config['application.id']} and the "
                "application's internal topics, then reprocess)")
        if start is None:
            if raw.persistent and raw.approximate_num_entries():
                log.warning("task %s: store %r has no valid checkpoint for batch %s; wiping it "
                            "and restoring from changelog %s partition %d", task.task_id, name,
                            batch, *tp)
            raw.wipe()
            start = 0
        host.restored_records += _restore(
            task.task_id, name, raw, tp, start, end, config, batch,
                 restore_checker(task.stores[name], task.task_id))
    return ends


def _checked(progress: dict | None, task: StreamTask, source: str) -> dict | None:
    """``progress`` read from disk, its shape checked before anything reads its fields."""
    if progress is None:
        return None
    try:
        return check_progress(progress)
    except Invalid as e:
        raise CorruptStateError(
            f"task {task.task_id}: {source} is malformed: {e}. It was damaged or not written "
            "by kspark; delete it (the task then starts with unknown stream time) or reset "
            "the application") from None


def _check_same_topics(task: StreamTask, parts: dict[str, tuple[str, int]],
                       checkpoint: dict[tuple[str, int], int], ids: dict[str, str]) -> None:
    """A changelog deleted and created again (a new topic id) while the local state has a
    checkpoint of the old one: restoring from the new topic's offsets would be wrong."""
    path = _checkpoint_path(task, ".changelog-ids")
    recorded = read_progress(path) or {}
    if not all(type(v) is str for v in recorded.values()):
        raise CorruptStateError(f"task {task.task_id}: {str(path)!r} maps topics to something "
                                "other than topic ids: it was damaged; delete it")
    for name, tp in parts.items():
        was, now = recorded.get(tp[0]), ids.get(tp[0])
        if tp in checkpoint and was is not None and now is not None and was != now:
            raise ChangelogLostError(
                f"task {task.task_id}: changelog topic {tp[0]!r} was deleted and created again "
                f"(topic id {now}, but store {name!r}'s local state was checkpointed from topic "
                f"id {was}); restoring from it would silently lose state. Either delete it and "
                "rebuild it from the local state (kspark changelog rebuild, see "
                "docs/architecture.md), or reset the application")


def _restore(task_id: str, name: str, raw: Any, tp: tuple[str, int], start: int, end: int,
             config: dict[str, Any],
             batch: tuple[str, int] | None, check: Any = None) -> int:
    """Copy changelog records ``start..end`` into the byte store ``raw``; ``check`` (stores
    in kspark's internal encoding) rejects a record that does not parse, naming it. Returns
    the number of records read."""
    if start >= end:
        return 0
    began, done, total, skipped = time.monotonic(), 0, end - start, 0
    log.info("task %s: restoring store %r from %s partition %d, offsets %d..%d",
             task_id, name, tp[0], tp[1], start, end)
    for msgs in read_range(as_settings(config), tp[0], tp[1], start, end,
                           config["source.read.timeout.ms"], kind="restore.consumer"):
        for m in msgs:
            if batch is not None and _of_this_batch_or_later(m, batch, tp):
                skipped += 1  # written by an earlier attempt of this batch (or a later one)
                continue
            if check is not None:
                check(m.key(), m.value(), tp[0], tp[1], m.offset())
            raw.put(m.key(), m.value())
        done += len(msgs)
        if done % 50_000 < len(msgs):
            log.info("task %s: restoring %r: %d of at most %d records", task_id, name, done, total)
    raw.flush()
    log.info("task %s: restored %r (%d records, %d of a retried batch skipped) in %.1fs",
             task_id, name, done - skipped, skipped, time.monotonic() - began)
    return done


def _of_this_batch_or_later(message: Any, batch: tuple[str, int], tp: tuple[str, int]) -> bool:
    for key, value in message.headers() or ():
        if key == BATCH_HEADER:
            query, _, number = (value or b"").decode("utf-8", "replace").rpartition(":")
            if not number.isdigit():
                raise CorruptStateError(
                    f"the record at offset {message.offset()} of changelog topic {tp[0]!r} "
                    f"partition {tp[1]} has a {BATCH_HEADER} header {value!r:.60} that is not "
                    "'<query id>:<batch id>': the changelog was damaged or written by something "
                    "other than kspark; reset the application")
            return query == batch[0] and int(number) >= batch[1]
    return False


def invalidate_checkpoint(task: StreamTask) -> None:
    """Before a batch writes its stores down: until the new checkpoint is written, the
    local state is of no known batch (a task started meanwhile wipes and restores it)."""
    _checkpoint_path(task).unlink(missing_ok=True)


def checkpoint_task(task: StreamTask, builders: dict[str, Any], *,
                    host: TaskHostState | None = None) -> dict[tuple[str, int], int]:
    """After a committed batch: the changelog ends, written to the checkpoint file (and the
    task's progress to ``.progress``, with the batch and the progress it started from, which
    ``host`` keeps). (``host=None`` is a bridge for callers not yet passing it: the task's
    own attributes are used.)"""
    if host is None:  # BRIDGE until every caller passes host=
        host = TaskHostState(changelog_ids=getattr(task, "changelog_ids", None) or {},
                             resumed_progress=getattr(task, "resumed_progress", None))
        try:
            return checkpoint_task(task, builders, host=host)
        finally:
            task.resumed_progress = host.resumed_progress
    progress = task.progress()
    if task.stores or progress["punctuations"]:
        if task.batch is not None:
            progress["query"], progress["batch"] = task.batch
        previous = host.resumed_progress
        progress["previous"] = None if previous is None else {
            k: v for k, v in previous.items() if k != "previous"}
        write_progress(_checkpoint_path(task, ".progress"), progress)
        host.resumed_progress = {k: v for k, v in progress.items() if k != "previous"}
    parts = logged_partitions(task, builders)
    if not parts:
        return {}
    ends = admin_for(task.config).end_offsets(parts.values())
    ids = host.changelog_ids
    if ids:
        write_progress(_checkpoint_path(task, ".changelog-ids"), ids)
    write_checkpoint(_checkpoint_path(task), ends)
    return ends
