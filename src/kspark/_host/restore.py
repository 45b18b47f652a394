"""Task state on Spark: restore stores from their changelogs, checkpoint what is on disk.

A task's stores live under ``<state.dir>/<application.id>/<task>``. Before a batch, each
logged store is brought up to the end of its changelog partition: from the checkpointed
offset when the local state has a valid checkpoint, else wiped and restored from the
beginning. After the batch (stores written down, producer flushed), the changelog end
offsets are written to the checkpoint file, and the task's progress (stream time,
partition times, punctuation due times) to ``.progress``, so a task rebuilt for the next
batch goes on where it was.

What a restore keeps, wipes, skips or refuses is decided by the engine
(``kspark._engine.state.recovery``); this module reads and writes the task's files and
hands the engine a reader of the cluster's changelogs (``KafkaChangelogReader``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._engine.documents import Invalid, check_progress
from kspark._engine.state.changelog_format import codec_for
from kspark._engine.state.build import bottom, changelog_topic, task_store_dir
from kspark._engine.state.checkpoint import (
    read_checkpoint,
    read_progress,
    write_checkpoint,
    write_progress,
)
from kspark._engine.state.recovery import (
    check_changelog_ids,
    local_resume_point,
    plan_store_restore,
    restore_store,
)
from kspark._engine.state.restore_check import restore_checker
from kspark._engine.task import StreamTask
from kspark._kafka.admin import Admin
from kspark._kafka.changelog_reader import KafkaChangelogReader
from kspark._kafka.clients import read_range
from kspark._kafka.group_offsets import committed_offsets
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._host.state import TaskHostState
from kspark._worker import registry
from kspark.config import EXACTLY_ONCE_V2, declared_default
from kspark.errors import CorruptStateError

__all__ = ["LOCAL_PROGRESS", "restore_task", "checkpoint_task", "invalidate_checkpoint",
           "logged_partitions", "source_partitions", "admin_for"]


def admin_for(where: ClientSettings | Mapping[str, Any], timeout_ms: int | None = None) -> Admin:
    """One admin client per worker process and cluster: for client settings parsed once
    (``HostContext.settings``) and ``timeout_ms``, or for a config (parsed here)."""
    if isinstance(where, ClientSettings):
        settings, timeout_ms = where, int(timeout_ms or declared_default("request.timeout.ms"))
    else:
        settings, timeout_ms = as_settings(where), where["request.timeout.ms"]
    return registry().get("admins", ("", settings, timeout_ms),
                          lambda: Admin(settings, timeout_ms))


def logged_partitions(task: StreamTask, builders: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """store name -> (changelog topic, partition) for the task's logged stores."""
    app = task.config["application.id"]
    return {name: (changelog_topic(app, name), task.partition) for name in task.stores
            if builders[name].logging_enabled}


def _checkpoint_path(task: StreamTask, name: str = ".checkpoint"):
    return task_store_dir(task.config["state.dir"], task.config["application.id"],
                          task.task_id) / name


_SOURCES = ".source-checkpoint"  # the checkpoint of stores whose changelog is their topic

# restore_task: resume the progress saved in the task directory. A string, not object():
# stage functions reach workers pickled by value, and an object() would lose its identity.
LOCAL_PROGRESS = "local"


def restore_task(task: StreamTask, builders: dict[str, Any],
                 batch: tuple[str, int] | None = None, saved: Any = LOCAL_PROGRESS,
                 replay: bool = False, *, host: TaskHostState,
                 settings: ClientSettings | None = None,
                 uncommitted: tuple[str, int] | None = None) -> dict[tuple[str, int], int]:
    """Bring every logged store of a new task to the state its ``batch`` (query id, batch
    id) starts from; returns the changelog end offsets.

    The task also resumes its progress: ``saved``, the progress in the task's marker in
    Kafka (under both guarantees; the Spark host always passes it), else the one saved
    locally (a cache: on a cluster it may be of an executor the task left batches ago). A
    batch that Spark runs again (its first attempt died, perhaps after writing its changelog
    and checkpoint) must not see its own first attempt: when the local progress is of this
    batch of the same query, the batch is a ``replay`` of a committed one, or the checkpoint
    is missing, the local state is wiped and restored, and changelog records that this query
    stamped with this batch or a later one are skipped. So are those stamped after the
    task's last commit by the run that made it (``uncommitted``: that run and the first
    interval it did not commit): at-least-once writes a changelog record before its input
    offsets are committed, and a run that failed in between (a crash, a broker restart)
    left records whose input is processed again.

    What the host keeps of the task (the progress resumed, the changelogs' topic ids, the
    records restored) goes to ``host``. ``settings``: the cluster's client settings, when
    the host parsed them once already (else they are parsed from the task's config).
    """
    return _restore_task(task, builders, batch, saved, replay, host, settings, uncommitted)


