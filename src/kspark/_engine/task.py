"""StreamTask: runs one partition group's records through the topology's nodes.

Its parts live beside it: error handling and dead letters (:mod:`~kspark._engine.task_errors`),
punctuations and delayed records (:mod:`~kspark._engine.task_schedule`), saved progress
(:mod:`~kspark._engine.task_progress`).

Example:
    >>> from kspark._engine.collector import MemoryCollector
    >>> task = StreamTask("0_3", {}, [], {"application.id": "app", "state.dir": "/tmp"},
    ...                   MemoryCollector())
    >>> task.partition, task.process_buffered()
    (3, 0)
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kspark._engine.aggregates.batch_count import plan_batch_count
from kspark._engine.api import Record, RecordMetadata
from kspark._engine.async_.processor import AsyncProcessor
from kspark._engine.collector import RecordCollector
from kspark._engine.metrics.names import recording_level
from kspark._engine.metrics.shape import declare_metrics
from kspark._engine.metrics.stats import TaskStats, record_size
from kspark._engine.nodes import ProcessorNode, RawRecord, SourceNode
from kspark._engine.partition_group import PartitionGroup
from kspark._engine.progress import KeepsProgress
from kspark._engine.punctuation import PunctuationQueue
from kspark._engine.state.changelog_format import codec_for, save_codec
from kspark._engine.state.changelog_send import BATCH_HEADER, ChangelogWriter
from kspark._engine.state.build import build_store, changelog_topic, task_store_dir
from kspark._engine.state.delayed import DelayedRecordsStore
from kspark._engine.state.layers import RecordCache
from kspark._engine.task_errors import RecordErrors
from kspark._engine.task_progress import TaskProgress
from kspark._engine.task_schedule import TaskScheduling
from kspark._engine.timestamps import ConsumerRecord, FailOnInvalidTimestamp, TimestampExtractor
from kspark.errors import SerializationError, TopologyError
from kspark._engine.metrics.names import TRACE
from kspark._engine.metrics.shape import metered_stores
from kspark._engine.state.metered import meter_cache, meter_store
from kspark._config_defaults import default_of

__all__ = ["StreamTask", "BATCH_HEADER"]

TASK_STORE_LOCK_WAIT_S = 10.0  # see _build_store

log = logging.getLogger("kspark")


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StreamTask(RecordErrors, TaskScheduling, TaskProgress):
    """One Kafka Streams task: a partition group and the nodes that process it.

    ``sources`` maps each input topic to its source node; ``nodes`` lists every node in
    topological order (parents before children).
    """

    def __init__(self, task_id: str, sources: Mapping[str, SourceNode],
                 nodes: Iterable[ProcessorNode], config: Mapping[str, Any],
                 collector: RecordCollector, clock: Callable[[], int] = _wall_clock_ms,
                 store_builders: Mapping[str, Any] | None = None, batch_buffer: bool = False,
                 restore: Callable[["StreamTask"], Any] | None = None,
                 global_stores: Mapping[str, Any] | None = None, async_runtime: Any = None,
                 durable_commits: bool = True):
        self.task_id = task_id
        # False: a commit leaves persistent stores' writes in RocksDB's memtable (the
        # TopologyTestDriver's, committing per record); a host's commits write them to disk
        self.durable_commits = durable_commits
        self.async_runtime = async_runtime  # None: async steps use the shared thread runtime
        self.global_stores = dict(global_stores or {})  # read-only views (global_task.py)
        self.sources = dict(sources)
        self.nodes = list(nodes)
        self.config = config
        self.collector = collector
        self.clock = clock
        self._poll_now: int | None = None  # the time of the batch being processed
        self.stream_time = -1
        self._current: RawRecord | None = None
        self.commit_requested = False
        self.processed = 0
        self.dropped = 0
        self.partition_counts: dict[str, int] = {}  # sink topics' partitions, set by the host
        self.partition_time: dict[tuple[str, int], int] = {}
        self._default_extractor = (config.get("default.timestamp.extractor")
                                   or FailOnInvalidTimestamp())
        for source in self.sources.values():  # a valid timestamp is the record's own
            source.plain_timestamps = (source.timestamp_extractor is None and type(
                self._default_extractor) is FailOnInvalidTimestamp)
        self._init_handlers(config)  # the three exception handlers (task_errors.py)
        self.dead_letter_topic = config.get("errors.dead.letter.queue.topic.name")
        self._group = PartitionGroup()
        self._stream_punctuations = PunctuationQueue()
        self._wall_punctuations = PunctuationQueue()
        self.partition = int(task_id.rsplit("_", 1)[-1])
        self.current_timestamp = -1
        self._batch_buffer = batch_buffer
        # The host's run and batch (Spark's query id and micro-batch id), stamped on changelog
        # records so a retried batch can restore the state it started from; None in the driver.
        self.batch: tuple[str, int] | None = None
        self._resume_schedules: dict[str, tuple[int, int]] = {}
        self._schedule_counts: dict[str, int] = {}
        self.stats = TaskStats(task_id, recording_level(
            _setting(config, "metrics.recording.level")))  # Kafka Streams' metrics
        self._dropped_counted = 0
        self._open_stores(store_builders or {}, restore)
        if self.stats.debug:  # Kafka Streams' state-store metrics (DEBUG and TRACE)
            self._meter_stores()
        self._init_processors()
        declare_metrics(self)

    def _open_stores(self, store_builders: Mapping[str, Any],
                     restore: Callable[["StreamTask"], Any] | None) -> None:
        """Build the task's stores and bring them up to date before any processor sees them
        (as Kafka Streams restores before it initializes processors)."""
        began = time.perf_counter_ns() if self.stats.debug else 0
        # the caching stores' shared byte budget (Kafka Streams' ThreadCache)
        self.record_cache = RecordCache(_setting(self.config, "statestore.cache.max.bytes"))
        self.stores = {name: self._build_store(b) for name, b in store_builders.items()}
        self._resume_processors: dict[str, dict[str, Any]] = {}
        try:
            self.restored = restore(self) if restore is not None else None
        except BaseException:  # a failed restore must not keep its stores (and locks) open
            for store in self.stores.values():
                with contextlib.suppress(Exception):
                    store.close()
            raise
        self._opened_ns = time.perf_counter_ns() - began if began else 0

    def _meter_stores(self) -> None:
        """Time the metered stores' calls (``state/metered.py``); each counts one
        restoration: the task's stores are opened and restored together, in
        ``_opened_ns``."""

        stats = self.stats
        trace = stats.level >= TRACE
        for name in metered_stores(self):
            store = self.stores[name]
            meter_store(store, stats, self.clock if trace else None,
                        (lambda: self.current_timestamp) if trace else None)
            meter_cache(store, stats)
            stats.record("store-restore", self._opened_ns, name)

    def _init_processors(self) -> None:
        """Initialize every node's processor, handing DSL processors their saved progress."""
        # Delayed processing (KIP-311): "now" for due times is the micro-batch's pinned clock
        # on Spark (a replayed batch fires the same records), the wall clock elsewhere.
        self.batch_clock_ms: int | None = None
        self.delayed_delivery = False  # true while a scheduled record is re-processed
        self._delayed_stores = [s for s in self.stores.values()
                                if isinstance(s, DelayedRecordsStore)]
        for node in self.nodes:
            node.init(self)
            saved = self._resume_processors.get(node.name)
            if saved and isinstance(node.processor, KeepsProgress):  # its stream-time
                node.processor.resume_progress(saved)  # bookkeeping (checked in resume())
        self._async = tuple(n for n in self.nodes if isinstance(n.processor, AsyncProcessor))
        self._async_processors = tuple(n.processor for n in self._async
                                       if isinstance(n.processor, AsyncProcessor))
        self._batch_count = plan_batch_count(self)

    def begin_interval(self, collector: RecordCollector, partition_counts: dict[str, int],
                       batch: tuple[str, int] | None, clock_ms: int | None) -> None:
        """What a host hands the task for one interval (a micro-batch, a commit interval):
        the ``collector`` its sinks write to, the sink topics' ``partition_counts``, the
        ``batch`` stamp of its changelog records, and the micro-batch's pinned clock
        (``clock_ms``; None: the wall clock) for delayed processing.

        >>> from kspark._engine.collector import MemoryCollector
        >>> t = StreamTask("0_0", {}, [], {}, MemoryCollector())
        >>> t.begin_interval(MemoryCollector(), {"out": 3}, ("q", 7), 1000)
        >>> t.partition_counts, t.batch, t.batch_clock_ms
        ({'out': 3}, ('q', 7), 1000)
        """
        self.collector = collector
        self.partition_counts = partition_counts
        self.batch = batch
        self.batch_clock_ms = clock_ms

    @property
    def async_nodes(self) -> tuple[ProcessorNode, ...]:
        """The nodes whose processor is an :class:`AsyncProcessor`, upstream first (a host
        completes their calls in flight before a commit, and reads their metrics)."""
        return self._async

    @property
    def _async_nodes(self) -> tuple[ProcessorNode, ...]:
        """Old name of :attr:`async_nodes`, kept until every host reads the new one."""
        return self._async

    def _build_store(self, builder: Any) -> Any:
        app_id = self.config["application.id"]
        topic = changelog_topic(app_id, builder.name)

        codec = codec_for(builder)  # Java's layout of the store's changelog records
        log = ChangelogWriter(self, topic, codec)

        directory = task_store_dir(self.config["state.dir"], app_id, self.task_id)
        if builder.supplier.persistent and builder.logging_enabled:
            save_codec(directory, builder.name, codec)
        # a worker of a run that just ended (a batch run stopped, then resumed) may still
        # hold the lock for a moment: wait for it a little before failing the task
        return build_store(builder, directory, log, self._batch_buffer, self.record_cache,
                           lock_wait_s=TASK_STORE_LOCK_WAIT_S,
                           durable_commits=self.durable_commits)

    def get_state_store(self, node: ProcessorNode, name: str) -> Any:
        """The store ``name``, if ``node``'s processor is connected to it; a global store
        (read-only) for any processor."""
        if name not in node.store_names and name in self.global_stores:
            return self.global_stores[name]
        if name not in node.store_names:
            raise TopologyError(
                f"processor {node.name!r} in task {self.task_id} has no access to state store "
                f"{name!r}; connect it (KStream.process(supplier, {name!r}) or "
                "Topology.connect_processor_and_state_stores)")
        return self.stores[name]

    def current_raw(self) -> RawRecord | None:
        """The input record being processed (None in a punctuation)."""
        return self._current

    @property
    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the input record being processed (None in punctuation)."""
        raw = self._current
        return None if raw is None else RecordMetadata(raw.topic, raw.partition, raw.offset)

    def add_records(self, records: Iterable[RawRecord]) -> None:
        """Buffer input records; :meth:`process_buffered` processes them in timestamp order."""
        self._group.add(records)

    def process_buffered(self) -> int:
        """Process every buffered record; returns how many were processed.

        Wall-clock punctuation is checked every 1,000 records on the way, as Kafka Streams
        checks it between polls, so a long batch does not hold it back.
        """
        raws = self._group.drain()
        if self._batch_count is not None:  # a count's batch path (aggregates/batch_count.py)
            raws = list(raws)
            if self._batch_count.run(self, raws):
                return len(raws)
        n = 0
        # the clock is read once per 1,000 records of a batch, as Java's stream thread
        # caches the time once per iteration of its loop
        self._poll_now = self.clock()
        try:
            for raw in raws:
                self.process(raw)
                n += 1
                if n % 1000 == 0:
                    self.stats.fold()  # the samplers' values, counted (metrics/stats.py)
                    self._poll_now = self.clock()
                    if self._wall_punctuations.schedules or self._delayed_stores:
                        self.maybe_punctuate_wall_clock()
        finally:
            self._poll_now = None
            self.stats.fold()
        return n

    def process(self, raw: RawRecord) -> None:
        """Process one input record through the topology."""
        source = self.sources.get(raw.topic)
        if source is None:
            raise TopologyError(f"task {self.task_id} has no source for topic {raw.topic!r}")
        self._current = raw
        try:
            record = source.deserialize(raw)
        except SerializationError as e:
            self.stats.record("bytes-consumed", 0, f"{source.name}|{raw.topic}")
            self._bad_record(raw, e)
            return
        tp = (raw.topic, raw.partition)
        before = self.partition_time.get(tp, -1)
        ts = raw.timestamp
        if ts < 0 or not source.plain_timestamps:  # the default extractor on a valid one: no call
            ts = self._extract(source, raw, record, before)
            if ts < 0:
                self._skip_invalid(raw, ts)
                return
            if ts != record.timestamp:
                record = record.with_timestamp(ts)
        stats = self.stats
        consumed = source.consumed.get(raw.topic) or source.consumed_of(raw.topic)
        consumed[0](record_size(raw.key, raw.value, raw.topic, raw.headers)
                    if raw.headers else consumed[1] + len(raw.key or b"") + len(raw.value or b""))
        # the clock is read once per batch (once per record outside one): sinks and terminal
        # nodes measure their end-to-end latency against the same time (``stats.now``)
        now = stats.now = self._poll_now if self._poll_now is not None else self.clock()
        source.e2e(now - ts)
        if stats.debug:
            stats.record("record-lateness", max(0, self.stream_time - ts))
        if ts > before:
            self.partition_time[tp] = ts
        if ts > self.stream_time:
            self.stream_time = ts
        self.current_timestamp = ts
        try:
            if stats.debug:
                began = time.perf_counter_ns()
                source.process(record)
                stats.record("process", time.perf_counter_ns() - began)
                stats.node(source.name)
            else:  # SourceNode.process, without its call
                for child in source.children:
                    child.process(record)
        finally:
            stats.now = None  # a punctuation's output reads the clock itself
        self.processed += 1
        self._current = None
        if self._stream_punctuations.schedules:
            self.maybe_punctuate_stream_time()

    def _skip_invalid(self, raw: RawRecord, ts: int) -> None:
        """Drop a record whose timestamp extractor returned ``ts`` < 0 (counted, logged)."""
        self.dropped += 1
        log.warning("task %s skips the record at topic %r, partition %d, offset %d: its "
                    "timestamp extractor returned %d", self.task_id, raw.topic,
                    raw.partition, raw.offset, ts)
        self._current = None

    def _extract(self, source: SourceNode, raw: RawRecord, record: Record,
                 partition_time: int) -> int:
        extractor = source.timestamp_extractor or self._default_extractor
        if raw.timestamp >= 0 and type(extractor) is FailOnInvalidTimestamp:
            return raw.timestamp  # the default extractor on a valid timestamp: no call needed
        if isinstance(extractor, type):
            extractor = extractor()
        view = ConsumerRecord(raw.topic, raw.partition, raw.offset, raw.timestamp, record.key,
                              record.value, raw.headers)
        if isinstance(extractor, TimestampExtractor):
            return int(extractor.extract(view, partition_time))
        return int(extractor(view, partition_time))

    def flush(self, complete_async: bool = True) -> None:
        """End of a batch (a commit): finish async calls in flight (their results go
        downstream first), write stores down, then flush the collector (raises if any write
        failed)."""
        for processor in self._async_processors if complete_async else ():  # upstream
            processor.complete_in_flight()  # first: what one forwards, the next one finishes
        for store in self.stores.values():
            store.flush()
        self.collector.flush()
        self.commit_requested = False
        self.stats.fold()  # what records processed one by one measured (the test driver's)

    def take_stats(self) -> dict[str, list]:
        """The task's metrics counts since the last call (``metrics/stats.py``), with the
        records it dropped and its cache's size; a host adds them to its commit's report."""
        dropped, self._dropped_counted = self.dropped - self._dropped_counted, self.dropped
        if dropped:
            self.stats.count("dropped-records", dropped)
        if self.stats.debug:
            self.stats.gauge("=cache-size", self.record_cache.size)
        return self.stats.take()

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        for store in self.stores.values():
            store.close()


def _setting(config: Any, name: str) -> Any:
    """``name`` from a task's config; its declared default when a partial config (a test's,
    a doctest's) leaves it out."""

    return config.get(name, default_of(name))
