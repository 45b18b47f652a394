"""StreamTask: runs one partition group's records through the topology's nodes."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kspark._engine.api import Record, RecordMetadata
from kspark._engine.async_.processor import AsyncProcessor
from kspark._engine.collector import RecordCollector
from kspark._engine.documents import Invalid, check_progress
from kspark._engine.nodes import ProcessorNode, RawRecord, SourceNode
from kspark._engine.partition_group import PartitionGroup
from kspark._engine.progress import KeepsProgress, progress_fields_of
from kspark._engine.punctuation import (
    Cancellable,
    PunctuationQueue,
    PunctuationSchedule,
    PunctuationType,
)
from kspark._engine.state.build import build_store, changelog_topic, task_store_dir
from kspark._engine.state.delayed import DelayedRecordsStore
from kspark._engine.state.layers import RecordCache
from kspark._engine.timestamps import ConsumerRecord, FailOnInvalidTimestamp, TimestampExtractor
from kspark.errors import CorruptStateError, KSparkError, SerializationError, TopologyError

__all__ = ["StreamTask", "BATCH_HEADER"]

BATCH_HEADER = "kspark.batch"  # on changelog records: "<run>:<batch>" that wrote them

log = logging.getLogger("kspark")


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class StreamTask:
    """One Kafka Streams task: a partition group and the nodes that process it.

    ``sources`` maps each input topic to its source node; ``nodes`` lists every node in
    topological order (parents before children).
    """

    def __init__(self, task_id: str, sources: Mapping[str, SourceNode],
                 nodes: Iterable[ProcessorNode], config: Mapping[str, Any],
                 collector: RecordCollector, clock: Callable[[], int] = _wall_clock_ms,
                 store_builders: Mapping[str, Any] | None = None, batch_buffer: bool = False,
                 restore: Callable[["StreamTask"], Any] | None = None,
                 global_stores: Mapping[str, Any] | None = None, async_runtime: Any = None):
        self.task_id = task_id
        self.async_runtime = async_runtime  # None: async steps use the shared thread runtime
        self.global_stores = dict(global_stores or {})  # read-only views (global_task.py)
        self.sources = dict(sources)
        self.nodes = list(nodes)
        self.config = config
        self.collector = collector
        self.clock = clock
        self.stream_time = -1
        self._current: RawRecord | None = None
        self.commit_requested = False
        self.processed = 0
        self.dropped = 0
        self.partition_counts: dict[str, int] = {}  # sink topics' partitions, set by the host
        self.partition_time: dict[tuple[str, int], int] = {}
        self._default_extractor = (config.get("default.timestamp.extractor")
                                   or FailOnInvalidTimestamp())
        self._on_bad_record = config.get("deserialization.exception.handler", "log_and_fail")
        self._on_write_error = config.get("production.exception.handler", "log_and_fail")
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
        # the caching stores' shared byte budget (Kafka Streams' ThreadCache)
        self.record_cache = RecordCache(config.get("statestore.cache.max.bytes", 10 << 20))
        self.stores = {name: self._build_store(b) for name, b in (store_builders or {}).items()}
        # Stores are brought up to date before any processor sees them (as Kafka Streams
        # restores before it initializes processors).
        self._resume_processors: dict[str, dict[str, Any]] = {}
        try:
            self.restored = restore(self) if restore is not None else None
        except BaseException:  # a failed restore must not keep its stores (and locks) open
            for store in self.stores.values():
                with contextlib.suppress(Exception):
                    store.close()
            raise
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

        stamp: list[Any] = [None, ()]  # the batch, and its header (made once per batch)

        def log(key: bytes, value: bytes | None) -> None:
            if stamp[0] != self.batch:
                stamp[:] = [self.batch, () if self.batch is None else (
                    (BATCH_HEADER, f"{self.batch[0]}:{self.batch[1]}".encode()),)]
            self.collector.send(topic, key, value, max(self.current_timestamp, 0), stamp[1],
                                self.partition)

        directory = task_store_dir(self.config["state.dir"], app_id, self.task_id)
        return build_store(builder, directory, log, self._batch_buffer, self.record_cache)

    def record_dropped(self, node: ProcessorNode, reason: str) -> None:
        self.dropped += 1
        log.warning("task %s, processor %s drops a record: %s", self.task_id, node.name, reason)

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

    @contextlib.contextmanager
    def processing(self, raw: RawRecord | None) -> Any:
        """Act as if ``raw`` were the input record being processed (an async step's result,
        a delayed record), so dead letters and errors name it."""
        current, self._current = self._current, raw
        try:
            yield
        finally:
            self._current = current

    def now_ms(self) -> int:
        """The time delayed records are due against: the micro-batch's pinned clock on
        Spark, else the (mockable) wall clock."""
        return self.batch_clock_ms if self.batch_clock_ms is not None else self.clock()

    def schedule_record(self, node: ProcessorNode, record: Record, delay_ms: int) -> None:
        """Process ``record`` again with ``node``'s processor ``delay_ms`` from now (wall
        clock), kept in a delayed-records store connected to ``node`` (KIP-311)."""
        stores = [self.stores[n] for n in sorted(node.store_names)
                  if isinstance(self.stores.get(n), DelayedRecordsStore)]
        if not stores:
            raise TopologyError(
                f"processor {node.name!r} in task {self.task_id} called schedule_record() but "
                "has no delayed-records store: add one with Stores.delayed_records_store_builder("
                "...) and connect it to the processor (or use KStream.delay())")
        if delay_ms < 0:
            raise TopologyError(f"processor {node.name!r} in task {self.task_id} scheduled a "
                                f"record {delay_ms} ms ahead; the delay must be >= 0")
        raw = self._current
        origin = None if raw is None else (raw.topic, raw.partition, raw.offset)
        stores[0].schedule(record, self.now_ms() + delay_ms, node.name, origin)

    def fire_delayed(self) -> int:
        """Re-process the scheduled records that are due, in due order; how many fired."""
        fired = 0
        now = self.now_ms()
        for store in self._delayed_stores:
            for due in store.take_due(now):
                node = self._node_named(due.node)
                raw = RawRecord(*(due.origin or ("", -1, -1)), due.record.timestamp,
                                due.key_bytes, due.value_bytes, due.record.headers)
                self.current_timestamp = due.record.timestamp
                with self.processing(raw if due.origin else None):
                    self.delayed_delivery = True
                    try:
                        node.process(due.record)
                    finally:
                        self.delayed_delivery = False
                fired += 1
        return fired

    def _node_named(self, name: str) -> ProcessorNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise TopologyError(f"task {self.task_id}: a delayed record is due for processor "
                            f"{name!r}, which the topology no longer has")

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
        n = 0
        for raw in self._group.drain():
            self.process(raw)
            n += 1
            if n % 1000 == 0 and (self._wall_punctuations.schedules or self._delayed_stores):
                self.maybe_punctuate_wall_clock()
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
            self._bad_record(raw, e)
            return
        tp = (raw.topic, raw.partition)
        before = self.partition_time.get(tp, -1)
        ts = raw.timestamp
        if ts < 0 or source.timestamp_extractor is not None or \
                type(self._default_extractor) is not FailOnInvalidTimestamp:
            ts = self._extract(source, raw, record, before)  # the default on a valid one: no call
        if ts < 0:
            self.dropped += 1
            log.warning("task %s skips the record at topic %r, partition %d, offset %d: its "
                        "timestamp extractor returned %d", self.task_id, raw.topic,
                        raw.partition, raw.offset, ts)
            self._current = None
            return
        if ts != record.timestamp:
            record = record.with_timestamp(ts)
        if ts > before:
            self.partition_time[tp] = ts
        if ts > self.stream_time:
            self.stream_time = ts
        self.current_timestamp = ts
        source.process(record)
        self.processed += 1
        self._current = None
        if self._stream_punctuations.schedules:
            self.maybe_punctuate_stream_time()

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

    def _bad_record(self, raw: RawRecord, error: SerializationError) -> None:
        """A record that cannot be deserialized: dead-letter it if configured, then continue
        or fail."""
        self.dead_letter(raw, error)
        self._current = None
        if self._on_bad_record != "log_and_continue":
            raise error
        self.dropped += 1
        log.warning("task %s skips an undeserializable record (%s)", self.task_id, error)

    def write_failed(self, sink: str, error: KSparkError) -> None:
        """Sink ``sink`` could not serialize or hand over a record (production.exception.handler):
        dead-letter the input record being processed if configured, then continue or fail."""
        self.dead_letter(self._current, error)
        if self._on_write_error != "log_and_continue":
            raise error
        self.dropped += 1
        log.warning("task %s, sink %r: skips a record it cannot write (%s)", self.task_id, sink,
                    error)

    def dead_letter(self, raw: RawRecord | None, error: BaseException,
                     extra_headers: tuple = ()) -> None:
        """KIP-1034: the input record, unchanged, with headers naming the error and its origin
        (no input record, as in a punctuation: only the headers)."""
        if not self.dead_letter_topic:
            return
        headers = (tuple(raw.headers) if raw else ()) + (
            ("__streams.errors.exception", type(error).__name__.encode()),
            ("__streams.errors.message", str(error).encode()),
        ) + ((("__streams.errors.topic", raw.topic.encode()),
              ("__streams.errors.partition", str(raw.partition).encode()),
              ("__streams.errors.offset", str(raw.offset).encode())) if raw else ()) + extra_headers
        self.collector.send(self.dead_letter_topic, raw.key if raw else None,
                            raw.value if raw else None,
                            raw.timestamp if raw else max(self.stream_time, 0), headers, None)

    def schedule(self, node: ProcessorNode, interval_ms: int, kind: PunctuationType,
                 callback: Callable[[int], None]) -> Cancellable:
        """Schedule ``callback`` for ``node``; stream time starts at 0, wall clock at now +
        interval."""
        if interval_ms < 1:
            raise TopologyError(f"processor {node.name!r} in task {self.task_id} scheduled a "
                                f"punctuation every {interval_ms} ms; the interval must be >= 1")
        if kind == PunctuationType.STREAM_TIME:
            n = self._schedule_counts.get(node.name, 0)
            self._schedule_counts[node.name] = n + 1
            key = f"{node.name}#{n}"
            saved_interval, saved_next = self._resume_schedules.get(key, (interval_ms, 0))
            first = saved_next if saved_interval == interval_ms else 0
            return self._stream_punctuations.add(
                PunctuationSchedule(node, interval_ms, callback, first, key=key))
        first = self.clock() + interval_ms
        return self._wall_punctuations.add(PunctuationSchedule(node, interval_ms, callback, first))

    def progress(self) -> dict[str, Any]:
        """What a restarted task needs to go on where this one is: stream time, partition
        times, when each stream-time punctuation is next due, the stream time each window and
        session store has observed (its retention), and the stream-time fields of DSL
        processors that keep progress (:class:`KeepsProgress`; JSON-ready).

        Kafka Streams keeps partition time in the committed offsets' metadata; a host saves
        this at each commit and hands it to :meth:`resume` of the task's next incarnation.
        """
        processors = {}
        for node in self.nodes:
            keeper = node.processor
            if isinstance(keeper, KeepsProgress) and keeper.progress_fields:
                processors[node.name] = keeper.save_progress()
        stores = {name: s.observed for name, s in self.stores.items() if hasattr(s, "observed")}
        return {"stream_time": self.stream_time, "stores": stores,
                "partition_time": [[t, p, ts]
                                   for (t, p), ts in sorted(self.partition_time.items())],
                "punctuations": {s.key: [s.interval_ms, s.next_ms]
                                 for s in self._stream_punctuations.schedules if not s.cancelled},
                "processors": processors}

    def resume(self, progress: Mapping[str, Any], source: str = "the saved progress") -> None:
        """Take over a predecessor's :meth:`progress`; call before processors are initialized.

        A stream-time punctuation that a processor schedules again (same node, same order,
        same interval) keeps its due time instead of firing at the next record. The progress
        is read back from Kafka or disk (``source`` says where): a malformed one, or one
        naming a processor field the processor does not declare, is a CorruptStateError.
        """
        fields = {n.name: progress_fields_of(n.processor) for n in self.nodes}
        try:
            progress = check_progress(progress, fields)
        except Invalid as e:
            raise CorruptStateError(
                f"task {self.task_id}: {source} is malformed: {e}. It was damaged, or written "
                f"by another topology or by something other than kspark: reset the "
                f"application (kspark reset) so that it starts afresh") from None
        self.stream_time = progress.get("stream_time", -1)
        self.partition_time = {(t, p): ts for t, p, ts in progress.get("partition_time", [])}
        self._resume_schedules = {k: (i, n)
                                  for k, (i, n) in progress.get("punctuations", {}).items()}
        self._resume_processors = {name: saved for name, saved
                                   in progress.get("processors", {}).items() if fields.get(name)}
        for name, observed in progress.get("stores", {}).items():
            if name in self.stores:  # a window or session store's stream time, for retention
                self.stores[name].resume_observed(int(observed))

    def maybe_punctuate_stream_time(self) -> int:
        """Fire the stream-time punctuations that are due; returns how many fired."""
        if self.stream_time < 0 or not self._stream_punctuations.schedules:
            return 0
        return self._fire(self._stream_punctuations.due(self.stream_time), self.stream_time)

    def maybe_punctuate_wall_clock(self) -> int:
        """Fire the wall-clock punctuations that are due, then the delayed records that are
        due; returns how many punctuations fired."""
        now = self.clock()
        fired = self._fire(self._wall_punctuations.due(now), now)
        if self._delayed_stores:
            self.fire_delayed()
        return fired

    def _fire(self, schedules: list[PunctuationSchedule], now: int) -> int:
        for s in schedules:
            self.current_timestamp = now
            s.callback(now)
        return len(schedules)

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

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        for store in self.stores.values():
            store.close()
