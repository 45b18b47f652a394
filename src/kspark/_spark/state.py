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

from kspark._engine.state.build import bottom, changelog_topic, task_store_dir
from kspark._engine.state.checkpoint import (
    read_checkpoint,
    read_progress,
    write_checkpoint,
    write_progress,
)
from kspark._engine.task import StreamTask
from kspark._kafka.admin import Admin
from kspark._kafka.clients import read_range

__all__ = ["restore_task", "checkpoint_task", "logged_partitions", "admin_for"]

log = logging.getLogger("kspark")
_ADMINS: dict[tuple, Admin] = {}


def admin_for(config: dict[str, Any]) -> Admin:
    """One admin client per worker process and cluster."""
    key = (config["bootstrap.servers"], config["request.timeout.ms"])
    if key not in _ADMINS:
        extra = {k[len("admin."):]: v for k, v in config.items() if k.startswith("admin.")}
        _ADMINS[key] = Admin(config["bootstrap.servers"], config["request.timeout.ms"], extra)
    return _ADMINS[key]


def logged_partitions(task: StreamTask, builders: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """store name -> (changelog topic, partition) for the task's logged stores."""
    app = task.config["application.id"]
    return {name: (changelog_topic(app, name), task.partition) for name in task.stores
            if builders[name].logging_enabled}


def _checkpoint_path(task: StreamTask, name: str = ".checkpoint"):
    return task_store_dir(task.config["state.dir"], task.config["application.id"],
                          task.task_id) / name


def _keeps_progress(task: StreamTask) -> bool:
    return bool(task.stores) or bool(task.progress()["punctuations"])


def restore_task(task: StreamTask, builders: dict[str, Any]) -> dict[tuple[str, int], int]:
    """Bring every logged store of a new task up to its changelog's end; returns the end offsets.

    The task also resumes its saved progress, if any.
    """
    progress = read_progress(_checkpoint_path(task, ".progress"))
    if progress is not None:
        task.resume(progress)
    parts = logged_partitions(task, builders)
    if not parts:
        return {}
    config = task.config
    ends = admin_for(config).end_offsets(parts.values())
    checkpoint = read_checkpoint(_checkpoint_path(task)) or {}
    consumer_conf = {k[len("consumer."):]: v for k, v in config.items() if k.startswith("consumer.")}
    for name, tp in parts.items():
        raw = bottom(task.stores[name])
        end = ends[tp]
        start = checkpoint.get(tp) if raw.persistent else None
        if start is None or start > end:
            if raw.persistent and raw.approximate_num_entries():
                log.warning("task %s: store %r has no valid checkpoint; wiping it and restoring "
                            "from changelog %s partition %d", task.task_id, name, *tp)
            raw.wipe()
            start = 0
        _restore(task.task_id, name, raw, tp, start, end, config, consumer_conf)
    return ends


def _restore(task_id: str, name: str, raw: Any, tp: tuple[str, int], start: int, end: int,
             config: dict[str, Any], consumer_conf: dict[str, Any]) -> None:
    if start >= end:
        return
    began, done, total = time.monotonic(), 0, end - start
    log.info("task %s: restoring store %r from %s partition %d, offsets %d..%d",
             task_id, name, tp[0], tp[1], start, end)
    for msgs in read_range(config["bootstrap.servers"], tp[0], tp[1], start, end,
                           config["source.read.timeout.ms"], consumer_conf):
        for m in msgs:
            raw.put(m.key(), m.value())
        done += len(msgs)
        if done % 50_000 < len(msgs):
            log.info("task %s: restoring %r: %d of at most %d records", task_id, name, done, total)
    raw.flush()
    log.info("task %s: restored %r (%d records) in %.1fs", task_id, name, done,
             time.monotonic() - began)


def checkpoint_task(task: StreamTask, builders: dict[str, Any]) -> dict[tuple[str, int], int]:
    """After a committed batch: the changelog ends, written to the checkpoint file (and the
    task's progress to ``.progress``)."""
    if _keeps_progress(task):
        write_progress(_checkpoint_path(task, ".progress"), task.progress())
    parts = logged_partitions(task, builders)
    if not parts:
        return {}
    ends = admin_for(task.config).end_offsets(parts.values())
    write_checkpoint(_checkpoint_path(task), ends)
    return ends
