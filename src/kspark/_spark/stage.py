"""A fused Python stage: one Spark partition runs one Kafka Streams task of one sub-topology.

Records for user topics go out through the task's own producer. Records for topics that
another sub-topology of the same query reads (repartition and ``through()`` topics) come
out of the stage as rows, each with the partition the engine computed with Kafka's
partitioner, and reach their task through a Spark shuffle.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
from pyspark import TaskContext

from kspark._engine.collector import RecordCollector
from kspark._engine.nodes import RawRecord
from kspark._engine.partitioner import default_partition
from kspark._graph.graph import TopologyGraph
from kspark._graph.instantiate import build_task
from kspark._engine.state.build import bottom, discard_buffered
from kspark._kafka.clients import commit_offsets, read_range, task_producer
from kspark._kafka.settings import as_settings
from kspark._kafka.transactions import (Marker, encode_marker, progress_topic, read_marker,
                                        task_transactions)
from kspark._spark.documents import check_task_marker
from kspark._engine.async_ops import async_metrics
from kspark._spark.globals import global_state, pins_from_offset_log
from kspark._spark.source import ARROW_SCHEMA, MARKER_TOPIC
from kspark.config import EXACTLY_ONCE_V2
from kspark.errors import KSparkError, StreamsError, TaskFencedError
from kspark._spark.state import (
    LOCAL_PROGRESS,
    admin_for,
    checkpoint_task,
    invalidate_checkpoint,
    logged_partitions,
    restore_task,
)

__all__ = ["StagePlan", "make_stage", "FED_ARROW_SCHEMA", "FED_SCHEMA"]

FED_ARROW_SCHEMA = ARROW_SCHEMA.append(pa.field("src_task", pa.int32())).append(
    pa.field("shuffle_key", pa.int32()))
FED_SCHEMA = ("topic string, partition int, offset long, timestamp long, key binary, "
              "value binary, headers array<struct<key:string,value:binary>>, "
              "src_task int, shuffle_key int")

log = logging.getLogger("kspark")

# Tasks live on in their Python worker between micro-batches, so stream time and
# punctuation schedules carry over while Spark keeps a task on the same worker.
# Reached only through _take_task/_keep_task: stage functions travel to workers pickled by
# value with the globals they name, and this dict must stay behind (it holds live clients).
_TASKS: dict[tuple[str, str], Any] = {}


def _take_task(key: tuple[str, str]) -> Any:
    """The task this worker kept after the task's previous batch, if any (removed)."""
    return _TASKS.pop(key, None)


def _keep_task(key: tuple[str, str], task: Any) -> None:
    _TASKS[key] = task


@dataclass(frozen=True)
class StagePlan:
    """What one sub-topology's tasks need to know: its nodes and where its fed topics go.

    ``fed``: resolved topic name -> (partitions, also written to Kafka?). ``routes``: fed
    topic -> (size of the exchange its reader's group reads through, the reader's first
    partition in it). ``shuffle_keys``: per exchange size, the int whose Spark hash lands in
    each partition.
    """

    stage: int
    nodes: tuple[str, ...]
    fed: dict[str, tuple[int, bool]]
    routes: dict[str, tuple[int, int]]
    shuffle_keys: dict[int, list[int]]
    partition_counts: dict[str, int]
    streaming: bool = False  # one input topic, nothing shuffled in: process batch by batch
    first_marker: int = 0  # the partition of the progress topic holding task 0's marker


