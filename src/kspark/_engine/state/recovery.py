"""Recovery decisions for a task's stores, for any host: what a restore keeps, wipes, skips
or refuses, written against a small :class:`ChangelogReader` (offsets, topic ids, records).

A host (the Spark stages, a test) reads its checkpoint files, asks these functions what to
do and does it; the decisions themselves know nothing of Spark nor of a Kafka client:

============================================  =================================================
what the host finds                            what happens
============================================  =================================================
local progress of this batch or a later one    the local state is ahead: wiped, restored from 0
                                               (:func:`local_resume_point`)
no valid checkpoint (or an in-memory store)    wipe, restore from offset 0
                                               (:func:`plan_store_restore`)
checkpoint ahead of the changelog's end        ChangelogLostError (:func:`plan_store_restore`)
changelog topic id changed since checkpoint    ChangelogLostError (:func:`check_changelog_ids`)
changelog record stamped by this batch or a    skipped while restoring
later one (``BATCH_HEADER``)                   (:func:`stamped_by_this_batch_or_later`)
============================================  =================================================

Global stores' decisions (KIP-406) are in :mod:`kspark._engine.state.global_recovery`.

Example:
    >>> plan_store_restore("0_0", "counts", ("app-counts-changelog", 0), end=7,
    ...                    checkpointed=5, persistent=True, app_dir="/tmp/state/app")
    ... # doctest: +NORMALIZE_WHITESPACE
    StoreRestore(store='counts', topic='app-counts-changelog', partition=0, start=5, end=7,
                 wipe=False)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kspark._engine.state.changelog_format import RAW, ChangelogCodec, written_by_old_kspark
from kspark._engine.state.versioned import restore_versions
from kspark._engine.state.layers import put_all
from kspark._engine.task import BATCH_HEADER
from kspark.errors import ChangelogLostError, CorruptStateError

__all__ = ["TopicPartition", "ChangelogRecord", "ChangelogReader", "StoreRestore",
           "local_resume_point", "plan_store_restore", "check_changelog_ids",
           "stamped_by_this_batch_or_later", "restore_store"]

log = logging.getLogger("kspark")
TopicPartition = tuple[str, int]
Batch = tuple[str, int]  # (query id, batch id)


class ChangelogRecord(Protocol):
    """One record read back from a changelog or global topic (shaped as a Kafka client's
    message: ``timestamp()`` is ``(type, milliseconds)``)."""

    def key(self) -> bytes | None: ...

    def value(self) -> bytes | None: ...

    def offset(self) -> int: ...

    def timestamp(self) -> tuple[int, int]: ...

    def headers(self) -> Sequence[tuple[str, bytes | None]] | None: ...


class ChangelogReader(Protocol):
    """What a restore needs of the topics it reads: offsets, topic ids and records."""

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The (committed) end offset of each topic-partition."""
        ...

    def earliest_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The first offset still held of each topic-partition."""
        ...

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each existing topic's id; a topic deleted and created again gets a new one."""
        ...

    def read(self, topic: str, partition: int, start: int,
             end: int) -> Iterator[Sequence[ChangelogRecord]]:
        """Lists of the committed records with ``start <= offset < end``, in offset order."""
        ...


@dataclass(frozen=True)
class StoreRestore:
    """How one store is brought to its changelog's end: ``wipe`` it first, then copy the
    records of ``topic``/``partition`` in ``[start, end)``."""

    store: str
    topic: str
    partition: int
    start: int
    end: int
    wipe: bool


def local_resume_point(local: dict[str, Any] | None,
                       batch: Batch | None) -> tuple[dict[str, Any] | None, bool]:
    """The progress a task resumes from its local copy, and whether the local state is
    *ahead*: saved by this batch of the same query or a later one (a batch Spark runs again,
    whose first attempt wrote its stores down). An ahead state resumes the progress that
    batch started from, and its stores are wiped and restored (their checkpoint is ignored).

    Example:
        >>> local_resume_point({"query": "q", "batch": 3, "previous": {"stream_time": 1}},
        ...                    ("q", 3))
        ({'stream_time': 1}, True)
        >>> local_resume_point({"query": "q", "batch": 2}, ("q", 3))
        ({'query': 'q', 'batch': 2}, False)
        >>> local_resume_point({"query": "old", "batch": 9}, ("q", 3))[1]
        False
    """
    ahead = (local is not None and batch is not None and local.get("query") == batch[0]
             and local.get("batch", -1) >= batch[1])
    if ahead:
        return local.get("previous"), True  # type: ignore[union-attr]
    return local, False