def _restore_task(task: StreamTask, builders: dict[str, Any], batch: tuple[str, int] | None,
                  saved: Any, replay: bool, host: TaskHostState,
                  settings: ClientSettings | None,
                  uncommitted: tuple[str, int] | None = None) -> dict[tuple[str, int], int]:
    """restore_task's work: the engine decides (``_engine/state/recovery.py``), this does."""
    if replay:
        invalidate_checkpoint(task)  # the state of before the batch is not written down
    path = _checkpoint_path(task, ".progress")
    source = f"the progress saved in {str(path)!r}"
    progress, ahead = local_resume_point(_checked(read_progress(path), task, source), batch)
    if not (isinstance(saved, str) and saved == LOCAL_PROGRESS):
        progress = saved
        source = (f"the progress in its marker (consumer group "
                  f"{task.config['application.id']!r})")
    if progress is not None:
        task.resume(progress, source)
    host.resumed_progress = progress
    _restore_from_sources(task, builders, host, settings, ahead)
    parts = logged_partitions(task, builders)
    if not parts:
        return {}
    config, reader = task.config, _reader(task.config, settings)
    ends = reader.end_offsets(parts.values())
    checkpoint = {} if ahead else (read_checkpoint(_checkpoint_path(task)) or {})
    host.changelog_ids = reader.topic_ids(sorted({t for t, _ in parts.values()}))
    if checkpoint:
        check_changelog_ids(task.task_id, parts, checkpoint, _recorded_ids(task),
                            host.changelog_ids)
    app_dir = f"{config['state.dir']}/{config['application.id']}"
    starts = reader.earliest_offsets(parts.values())  # a restore never reads below them
    plans = {name: plan_store_restore(task.task_id, name, tp, ends[tp], checkpoint.get(tp),
                                      bottom(task.stores[name]).persistent, app_dir,
                                      starts.get(tp)) for name, tp in parts.items()}
    progressed = _remaining(task, sum(max(0, p.end - p.start) for p in plans.values()))
    for name, plan in plans.items():
        host.restored_records += restore_store(reader, task.task_id, bottom(task.stores[name]),
                                               plan, batch,
                                               restore_checker(task.stores[name], task.task_id),
                                               uncommitted, progressed,
                                               codec_for(builders[name]))
    task.stats.gauge("=restore-remaining", 0)  # done (transaction markers are offsets too)
    return ends