class _RoutingCollector(RecordCollector):
    """Sends user-topic records to Kafka; keeps fed-topic records as rows for the shuffle."""

    def __init__(self, producer: RecordCollector, plan: StagePlan, task_partition: int,
                 pins: dict | None = None, clock: int | None = None):
        self.producer = producer
        self.plan = plan
        self.task_partition = task_partition
        # the global topics' pinned offsets and the pinned clock, passed on in the markers
        # of downstream tasks
        extras = {k: v for k, v in (("globals", pins), ("clock", clock)) if v is not None}
        self.marker_value = json.dumps({"ranges": [], **extras}).encode() if extras else None
        self.rows: list[tuple] = []
        self.sent = 0  # records sent to user topics

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        fed = self.plan.fed.get(topic)
        if fed is None:
            self.producer.send(topic, key, value, timestamp, headers, partition)
            self.sent += 1
            return
        n, to_kafka = fed
        target = partition if partition is not None else default_partition(
            key, n, self.task_partition)
        if to_kafka:
            self.producer.send(topic, key, value, timestamp, headers, target)
            self.sent += 1
        self.rows.append((topic, target, len(self.rows), timestamp, key, value, headers))

    def flush(self) -> None:
        self.producer.flush()

    def take_batch(self) -> pa.RecordBatch:
        """The rows for the shuffle: a task marker for every task of the readers (so each
        of them runs and knows its number), then the records."""
        rows, self.rows = self.rows, []
        cols: dict[str, list] = {n: [] for n in FED_ARROW_SCHEMA.names}
        keys = self.plan.shuffle_keys
        readers = {(size, first + j) for topic, (n, _) in self.plan.fed.items()
                   for size, first in [self.plan.routes[topic]] for j in range(n)}
        for size, pos in sorted(readers):
            for name, v in zip(FED_ARROW_SCHEMA.names, (MARKER_TOPIC, pos, -1, -1, None,
                                                        self.marker_value, [],
                                                        self.task_partition, keys[size][pos])):
                cols[name].append(v)
        for topic, target, seq, ts, key, value, headers in rows:
            for name, v in zip(("topic", "partition", "offset", "timestamp", "key", "value"),
                               (topic, target, seq, ts, key, value)):
                cols[name].append(v)
            cols["headers"].append([{"key": k, "value": hv} for k, hv in headers])
            cols["src_task"].append(self.task_partition)
            size, first = self.plan.routes[topic]
            cols["shuffle_key"].append(keys[size][first + target])
        return pa.RecordBatch.from_pydict(cols, schema=FED_ARROW_SCHEMA)


def _markers(batch: pa.RecordBatch) -> list[Any]:
    """The decoded values of the task markers in ``batch`` (a list of ranges, or a dict
    ``{"ranges": ..., "globals": ...}``; see ``source.task_marker``)."""
    found = batch.filter(pa.compute.equal(batch.column(0), MARKER_TOPIC)).column(5).to_pylist()
    return [check_task_marker(v) for v in found if v is not None]


def _ranges_of(batch: pa.RecordBatch) -> list[tuple[str, int, int, int]]:
    """The Kafka offset ranges that the task markers in ``batch`` hand the task."""
    return [tuple(r) for m in _markers(batch) for r in (m["ranges"] if isinstance(m, dict) else m)]


def _with_pins(batches: Iterator[pa.RecordBatch], streaming: bool
               ) -> tuple[Iterator[pa.RecordBatch], dict | None, int | None]:
    """The global topics' offsets and the clock the micro-batch pinned, from the task's
    markers (the first batch holds the source's marker of a streaming task; others read all
    their rows anyway). Markers of several upstream tasks may carry several clocks (one per
    source): the latest counts, which a replay finds again."""
    held = [next(batches, None)] if streaming else list(batches)
    held = [b for b in held if b is not None]
    pins, clock = None, None
    for b in held:
        for m in _markers(b):
            if isinstance(m, dict):
                if pins is None and m.get("globals") is not None:
                    pins = m["globals"]
                if m.get("clock") is not None:
                    clock = max(clock or 0, int(m["clock"]))
    return itertools.chain(held, batches), pins, clock


def _raw_records(batch: pa.RecordBatch) -> list[tuple[tuple, RawRecord]]:
    """The shuffled records of ``batch`` (task markers left out), each with its order key:
    (upstream task, its write sequence); see _in_writer_order."""
    keep = pa.compute.not_equal(batch.column(0), MARKER_TOPIC)
    if pa.compute.all(keep).as_py() is False:
        batch = batch.filter(keep)
    n = batch.num_rows
    if not n:
        return []
    col = batch.column
    topic, part, off, ts = (col(i).to_pylist() for i in range(4))
    key, value = col(4).to_pylist(), col(5).to_pylist()
    hcol = col(6)
    has_headers = pa.compute.sum(pa.compute.list_value_length(hcol)).as_py()
    headers = ([tuple((h["key"], h["value"]) for h in hs) if hs else () for hs in hcol.to_pylist()]
               if has_headers else [()] * n)
    return [((u, o, 1), RawRecord(t, p, o, s, k, v, h))
            for t, p, o, s, k, v, h, u in zip(topic, part, off, ts, key, value, headers,
                                              col(7).to_pylist())]


