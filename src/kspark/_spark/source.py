"""Kafka as a PySpark Python streaming data source: one input partition per task."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kspark._kafka.settings import ClientSettings
from kspark._plan.options import OPTION, SourceOptions
from kspark._spark.batch_cut import Offsets, cap_by_lag, cap_by_time, rows
from kspark._spark.documents import CLOCK
from kspark._spark.wire import SOURCE_ARROW_SCHEMA, SOURCE_SCHEMA, TaskMarker, marker_batch
from kspark.errors import KSparkError

__all__ = ["KafkaDataSource", "source_for", "TaskInput"]

log = logging.getLogger("kspark")

@dataclass
class TaskInput(InputPartition):
    """What one task reads in one micro-batch: ``(topic, partition, start, end)`` ranges."""

    task: int
    ranges: list[tuple[str, int, int, int]]
    globals_: Offsets | None = None  # the global topics' pinned end offsets
    clock: int | None = None  # the micro-batch's pinned clock (see CLOCK)


class KafkaDataSource(DataSource):
    """``spark.readStream.format("kspark_kafka")``; its one option, :data:`OPTION`, holds
    a :class:`~kspark._plan.options.SourceOptions` as JSON (set by ``planner.build``).

    The Kafka client settings never travel as options (they would show in ``explain()`` and
    Spark's UI): :func:`source_for` registers a subclass per query whose class attribute
    ``settings`` holds them; it reaches the Python workers pickled with the class.
    """

    settings: ClientSettings | None = None

    @classmethod
    def name(cls) -> str:
        return "kspark_kafka"

    def schema(self) -> str:
        return SOURCE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = SourceOptions.from_json(self.options[OPTION])
        settings = self.settings or ClientSettings(options.bootstrap)
        return KafkaStreamReader(options, settings)


def source_for(spark: Any, settings: ClientSettings) -> str:
    """Register a data source carrying ``settings`` with ``spark``; its format name."""
    name = f"kspark_kafka_{uuid.uuid4().hex[:12]}"
    cls = type(f"KafkaDataSource_{name[-12:]}", (KafkaDataSource,),
               {"settings": settings, "name": classmethod(lambda c: name),
                "__module__": __name__})
    spark.dataSource.register(cls)
    return name


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{topic: {partition: next offset}}`` and land in Spark's offset log."""

    def __init__(self, options: SourceOptions, settings: ClientSettings):
        self.settings = settings
        self.bootstrap = settings.bootstrap
        self.topics: list[str] = list(options.topics)
        self.max_offsets = options.max_offsets
        self.timeout_ms = options.timeout_ms
        self.read_timeout_ms = options.read_timeout_ms
        self.resets: dict[str, str] = dict(options.resets)
        # global stores' topics: their ends are pinned with every batch (see _spark/globals.py)
        self.global_topics: list[str] = list(options.global_topics)
        self._last_globals: Offsets = {}
        self.start: Offsets = dict(options.start)
        # an incremental batch run's stop offsets (KIP-95; see kspark._control.stop_offsets)
        # (not ``self.stop``: that is the reader's stop() method, which Spark calls)
        self.stop_offsets: Offsets | None = options.stop
        # "records": the records; "ranges": only a task marker with the task's ranges
        self.emit = options.emit
        self.clock_ms = options.clock_ms  # 0: no clock pinned (see CLOCK)
        # topics the application writes and reads back (a cycle's back edge): never frozen
        # at a stop, so a batch run goes on while they hold records it has not read
        self.looped: list[str] = list(options.looped)
        self._purged: dict[tuple[str, int], int] = {}  # looped partition -> purged before
        self._stop_at: Offsets | None = None
        self._admin_client: Any = None

    def _admin(self) -> Any:
        """One admin client for the reader's life (its connections outlive the micro-batch:
        a new client per trigger costs a connection and a metadata round trip)."""
        if self._admin_client is None:
            from kspark._kafka.admin import Admin

            self._admin_client = Admin(self.settings, self.timeout_ms)
        return self._admin_client

    def _ends(self, admin: Any, earliest: bool = False, topics: list[str] | None = None
              ) -> Offsets:
        topics = self.topics if topics is None else topics
        if not topics:
            return {}
        counts = admin.check_topics(topics, [])
        tps = [(t, p) for t in topics for p in range(counts[t])]
        ends = admin.end_offsets(tps, earliest)
        out: Offsets = {t: {} for t in topics}
        for (t, p), off in ends.items():
            out[t][str(p)] = off
        return out

    def _global_ends(self) -> Offsets:
        """The global topics' ends now; a global topic missing for a moment (deleted and
        being created again) keeps its last ends, so the query goes on (KIP-406)."""
        if not self.global_topics:
            return {}
        admin = self._admin()
        counts = admin.partition_counts(admin.settings.task_timeout_ms / 1000)
        present = [t for t in self.global_topics if t in counts]
        ends = admin.end_offsets([(t, p) for t in present for p in range(counts[t])])
        out: Offsets = {t: self._last_globals.get(t, {}) for t in self.global_topics}
        for t in present:
            out[t] = {str(p): ends[(t, p)] for p in range(counts[t])}
        self._last_globals = out
        return out

    def _clock(self) -> Offsets:
        if not self.clock_ms:
            return {}
        now = int(time.time() * 1000)
        return {CLOCK: {"0": now - now % self.clock_ms}}

    def initialOffset(self) -> Offsets:
        """Where a new query starts: the pinned start offsets (the group's, see
        ``_spark/resume.py``), else each topic's earliest offset, or its end for 'latest'
        sources. Spark calls this again when it replays batch 0, hence the pin. Global
        topics start at their current ends (only the ends of later batches are used)."""
        admin = self._admin()
        earliest, latest = self._ends(admin, earliest=True), self._ends(admin)
        return {**{t: {**(latest if self.resets.get(t) == "latest" else earliest)[t],
                       **self.start.get(t, {})} for t in self.topics}, **self._global_ends(),
                **self._clock()}

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        if self._stop_at is not None:  # AvailableNow: global ends and clock frozen with the stop
            ends = {t: v for t, v in self._stop_at.items()
                    if t not in self.global_topics and t != CLOCK}
            ends.update(self._ends(self._admin(), topics=self.looped))  # read to their end
            pinned = {t: v for t, v in self._stop_at.items()
                      if t in self.global_topics or t == CLOCK}
        else:
            ends, pinned = self._ends(self._admin()), {**self._global_ends(), **self._clock()}
        ends = {t: {p: max(e, start.get(t, {}).get(p, 0)) for p, e in parts.items()}
                for t, parts in ends.items()}
        if isinstance(limit, ReadMaxRows) and not isinstance(limit, ReadAllAvailable):
            ends = self._cap(start, ends, limit.max_rows)
        return {**ends, **pinned}

    def _cap(self, start: Offsets, ends: Offsets, max_rows: int) -> Offsets:
        """The batch within ``max_rows`` records: cut by time where the source's tasks merge
        several topics, else by lag (see ``batch_cut.py``)."""
        if len(ends) < 2 or rows(start, ends) <= max_rows:  # within the cap: no lookups
            return cap_by_lag(start, ends, max_rows)
        admin = self._admin()
        tps = [(t, int(p)) for t, parts in ends.items() for p in parts]
        return cap_by_time(start, ends, max_rows, lambda c: admin.offsets_for_time(tps, c),
                           admin.newest_timestamp(tps))

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_offsets)

    def prepareForTriggerAvailableNow(self) -> None:
        """AvailableNow: stop at the run's stop offsets, which the driver took from (or wrote
        to) the metadata topic, so a restarted run stops where its first start would have.
        The looped topics have none: every batch reads them to their end, and the query ends
        only once a batch finds nothing new in them either (``latestOffset``)."""
        stop = self.stop_offsets if self.stop_offsets is not None else self._ends(self._admin())
        self._stop_at = {**{t: v for t, v in stop.items() if t not in self.looped},
                         **self._global_ends(), **self._clock()}

    def partitions(self, start: Offsets, end: Offsets) -> list[TaskInput]:
        pinned = {t: end[t] for t in self.global_topics if t in end} if self.global_topics else None
        clock = int(end[CLOCK]["0"]) if CLOCK in end else None
        end = {t: parts for t, parts in end.items() if t not in self.global_topics and t != CLOCK}
        n_tasks = max((len(parts) for parts in end.values()), default=0)
        tasks = [TaskInput(n, [], pinned, clock) for n in range(n_tasks)]
        for topic, parts in end.items():
            for p, e in parts.items():
                s = start.get(topic, {}).get(p, 0)
                if e > s:
                    tasks[int(p)].ranges.append((topic, int(p), s, e))
        return tasks

    def read(self, partition: TaskInput) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        from kspark._kafka.range_reader import read_range

        if self.emit == "ranges":
            yield marker_batch(TaskMarker(partition.task, tuple(partition.ranges),
                                          partition.globals_,
                                           partition.clock))
            return
        for topic, p, s, e in partition.ranges:
            for msgs in read_range(self.settings, topic, p, s, e, self.read_timeout_ms):
                yield _to_arrow(msgs)

    def commit(self, end: Offsets) -> None:
        """Spark's offset and commit logs hold progress (and the tasks committed their
        offsets to the group); the looped topics' records up to ``end`` are purged, as Kafka
        Streams purges a repartition topic after a commit (a failed purge is retried with
        the next commit)."""
        before = {(t, int(p)): int(o) for t in self.looped for p, o in end.get(t, {}).items()
                  if int(o) > self._purged.get((t, int(p)), 0)}
        if before:
            try:
                self._admin().delete_records(before)
                self._purged.update(before)
            except KSparkError as e:
                log.warning("could not purge the records read of %s: %s", sorted(self.looped), e)


def _to_arrow(msgs: list) -> pa.RecordBatch:
    topics, parts, offs, tss, keys, values, headers = [], [], [], [], [], [], []
    for m in msgs:
        topics.append(m.topic())
        parts.append(m.partition())
        offs.append(m.offset())
        tss.append(m.timestamp()[1])
        keys.append(m.key())
        values.append(m.value())
        h = m.headers()
        headers.append([{"key": k, "value": v} for k, v in h] if h else [])
    return pa.RecordBatch.from_arrays(
        [pa.array(topics, pa.string()), pa.array(parts, pa.int32()), pa.array(offs, pa.int64()),
         pa.array(tss, pa.int64()), pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
         pa.array(headers, SOURCE_ARROW_SCHEMA.field("headers").type)],
        schema=SOURCE_ARROW_SCHEMA)