def plan_store_restore(task_id: str, store: str, tp: TopicPartition, end: int,
                       checkpointed: int | None, persistent: bool, app_dir: str,
                       log_start: int | None = None) -> StoreRestore:
    """Where store ``store`` of task ``task_id`` restores from: its checkpointed offset if it
    is persistent and has one, else it is wiped and restored from the changelog's first
    offset, ``log_start`` (0 if not given); also when the checkpoint is below
    ``log_start``: the records after it are gone, and a read from it would only wait for
    them. A checkpoint past the changelog's ``end`` means the changelog was deleted or
    recreated: restoring from it would silently lose state, so it raises
    ChangelogLostError (``app_dir``: the application's state directory, named in the
    advice).

    Example:
        >>> plan_store_restore("0_0", "s", ("c", 0), 9, None, True, "d").wipe
        True
        >>> try:
        ...     plan_store_restore("0_0", "s", ("c", 0), 9, 12, True, "d")
        ... except ChangelogLostError as e:
        ...     print(str(e)[:62])
        task 0_0: changelog topic 'c' partition 0 ends at offset 9, bu
    """
    start = checkpointed if persistent else None
    if start is not None and start > end:
        raise ChangelogLostError(
            f"task {task_id}: changelog topic {tp[0]!r} partition {tp[1]} ends at "
            f"offset {end}, but store {store!r}'s local state was checkpointed at offset "
            f"{start}: the changelog was deleted or recreated, and restoring from it would "
            "silently lose state. Either rebuild the changelog from the local state "
            "(kspark changelog rebuild, see docs/architecture.md), or reset the application "
            f"(delete {app_dir} and the application's internal topics, then reprocess)")
    if start is not None and log_start is not None and start < log_start:
        # the records after the checkpoint are gone (retention, deleted records): the local
        # state cannot be brought up to date; Kafka Streams treats the task as corrupted
        log.warning("task %s: store %r's local state was checkpointed at offset %d of "
                    "changelog topic %r partition %d, which now starts at offset %d: the "
                    "records in between are gone; wiping the store and restoring it from "
                    "the changelog", task_id, store, start, tp[0], tp[1], log_start)
        start = None
    if start is None:  # from the first record the changelog still holds
        return StoreRestore(store, tp[0], tp[1], max(log_start or 0, 0), end, True)
    return StoreRestore(store, tp[0], tp[1], start, end, False)


def check_changelog_ids(task_id: str, parts: Mapping[str, TopicPartition],
                        checkpoint: Mapping[TopicPartition, int], recorded: Mapping[str, str],
                        current: Mapping[str, str]) -> None:
    """A changelog deleted and created again (a new topic id) while the local state has a
    checkpoint of the old one: restoring from the new topic's offsets would be wrong, so it
    raises ChangelogLostError. ``parts``: store -> its changelog partition; ``recorded``:
    topic ids when the checkpoint was written; ``current``: topic ids now. A store without
    a checkpoint, or a topic with no recorded or current id, passes.

    Example:
        >>> check_changelog_ids("0_0", {"s": ("c", 0)}, {("c", 0): 4}, {"c": "A"}, {"c": "A"})
        >>> check_changelog_ids("0_0", {"s": ("c", 0)}, {}, {"c": "A"}, {"c": "B"})
    """
    for name, tp in parts.items():
        was, now = recorded.get(tp[0]), current.get(tp[0])
        if tp in checkpoint and was is not None and now is not None and was != now:
            raise ChangelogLostError(
                f"task {task_id}: changelog topic {tp[0]!r} was deleted and created again "
                f"(topic id {now}, but store {name!r}'s local state was checkpointed from topic "
                f"id {was}); restoring from it would silently lose state. Either delete it and "
                "rebuild it from the local state (kspark changelog rebuild, see "
                "docs/architecture.md), or reset the application")


def stamped_by_this_batch_or_later(record: ChangelogRecord, batch: Batch,
                                   tp: TopicPartition) -> bool:
    """Whether a changelog record was written by micro-batch ``batch`` of the same query or
    a later one (its ``BATCH_HEADER``): a retried batch's first attempt wrote it, so a
    restore for that batch skips it. A header that is not ``<query id>:<batch id>`` raises
    CorruptStateError.
    """
    for key, value in record.headers() or ():
        if key == BATCH_HEADER:
            query, _, number = (value or b"").decode("utf-8", "replace").rpartition(":")
            if not number.isdigit():
                raise CorruptStateError(
                    f"the record at offset {record.offset()} of changelog topic {tp[0]!r} "
                    f"partition {tp[1]} has a {BATCH_HEADER} header {value!r:.60} that is not "
                    "'<query id>:<batch id>': the changelog was damaged or written by something "
                    "other than kspark; reset the application")
            return query == batch[0] and int(number) >= batch[1]
    return False


