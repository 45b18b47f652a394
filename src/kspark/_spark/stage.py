"""A fused Python stage: one Spark partition runs one Kafka Streams task of one sub-topology.

Records for user topics go out through the task's own producer. Records for topics that
another sub-topology of the same query reads (repartition and ``through()`` topics) come
out of the stage as rows, each with the partition the engine computed with Kafka's
partitioner, and reach their task through a Spark shuffle.
"""

from __future__ import annotations

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
from kspark._kafka.clients import task_producer
from kspark._spark.source import ARROW_SCHEMA
from kspark._spark.state import (
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

# Tasks live on in their Python worker between micro-batches, so stream time and
# punctuation schedules carry over while Spark keeps a task on the same worker.
_TASKS: dict[tuple[str, str], Any] = {}


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


class _RoutingCollector(RecordCollector):
    """Sends user-topic records to Kafka; keeps fed-topic records as rows for the shuffle."""

    def __init__(self, producer: RecordCollector, plan: StagePlan, task_partition: int):
        self.producer = producer
        self.plan = plan
        self.task_partition = task_partition
        self.rows: list[tuple] = []

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        fed = self.plan.fed.get(topic)
        if fed is None:
            self.producer.send(topic, key, value, timestamp, headers, partition)
            return
        n, to_kafka = fed
        target = partition if partition is not None else default_partition(
            key, n, self.task_partition)
        if to_kafka:
            self.producer.send(topic, key, value, timestamp, headers, target)
        self.rows.append((topic, target, len(self.rows), timestamp, key, value, headers))

    def flush(self) -> None:
        self.producer.flush()

    def take_batch(self) -> pa.RecordBatch:
        rows, self.rows = self.rows, []
        cols: dict[str, list] = {n: [] for n in FED_ARROW_SCHEMA.names}
        for topic, target, seq, ts, key, value, headers in rows:
            for name, v in zip(("topic", "partition", "offset", "timestamp", "key", "value"),
                               (topic, target, seq, ts, key, value)):
                cols[name].append(v)
            cols["headers"].append([{"key": k, "value": hv} for k, hv in headers])
            cols["src_task"].append(self.task_partition)
            size, first = self.plan.routes[topic]
            cols["shuffle_key"].append(self.plan.shuffle_keys[size][first + target])
        return pa.RecordBatch.from_pydict(cols, schema=FED_ARROW_SCHEMA)


def _raw_records(batch: pa.RecordBatch) -> list[tuple[tuple, RawRecord]]:
    n = batch.num_rows
    col = batch.column
    topic, part, off, ts = (col(i).to_pylist() for i in range(4))
    key, value = col(4).to_pylist(), col(5).to_pylist()
    hcol = col(6)
    has_headers = n and pa.compute.sum(pa.compute.list_value_length(hcol)).as_py()
    headers = ([tuple((h["key"], h["value"]) for h in hs) if hs else () for hs in hcol.to_pylist()]
               if has_headers else [()] * n)
    src = col(7).to_pylist() if batch.num_columns > 7 else None
    if src is None:  # straight from Kafka: offset order within each partition
        return [((0, o, 0, 0), RawRecord(t, p, o, s, k, v, h))
                for t, p, o, s, k, v, h in zip(topic, part, off, ts, key, value, headers)]
    # Shuffled rows are ordered by (timestamp, upstream task, sequence): a replay sees the same order.
    return [((s, u, o, 1), RawRecord(t, p, o, s, k, v, h))
            for t, p, o, s, k, v, h, u in zip(topic, part, off, ts, key, value, headers, src)]


def _reusable(task: Any, builders: dict[str, Any]) -> Any:
    """A task cached in this worker, if its in-memory stores are still at their changelogs' end."""
    if task is None:
        return None
    parts = logged_partitions(task, builders)
    if parts and admin_for(task.config).end_offsets(parts.values()) != task.changelog_offsets:
        task.close()  # another worker ran this task since: rebuild and restore
        return None
    return task


def make_stage(graph: TopologyGraph, config: dict[str, Any],
               members: list[tuple[int, int, StagePlan]], union_offset: int = 0
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a stage: each Spark partition runs one task of one of
    its sub-topologies and writes with the task's producer.

    ``members``: (first partition, task count, plan) per sub-topology; ``union_offset``:
    Spark's partition id of the stage's partition 0 (the stage runs inside the union its
    output joins, which numbers its partitions after the union's earlier inputs).
    """
    runners = [(first, count, _task_runner(graph, config, plan)) for first, count, plan in members]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        q = TaskContext.get().partitionId() - union_offset
        for first, count, runner in runners:
            if first <= q < first + count:
                return runner(q - first, batches)
        raise RuntimeError(f"stage partition {q} belongs to no sub-topology: {members}")

    return run


def _task_runner(graph: TopologyGraph, config: dict[str, Any], plan: StagePlan
                 ) -> Callable[[int, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    bootstrap = config["bootstrap.servers"]
    app_id = config["application.id"]
    producer_conf = {k[len("producer."):]: v for k, v in config.items() if k.startswith("producer.")}
    builders = {name: b for name, (b, _) in graph.stores.items()}

    def run(partition: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_id = f"{plan.stage}_{partition}"
        context = TaskContext.get()
        query = context.getLocalProperty("sql.streaming.queryId")
        number = context.getLocalProperty("streaming.sql.batchId")
        batch = None if query is None or number is None else (query, int(number))
        producer = task_producer(bootstrap, f"{app_id}-{task_id}-producer", producer_conf)
        collector = _RoutingCollector(producer, plan, partition)
        key = (app_id, task_id)
        task = _reusable(_TASKS.pop(key, None), builders)
        if task is None:
            task = build_task(graph, task_id, config, collector, only=plan.nodes, batch_buffer=True,
                              restore=lambda t: restore_task(t, builders, batch))
            task.changelog_offsets = task.restored
        task.collector = collector
        task.partition_counts = plan.partition_counts
        task.batch = batch
        try:
            if plan.streaming:  # one partition per task: offset order is processing order
                for b in batches:
                    task.add_records(r for _, r in _raw_records(b))
                    task.process_buffered()
            else:
                records = [r for b in batches for r in _raw_records(b)]
                if any(order[3] for order, _ in records):  # shuffled rows: replayable order
                    records.sort(key=lambda r: r[0])
                task.add_records(r for _, r in records)
                task.process_buffered()
            task.maybe_punctuate_wall_clock()
            if task.stores:
                invalidate_checkpoint(task)
            task.flush()
            task.changelog_offsets = checkpoint_task(task, builders)
        except BaseException:
            for store in task.stores.values():
                discard_buffered(store)
            task.close()  # a failed batch is replayed from a fresh task, restored from changelogs
            raise
        if any(bottom(s).persistent for s in task.stores.values()):
            task.close()  # RocksDB is reopened by whichever worker runs the task next
        else:
            _TASKS[key] = task
        yield collector.take_batch()

    return run
