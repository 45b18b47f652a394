"""Rebuild a lost changelog topic from the local state of a persistent (RocksDB) store.

A store's local RocksDB holds exactly the key and value bytes of its changelog records
(restoration copies them in unchanged), so writing every local entry to the changelog
partition of its task gives a compacted changelog equivalent to the lost one. The task's
checkpoint then points at the new topic's end (and its new topic id), so the next start
restores nothing and counts on.

Used by ``kspark changelog rebuild``; see docs/architecture.md.

Example:
    >>> # rebuild_changelog("localhost:9092", "/var/kspark", "my-app", "counts")
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from kspark._engine.state.build import changelog_topic
from kspark._engine.state.bytes_stores import RocksDBBytesStore
from kspark._engine.state.checkpoint import (
    read_checkpoint,
    read_progress,
    write_checkpoint,
    write_progress,
)
from kspark._kafka.admin import Admin
from kspark._engine.state.changelog_format import FORMAT_HEADER, load_codec
from kspark._kafka.task_producer import TaskProducer
from kspark._kafka.settings import ClientSettings, as_settings
from kspark.errors import ChangelogLostError, StateStoreError

__all__ = ["rebuild_changelog"]

log = logging.getLogger("kspark")


def rebuild_changelog(where: ClientSettings | str, state_dir: str, app_id: str, store: str,
                      partitions: int | None = None) -> dict[int, int]:
    """Write ``store``'s local entries of every task under ``<state_dir>/<app_id>`` to its
    changelog topic (created with ``partitions`` if missing; it must be empty), and point
    the tasks' checkpoints at it. Returns the records written per partition.

    Raises ChangelogLostError if there is no local state to rebuild from, or the topic
    already holds records.
    """
    topic = changelog_topic(app_id, store)
    tasks = _local_tasks(Path(state_dir, app_id), store, topic)
    if not tasks:
        raise ChangelogLostError(
            f"no local state of store {store!r} under {Path(state_dir, app_id)} has a checkpoint "
            f"of changelog {topic!r}: nothing to rebuild it from (in-memory stores keep no "
            "local state); reset the application instead")
    settings = as_settings(where)
    admin = Admin(settings)
    counts = admin.partition_counts()
    if topic not in counts:
        if partitions is None:
            raise ChangelogLostError(
                f"changelog topic {topic!r} does not exist: pass its partition count (the "
                "number of tasks of the sub-topology that owns the store) to create it")
        admin.create_topics({topic: partitions}, {"cleanup.policy": "compact"})
        counts[topic] = partitions
    tps = [(topic, p) for p in range(counts[topic])]
    earliest, ends = admin.end_offsets(tps, earliest=True), admin.end_offsets(tps)
    if any(ends[tp] > earliest[tp] for tp in tps):
        raise ChangelogLostError(f"changelog topic {topic!r} already holds records; rebuild "
                                 "only into a new, empty topic (delete and recreate it first)")
    for _, p in tasks:
        if p >= counts[topic]:
            raise ChangelogLostError(f"local state of task partition {p} does not fit changelog "
                                     f"topic {topic!r} with {counts[topic]} partitions")
    written = _write(settings, topic, store, tasks)
    ends = admin.end_offsets(tps)
    topic_id = admin.topic_ids([topic]).get(topic)
    for task_dir, p in tasks:
        checkpoint = read_checkpoint(task_dir / ".checkpoint") or {}
        checkpoint[(topic, p)] = ends[(topic, p)]
        write_checkpoint(task_dir / ".checkpoint", checkpoint)
        ids = read_progress(task_dir / ".changelog-ids") or {}
        if topic_id is not None:
            write_progress(task_dir / ".changelog-ids", {**ids, topic: topic_id})
    return written


def _local_tasks(app_dir: Path, store: str, topic: str) -> list[tuple[Path, int]]:
    """(task directory, changelog partition) of each task with local state of ``store``."""
    out = []
    for path in sorted(app_dir.glob("*/.checkpoint")):
        if not (path.parent / store).is_dir():
            continue
        for t, p in read_checkpoint(path) or {}:
            if t == topic:
                out.append((path.parent, p))
    return out


def _write(settings: ClientSettings, topic: str, store: str,
           tasks: list[tuple[Path, int]]) -> dict[int, int]:
    producer = TaskProducer(settings, f"kspark-rebuild-{topic}")
    written: dict[int, int] = {}
    for task_dir, p in tasks:
        written[p] = 0
        codec = load_codec(task_dir, store)
        if codec is None:
            raise ChangelogLostError(
                f"the local state of store {store!r} in {task_dir} predates kspark's Kafka "
                "Streams changelog layout: it cannot be written to a changelog this version "
                "restores; reset the application instead")
        db = _opened(store, task_dir / store)
        try:
            for key, value in db.range(None, None):
                for k, v, ts in codec.records(key, value):  # timestamp 0: now
                    producer.send(topic, k, v, ts, (FORMAT_HEADER,), p)
                    written[p] += 1
        finally:
            db.close()
        log.info("changelog %s partition %d: wrote %d records from %s", topic, p,
                 written[p], task_dir / store)
    producer.flush()
    return written


def _opened(store: str, path: Path, patience_s: float = 60.0) -> RocksDBBytesStore:
    """The task's store, waiting (at most ``patience_s``) while a worker of the run that
    just failed still holds its lock: it lets go as it exits."""
    deadline, said = time.monotonic() + patience_s, False
    while True:
        try:
            return RocksDBBytesStore(store, path)
        except StateStoreError as e:
            if "lock" not in str(e).lower() or time.monotonic() >= deadline:
                raise
            if not said:
                log.warning("store %r at %s is still locked by another process (a worker of the "
                            "application's last run?); waiting up to %.0f s for it to let go",
                            store, path, patience_s)
                said = True
            time.sleep(0.5)