def _in_writer_order(records: list[tuple[tuple, RawRecord]]) -> list[RawRecord]:
    """A micro-batch's rows in an order their topics could have held them. Rows read from
    Kafka keep their order. Shuffled rows of one (topic, partition) keep each upstream
    task's write order, as a repartition topic keeps each writer's; the upstream tasks are
    merged by lowest head timestamp, ties to the lower task, so a replay sees the same
    order. (Sorting by timestamp instead would hide records that are late.)"""
    out, writers = [], {}
    for order, rec in records:
        if order[-1]:
            writers.setdefault((rec.topic, rec.partition, order[0]), []).append((order[1], rec))
        else:
            out.append(rec)
    queues: dict[tuple[str, int], list] = {}
    for (topic, partition, upstream), rows in sorted(writers.items()):
        rows.sort(key=lambda r: r[0])
        queues.setdefault((topic, partition), []).append((upstream, [r for _, r in rows]))
    for streams in queues.values():
        heap = [(rows[0].timestamp, upstream, 0, rows) for upstream, rows in streams]
        heapq.heapify(heap)
        while heap:
            _, upstream, i, rows = heapq.heappop(heap)
            out.append(rows[i])
            if i + 1 < len(rows):
                heapq.heappush(heap, (rows[i + 1].timestamp, upstream, i + 1, rows))
    return out


def _instance_of(task: Any) -> str:
    """An id of this task object, kept in its at-least-once markers: a worker reuses its
    cached task only if that task made the last commit (as a producer's under exactly-once)."""
    if not hasattr(task, "instance_id"):
        task.instance_id = uuid.uuid4().hex
    return task.instance_id


def _reusable(task: Any, builders: dict[str, Any], marker: Marker | None) -> Any:
    """A task cached in this worker, if its in-memory stores are still at their changelogs'
    end (and, under exactly-once, it made the task's last commit)."""
    if task is None:
        return None
    mine = getattr(task, "marker", None)
    if marker is not None and (mine is None or (mine.query, mine.batch, mine.producer) !=
                               (marker.query, marker.batch, marker.producer)):
        task.close()  # another worker committed this task since
        return None
    parts = logged_partitions(task, builders)
    if parts and admin_for(task.config).end_offsets(parts.values()) != task.changelog_offsets:
        task.close()  # another worker ran this task since: rebuild and restore
        return None
    return task


