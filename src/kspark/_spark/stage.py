"""A fused Python stage: one Spark partition runs one Kafka Streams task of the real engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext

from kspark._engine.nodes import RawRecord
from kspark._graph.graph import TopologyGraph
from kspark._graph.instantiate import build_task
from kspark._kafka.clients import task_producer

__all__ = ["make_stage", "STAGE_SCHEMA"]

STAGE_SCHEMA = "task string, records long, written long"

# Tasks live on in their Python worker between micro-batches, so stream time and
# punctuation schedules carry over while Spark keeps a task on the same worker.
_TASKS: dict[tuple[str, str], Any] = {}


def _raw_records(batch: pa.RecordBatch) -> Iterator[RawRecord]:
    cols = batch.to_pydict()
    for topic, part, off, ts, key, value, headers in zip(
            cols["topic"], cols["partition"], cols["offset"], cols["timestamp"],
            cols["key"], cols["value"], cols["headers"]):
        hs = tuple((h["key"], h["value"]) for h in headers) if headers else ()
        yield RawRecord(topic, part, off, ts, key, value, hs)


def make_stage(graph: TopologyGraph, config: dict[str, Any], stage: int = 0
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of one sub-topology: run the task, write with its producer."""
    bootstrap = config["bootstrap.servers"]
    app_id = config["application.id"]
    producer_conf = {k[len("producer."):]: v for k, v in config.items() if k.startswith("producer.")}

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = TaskContext.get().partitionId()
        task_id = f"{stage}_{partition}"
        producer = task_producer(bootstrap, f"{app_id}-{task_id}-producer", producer_conf)
        key = (app_id, task_id)
        task = _TASKS.pop(key, None) or build_task(graph, task_id, config, producer)
        before = producer.sent
        try:
            for batch in batches:
                task.add_records(_raw_records(batch))
            processed = task.process_buffered()
            task.maybe_punctuate_wall_clock()
            task.flush()
        except BaseException:
            task.close()  # a failed batch is replayed from a fresh task
            raise
        _TASKS[key] = task
        yield pa.RecordBatch.from_pydict(
            {"task": [task_id], "records": [processed], "written": [producer.sent - before]})

    return run