Check = Callable[[bytes | None, bytes | None, str, int, int], None]


def _entry(m: Any, codec: ChangelogCodec, check: Check | None, tp: tuple[str, int],
           where: str) -> tuple[Any, bytes | None, int]:
    """The store entry (key, value, timestamp) of changelog record ``m`` (``where``: the
    record, for errors), refusing one of kspark's earlier layouts or one that does not parse."""
    if written_by_old_kspark(codec, m.value(), m.headers()):
        raise CorruptStateError(
            f"{where} was written by an earlier kspark in its own layout (kspark now writes "
            "Kafka Streams' layout): reset the application (kspark reset) to rebuild its "
            "state from its input")
    ts = m.timestamp()[1]
    key, value = codec.decode(m.key(), m.value(), ts if codec.strip_timestamp else 0)
    if check is not None:
        check(key, value, tp[0], tp[1], m.offset())
    if codec.value_headers and value is not None and not set(
            codec.value_headers) <= set(m.headers() or ()):
        raise CorruptStateError(
            f"{where} lacks the header {codec.value_headers} of Kafka Streams 4's layout "
            "(written by an earlier kspark, or a Kafka Streams before 2.4): reset the "
            "application (kspark reset) to rebuild its state")
    return key, value, ts


def restore_store(reader: ChangelogReader, task_id: str, raw: Any, plan: StoreRestore,
                  batch: Batch | None, check: Check | None = None,
                  uncommitted: Batch | None = None,
                  progressed: Callable[[int], None] | None = None,
                  codec: ChangelogCodec = RAW) -> int:
    """Carry out ``plan`` on the byte store ``raw`` (the bottom of the store's layers): wipe
    it if planned, then copy the changelog records of ``[start, end)`` into it, skipping
    those :func:`stamped_by_this_batch_or_later` of ``batch`` or of ``uncommitted`` (the
    run of the task's last commit and its first interval not committed); ``check`` (stores
    in kspark's internal encoding) rejects a record that does not parse; ``progressed(n)``
    is told each batch of ``n`` records read (the task's restore-remaining-records-total);
    ``codec``: the store's changelog layout (``changelog_format.py``; a record in kspark's
    layout of before is a CorruptStateError). Returns the records read.
    """
    skip = [b for b in (batch, uncommitted) if b is not None]
    if plan.wipe:
        if raw.persistent and raw.approximate_num_entries():
            log.warning("task %s: store %r has no valid checkpoint for batch %s; wiping it "
                        "and restoring from changelog %s partition %d", task_id, plan.store,
                        batch, plan.topic, plan.partition)
        raw.wipe()
    if plan.start >= plan.end:
        return 0
    tp, name = (plan.topic, plan.partition), plan.store
    began, done, total, skipped = time.monotonic(), 0, plan.end - plan.start, 0
    log.info("task %s: restoring store %r from %s partition %d, offsets %d..%d",
             task_id, name, tp[0], tp[1], plan.start, plan.end)
    for msgs in reader.read(tp[0], tp[1], plan.start, plan.end):
        items: list[Any] = []  # (key, value or None: a delete)
        for m in msgs:
            if any(stamped_by_this_batch_or_later(m, b, tp) for b in skip):
                skipped += 1  # written by an earlier attempt of this batch (or a later one)
                continue
            items.append(_entry(m, codec, check, tp, f"task {task_id}: changelog {tp[0]} "
                                f"partition {tp[1]} offset {m.offset()} of store {name!r}"))
        if codec.versioned_history_ms is not None:  # each record a version: replayed as puts
            restore_versions(raw, name, codec.versioned_history_ms, items)
        else:  # RocksDB: one write batch per fetch, not one write per record
            put_all(raw, [(k, v) for k, v, _ in items])
        done += len(msgs)
        if progressed is not None:
            progressed(len(msgs))
        if done % 50_000 < len(msgs):
            log.info("task %s: restoring %r: %d of at most %d records", task_id, name, done, total)
    raw.flush()
    log.info("task %s: restored %r (%d records, %d of a retried batch skipped) in %.1fs",
             task_id, name, done - skipped, skipped, time.monotonic() - began)
    return done
