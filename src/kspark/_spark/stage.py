"""A fused Python stage: one Spark partition runs one Kafka Streams task of one sub-topology.

``make_stage`` gives the ``mapInArrow`` function of a stage; it finds which task a Spark
partition runs and hands the partition's rows to that task's :class:`TaskBatch` (see
``_spark/task_batch.py``), naming the task in any error it did not name itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext

from kspark._graph.graph import TopologyGraph
from kspark._host.hooks import TaskHooks, installed_task_hooks
from kspark._plan.plan import StagePlan
from kspark._host.context import HostContext
from kspark._spark.task_batch import run_task_batch
from kspark.errors import KSparkError, StreamsError

__all__ = ["make_stage", "for_batch"]


def make_stage(graph: TopologyGraph, config: dict[str, Any],
               members: list[tuple[int, int, StagePlan]], exchange: list[int] | None = None,
               report: bool = False, hooks: TaskHooks | None = None
               ) -> Callable[..., Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a stage: each Spark partition runs one task of one of
    its sub-topologies and writes with the task's producer.

    ``members``: (first partition, task count, plan) per sub-topology. Which task a Spark
    partition runs comes from its rows, which start with a task marker (see
    ``wire.TaskMarker``): read straight from Kafka, the marker's ``partition``; through
    an exchange, the position of the rows' ``shuffle_key`` in ``exchange`` (the exchange's
    shuffle keys). A partition without rows runs no task: its source had nothing new.
    ``report``: every task batch that commits sends its ``TaskMetrics`` to the control
    topic. ``hooks``: a test's (default: those installed in this process).

    The function takes, after the rows, the micro-batch it runs: (streaming query id, batch
    id), given explicitly by the driver (:func:`for_batch`) — a Spark Connect server runs a
    ``foreachBatch``'s jobs without the streaming query's local properties — else read from
    the Spark task's local properties (a classic session), None outside a stream.
    """
    hooks = hooks if hooks is not None else installed_task_hooks()
    contexts = [(first, count, HostContext(graph, config, plan, hooks))
                for first, count, plan in members]
    position = None if exchange is None else {k: p for p, k in enumerate(exchange)}

    def run(batches: Iterator[pa.RecordBatch], batch: tuple[str, int] | None = None
            ) -> Iterator[pa.RecordBatch]:
        head = next((b for b in batches if b.num_rows), None)
        if head is None:
            return
        q = _position_of(head, position)
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("a stage function runs only in a Spark task")
        batch = batch or _micro_batch(context)
        for first, count, ctx in contexts:
            if first <= q < first + count:
                yield from _named_errors(ctx, q - first, batch, run_task_batch(
                    ctx, q - first, itertools.chain([head], batches), batch,
                    context.attemptNumber(), report))
                return
        raise RuntimeError(f"stage partition {q} belongs to no sub-topology: {members}")

    return run


def for_batch(stage: Callable[..., Iterator[pa.RecordBatch]], batch: tuple[str, int]
              ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``stage`` (a :func:`make_stage` function) running micro-batch ``batch`` (streaming
    query id, batch id): the ``mapInArrow`` function of that batch."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return stage(batches, batch)

    return run


def _position_of(head: pa.RecordBatch, position: dict[int, int] | None) -> int:
    """The stage partition whose rows start with ``head`` (see :func:`make_stage`)."""
    if position is None:
        return head.column(1)[0].as_py()
    return position[head.column(head.schema.get_field_index("shuffle_key"))[0].as_py()]


def _micro_batch(context: Any) -> tuple[str, int] | None:
    """The (streaming query id, batch id) this Spark task runs, None outside a stream."""
    query = context.getLocalProperty("sql.streaming.queryId")
    number = context.getLocalProperty("streaming.sql.batchId")
    return None if query is None or number is None else (query, int(number))


def _named_errors(ctx: HostContext, partition: int, batch: tuple[str, int] | None,
                  rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``rows``, with a client or library error turned into a StreamsError naming the task."""
    try:
        yield from rows
    except KSparkError:
        raise
    except Exception as e:
        raise StreamsError(
            f"task {ctx.plan.stage}_{partition} failed in micro-batch "
            f"{None if batch is None else batch[1]}: {type(e).__module__}."
            f"{type(e).__qualname__}: {e}") from e