def make_stage(graph: TopologyGraph, config: dict[str, Any],
               members: list[tuple[int, int, StagePlan]], exchange: list[int] | None = None,
               counters: tuple[Any, Any] | None = None
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a stage: each Spark partition runs one task of one of
    its sub-topologies and writes with the task's producer.

    ``members``: (first partition, task count, plan) per sub-topology. Which task a Spark
    partition runs comes from its rows, which start with a task marker (see
    ``source.MARKER_TOPIC``): read straight from Kafka, the marker's ``partition``; through
    an exchange, the position of the rows' ``shuffle_key`` in ``exchange`` (the exchange's
    shuffle keys). A partition without rows runs no task: its source had nothing new.
    ``counters``: Spark accumulators, to which every task batch that commits adds the
    records it read from Kafka, the records it wrote to user topics and its async
    processors' metrics.
    """
    runners = [(first, count, plan.stage, _task_runner(graph, config, plan, counters))
               for first, count, plan in members]
    position = None if exchange is None else {k: p for p, k in enumerate(exchange)}

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        head = next((b for b in batches if b.num_rows), None)
        if head is None:
            return
        batches = itertools.chain([head], batches)
        if position is None:
            q = head.column(1)[0].as_py()
        else:
            q = position[head.column(head.schema.get_field_index("shuffle_key"))[0].as_py()]
        context = TaskContext.get()
        query = context.getLocalProperty("sql.streaming.queryId")
        number = context.getLocalProperty("streaming.sql.batchId")
        batch = None if query is None or number is None else (query, int(number))
        for first, count, stage, runner in runners:
            if first <= q < first + count:
                try:
                    yield from runner(q - first, batches, batch, context)
                except KSparkError:
                    raise
                except Exception as e:  # a client or library error: name the task and cause
                    raise StreamsError(
                        f"task {stage}_{q - first} failed in micro-batch "
                        f"{None if batch is None else batch[1]}: {type(e).__module__}."
                        f"{type(e).__qualname__}: {e}") from e
                return
        raise RuntimeError(f"stage partition {q} belongs to no sub-topology: {members}")

    return run


def _task_runner(graph: TopologyGraph, config: dict[str, Any], plan: StagePlan,
                 counters: tuple[Any, Any] | None = None) -> Callable[[int, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    settings = as_settings(config)  # every client's settings (security included)
    app_id = config["application.id"]
    eos = config["processing.guarantee"] == EXACTLY_ONCE_V2
    builders = {name: b for name, (b, _) in graph.stores.items()}
    # Under exactly-once a refused delivery aborts the transaction: it always fails the task.
    skip_failed = config.get("production.exception.handler") == "log_and_continue"

    read_timeout_ms = int(config["source.read.timeout.ms"])
    delays = bool(graph.delayed_stores())
    checkpoint = config["checkpoint.location"] or os.path.join(
        config["state.dir"], app_id, "checkpoint")

    def read(ranges: list[tuple[str, int, int, int]], ends: dict[tuple[str, int], int]
             ) -> Iterator[list[RawRecord]]:
        """The records of ``ranges`` from Kafka (read_committed), a few thousand at a time;
        notes where each range ends in ``ends``."""
        for topic, p, start, end in ranges:
            for msgs in read_range(settings, topic, p, start, end, read_timeout_ms):
                yield [RawRecord(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(),
                                 m.value(), tuple(m.headers() or ())) for m in msgs]
            ends[(topic, p)] = max(ends.get((topic, p), 0), end)

    def run(partition: int, batches: Iterator[pa.RecordBatch], batch: tuple[str, int] | None,
            context: Any = None) -> Iterator[pa.RecordBatch]:
        """Run task ``partition`` over one micro-batch ``batch`` (query id, batch id)."""
        task_id = f"{plan.stage}_{partition}"
        key = (app_id, task_id)
        pins, global_stores, clock = None, None, None
        if graph.global_stores or delays:
            batches, pins, clock = _with_pins(batches, plan.streaming)
            if delays and clock is None:
                raise StreamsError(f"task {task_id} got no pinned clock with micro-batch {batch}: "
                                   "its markers carry none (a kspark bug)")
        if graph.global_stores:
            if pins is None and batch is not None:  # a source that does not pin them
                pins = pins_from_offset_log(checkpoint, batch[1], graph.global_topics())
            if pins is None:
                raise StreamsError(f"task {task_id} got no global store offsets with micro-batch "
                                   f"{batch}: its markers carry none (a kspark bug)")
            global_stores = global_state(graph, config, pins).read_only()
        tx, replay = None, False
        marker_tp = (progress_topic(app_id), plan.first_marker + partition)
        if eos:
            tx, marker = task_transactions(settings, app_id, task_id, marker_tp, batch)
            replay = tx is None
            producer: RecordCollector = _DISCARD if replay else tx.producer
        else:  # the progress is in Kafka under both guarantees: never a stale local copy
            marker = read_marker(settings, app_id, task_id, marker_tp)
            producer = task_producer(settings, f"{app_id}-{task_id}-producer",
                                     skip_failed=skip_failed)
        again = marker is not None and marker.covers(batch)  # Spark runs a committed batch
        saved = None if marker is None else marker.previous if again else marker.progress
        if again:  # a cached task's stores hold the batch already: rebuild from changelogs
            cached = _take_task(key)
            if cached is not None:
                cached.close()
        if replay:
            # Committed already: write nothing, but feed downstream tasks exactly what the
            # committed attempt fed them, recomputed from the state the batch started from.
            log.warning("task %s: batch %s is already committed; replaying it without writing",
                        task_id, batch)
            if not plan.fed:
                yield _RoutingCollector(producer, plan, partition, pins, clock).take_batch()
                return
        collector = _RoutingCollector(producer, plan, partition, pins, clock)
        task = None if again else _reusable(_take_task(key), builders, marker)
        if task is None:
            task = build_task(graph, task_id, config, collector, only=plan.nodes, batch_buffer=True,
                              restore=lambda t: restore_task(t, builders, batch, saved, again),
                              global_stores=global_stores)
            task.changelog_offsets = task.restored
        task.collector = collector
        task.partition_counts = plan.partition_counts
        task.batch = batch
        task.batch_clock_ms = clock
        inputs: dict[tuple[str, int], int] = {}  # the offsets to commit, per input partition
        read_count = 0
        try:
            if plan.streaming:  # one partition per task: offset order is processing order
                for b in batches:
                    for part in read(_ranges_of(b), inputs):
                        read_count += len(part)
                        task.add_records(part)
                        task.process_buffered()
            else:
                records, ranges = [], []
                for b in batches:
                    ranges += _ranges_of(b)
                    records.extend(_raw_records(b))
                for part in read(ranges, inputs):
                    read_count += len(part)
                    records.extend(((r.offset, 0), r) for r in part)
                task.add_records(_in_writer_order(records))
                task.process_buffered()
            task.maybe_punctuate_wall_clock()
            if replay:
                raise _Replayed()
            if task.stores:
                invalidate_checkpoint(task)
            task.flush()
            if tx is not None:
                q, n = batch if batch is not None else ("", -1)
                task.marker = Marker(q, n, task.progress(), None if marker is None else
                                     marker.progress, tx.instance)
                tx.commit(task.marker, inputs)
            task.changelog_offsets = checkpoint_task(task, builders)
            if tx is None:  # at-least-once: the group learns the input offsets after the output
                q, n = batch if batch is not None else ("", -1)
                task.marker = Marker(q, n, task.progress(), None if marker is None else
                                     marker.progress, _instance_of(task))
                commit_offsets(settings, app_id, inputs, (marker_tp, encode_marker(task.marker)))
            if counters is not None:  # Spark keeps a task's additions only if it succeeds
                counters[0].add(read_count)
                counters[1].add(collector.sent)
                if task._async_nodes:
                    counters[2].add(async_metrics(task, take=True))
                restored = getattr(task, "restored_records", 0)
                if restored:  # a task that restored records here (it moved, or was rebuilt)
                    counters[3].add(restored)
                    counters[4].add(1)
                    task.restored_records = 0
            _inject_fault(context, task_id, batch)
        except BaseException as e:
            for store in task.stores.values():
                discard_buffered(store)
            task.close()  # a failed batch is replayed from a fresh task, restored from changelogs
            if isinstance(e, _Replayed):
                yield collector.take_batch()
                return
            if tx is not None:
                cause = tx.fail(e)
                if isinstance(cause, TaskFencedError):
                    log.warning("%s", cause)
                if cause is not e:
                    raise cause from None
            raise
        if any(bottom(s).persistent for s in task.stores.values()):
            task.close()  # RocksDB is reopened by whichever worker runs the task next
        else:
            _keep_task(key, task)
        yield collector.take_batch()

    return run


# Tests only: a Spark local property "<task id>:<batch id>" makes the first attempt of that
# task fail right after it committed that batch (as if its executor died before Spark heard).
FAULT_PROPERTY = "kspark.test.fail_after_commit"


def _inject_fault(context: Any, task_id: str, batch: tuple[str, int] | None) -> None:
    spec = context.getLocalProperty(FAULT_PROPERTY) if context is not None else None
    if (spec and batch is not None and f"{task_id}:{batch[1]}" in spec.split(",")
            and context.attemptNumber() == 0):
        raise RuntimeError(f"injected failure: task {task_id} after committing batch {batch[1]}")


class _Replayed(Exception):
    """A replayed batch has computed its rows; its stores' changes are thrown away."""


class _Discard(RecordCollector):
    """Where a replayed batch's Kafka writes go: they were committed by an earlier attempt."""

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        pass


_DISCARD = _Discard()