def source_partitions(task: StreamTask, builders: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """store name -> (input topic, partition) for the task's stores whose changelog is their
    source topic (a source KTable under ``reuse.ktable.source.topics``)."""
    return {name: (builders[name].source_changelog, task.partition) for name in task.stores
            if getattr(builders[name], "source_changelog", None)}


def _restore_from_sources(task: StreamTask, builders: dict[str, Any], host: TaskHostState,
                          settings: ClientSettings | None, ahead: bool) -> None:
    """Bring each store whose changelog is its source topic up to the offset the
    application's group committed, as Kafka Streams restores one: from its checkpoint
    (``.source-checkpoint``: the input offsets of the task's last commit here) if it is
    persistent and has one no further than that offset, else wiped and from the topic's
    first offset (nothing committed: nothing to restore; the task processes the rest)."""
    parts = source_partitions(task, builders)
    if not parts:
        return
    config = task.config
    settings = settings or as_settings(config)
    committed = committed_offsets(settings, config["application.id"], list(parts.values()),
                                  config["request.timeout.ms"] / 1000)
    reader = _reader(config, settings)
    starts = reader.earliest_offsets(parts.values())
    saved = {} if ahead else (read_checkpoint(_checkpoint_path(task, _SOURCES)) or {})
    app_dir = f"{config['state.dir']}/{config['application.id']}"
    for name, tp in parts.items():
        end, mark = committed.get(tp, 0), saved.get(tp)
        plan = plan_store_restore(task.task_id, name, tp, end,
                                  mark if mark is not None and mark <= end else None,
                                  bottom(task.stores[name]).persistent, app_dir, starts.get(tp))
        host.restored_records += restore_store(
            reader, task.task_id, bottom(task.stores[name]), plan, None,
            restore_checker(task.stores[name], task.task_id), codec=codec_for(builders[name]))


def _remaining(task: StreamTask, total: int) -> Any:
    """Kafka Streams' restore-remaining-records-total of ``task`` (INFO): ``total`` offsets
    to restore, less the records read as they are read; the function that is told them."""
    left = [total]
    task.stats.gauge("=restore-remaining", total)

    def progressed(n: int) -> None:
        left[0] = max(0, left[0] - n)
        task.stats.gauge("=restore-remaining", left[0])

    return progressed


def _reader(config: Mapping[str, Any], settings: ClientSettings | None = None
            ) -> KafkaChangelogReader:
    """The changelogs of ``config``'s cluster (``settings``: its client settings, if parsed
    already; ``admin_for`` and ``read_range`` are looked up here, so that a test may
    replace them)."""
    settings = settings or as_settings(config)
    return KafkaChangelogReader(admin_for(settings, config["request.timeout.ms"]), settings,
                                config["source.read.timeout.ms"], read=read_range)


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


def _recorded_ids(task: StreamTask) -> dict[str, str]:
    """The changelog topic ids recorded with the task's checkpoint ({} if none)."""
    path = _checkpoint_path(task, ".changelog-ids")
    recorded = read_progress(path) or {}
    if not all(type(v) is str for v in recorded.values()):
        raise CorruptStateError(f"task {task.task_id}: {str(path)!r} maps topics to something "
                                "other than topic ids: it was damaged; delete it")
    return recorded


def invalidate_checkpoint(task: StreamTask) -> None:
    """Before a batch writes its stores down: until the new checkpoint is written, the
    local state is of no known batch (a task started meanwhile wipes and restores it)."""
    _checkpoint_path(task).unlink(missing_ok=True)
    _checkpoint_path(task, _SOURCES).unlink(missing_ok=True)


def checkpoint_task(task: StreamTask, builders: dict[str, Any], *, host: TaskHostState,
                    settings: ClientSettings | None = None) -> dict[tuple[str, int], int]:
    """After a committed batch: the changelog ends, written to the checkpoint file (and the
    task's progress to ``.progress``, with the batch and the progress it started from, which
    ``host`` keeps)."""
    progress = task.progress()
    if task.stores or progress["punctuations"]:
        if task.batch is not None:
            progress["query"], progress["batch"] = task.batch
        previous = host.resumed_progress
        progress["previous"] = None if previous is None else {
            k: v for k, v in previous.items() if k != "previous"}
        write_progress(_checkpoint_path(task, ".progress"), progress)
        host.resumed_progress = {k: v for k, v in progress.items() if k != "previous"}
    sources = {tp: host.committed_inputs[tp] for tp in source_partitions(task, builders).values()
               if tp in host.committed_inputs}
    if sources:  # the stores whose changelog is their source topic: what the commit covered
        write_checkpoint(_checkpoint_path(task, _SOURCES), sources)
    parts = logged_partitions(task, builders)
    if not parts:
        if source_partitions(task, builders):  # the mark a query of the stores on disk
            write_checkpoint(_checkpoint_path(task), {})  # reads (query_host._from_disk)
        return {}
    admin = admin_for(settings or task.config, task.config["request.timeout.ms"])
    if task.config.get("processing.guarantee") == EXACTLY_ONCE_V2:  # its commit markers
        ends = admin.settled_end_offsets(parts.values())
    else:
        ends = admin.end_offsets(parts.values())
    ids = host.changelog_ids
    if ids:
        write_progress(_checkpoint_path(task, ".changelog-ids"), ids)
    write_checkpoint(_checkpoint_path(task), ends)
    return ends
