"""Where a task's records go on Spark, and the order its shuffled records come back in.

Records for user topics go out through the task's own producer. Records for topics that
another sub-topology of the same query reads (repartition and ``through()`` topics) leave
the stage as rows (see ``wire.FED_ARROW_SCHEMA``), each with the partition the engine
computed with Kafka's partitioner, and reach their task through a Spark shuffle.
"""

from __future__ import annotations

import heapq
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kspark._engine.collector import RecordCollector, send_many
from kspark._engine.nodes import RawRecord
from kspark._engine.partitioner import default_partition
from kspark._plan.plan import StagePlan
from kspark.errors import SinkWriteError
from kspark._spark.wire import FED_ARROW_SCHEMA, Range, TaskMarker, markers_in, records_only


__all__ = ["RoutingCollector", "ranges_of", "shuffled_records", "in_writer_order",
           "Ordered"]

Ordered = tuple[tuple, RawRecord]  # (order key, record); see in_writer_order


class RoutingCollector(RecordCollector):
    """Sends user-topic records to Kafka; keeps fed-topic records as rows for the shuffle.

    ``pins`` and ``clock``: the global topics' offsets and the clock the micro-batch pinned,
    passed on in the markers of downstream tasks. ``shuffled=False`` (real-time mode): the
    fed-topic records go to Kafka too (repartition topics), each to the partition the
    engine computed, and no rows are kept. A fed topic without a route (a looped topic,
    ``QueryPlan.looped``) goes to Kafka only. It counts what it sends to Kafka (``sent``,
    of which ``logged`` to the changelogs): the ``_host/port.py::CountingCollector`` a
    hosted task takes, in both modes.
    """

    def __init__(self, producer: RecordCollector, plan: StagePlan, task_partition: int,
                 pins: dict | None = None, clock: int | None = None, shuffled: bool = True,
                 changelogs: frozenset[str] = frozenset()):
        self.producer = producer
        self.changelogs = changelogs
        self.plan = plan
        self.task_partition = task_partition
        self.pins, self.clock = pins, clock
        self.shuffled = shuffled
        self.rows: list[tuple] = []
        self.sent: int = 0  # records sent to Kafka
        self.logged: int = 0  # of which to the changelogs (``changelogs``)

    def send_many(self, topic, records) -> None:
        """As one :meth:`send` each; to a topic no stage reads, in one call to the producer."""
        if topic in self.plan.fed:
            for key, value, timestamp, headers, partition in records:
                self.send(topic, key, value, timestamp, headers, partition)
            return
        sent = len(records)
        try:
            send_many(self.producer, topic, records)
        except SinkWriteError as e:  # the records before e.index went
            sent = getattr(e, "index", 0)
            raise
        except BaseException:
            sent = 0
            raise
        finally:
            self.sent += sent
            if topic in self.changelogs:
                self.logged += sent

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        fed = self.plan.fed.get(topic)
        if fed is None:
            self.producer.send(topic, key, value, timestamp, headers, partition)
            self.sent += 1
            self.logged += topic in self.changelogs
            return
        n, to_kafka = fed
        target = partition if partition is not None else default_partition(
            key, n, self.task_partition)
        shuffled = self.shuffled and topic in self.plan.routes  # not a looped topic
        if to_kafka or not shuffled:
            self.producer.send(topic, key, value, timestamp, headers, target)
            self.sent += 1
        if shuffled:
            self.rows.append((topic, target, len(self.rows), timestamp, key, value, headers))

    def flush(self) -> None:
        self.producer.flush()

    def take_batch(self) -> pa.RecordBatch:
        """The rows for the shuffle: a task marker for every task of the readers (so each
        of them runs and knows its number), then the records."""
        rows, self.rows = self.rows, []
        keys = self.plan.shuffle_keys
        readers = {(size, first + j) for topic, (n, _) in self.plan.fed.items()
                   if topic in self.plan.routes
                   for size, first in [self.plan.routes[topic]] for j in range(n)}
        out = [(*TaskMarker(pos, (), self.pins, self.clock).row(), self.task_partition,
                keys[size][pos]) for size, pos in sorted(readers)]
        for topic, target, seq, ts, key, value, headers in rows:
            size, first = self.plan.routes[topic]
            out.append((topic, target, seq, ts, key, value,
                        [{"key": k, "value": hv} for k, hv in headers], self.task_partition,
                        keys[size][first + target]))
        cols = list(zip(*out, strict=True)) if out else [()] * len(FED_ARROW_SCHEMA)
        return pa.RecordBatch.from_arrays(
            [pa.array(list(c), f.type) for c, f in zip(cols, FED_ARROW_SCHEMA, strict=True)],
            schema=FED_ARROW_SCHEMA)


def ranges_of(batch: pa.RecordBatch) -> list[Range]:
    """The Kafka offset ranges that the task markers in ``batch`` hand the task."""
    return [r for m in markers_in(batch) for r in m.ranges]


def shuffled_records(batch: pa.RecordBatch) -> list[Ordered]:
    """The shuffled records of ``batch`` (task markers left out), each with its order key:
    (upstream task, its write sequence, 1); see :func:`in_writer_order`."""
    batch = records_only(batch)
    n = batch.num_rows
    if not n:
        return []
    col = batch.column
    topic, part, off, ts = (col(i).to_pylist() for i in range(4))
    key, value = col(4).to_pylist(), col(5).to_pylist()
    hcol = col(6)
    has_headers = pc.sum(pc.list_value_length(hcol)).as_py()
    headers = ([tuple((h["key"], h["value"]) for h in hs) if hs else () for hs in hcol.to_pylist()]
               if has_headers else [()] * n)
    return [((u, o, 1), RawRecord(t, p, o, s, k, v, h))
            for t, p, o, s, k, v, h, u in zip(topic, part, off, ts, key, value, headers,
                                              col(7).to_pylist(), strict=True)]


def in_writer_order(records: list[Ordered]) -> list[RawRecord]:
    """A micro-batch's rows in an order their topics could have held them. Rows read from
    Kafka (order key ``(offset, 0)``) keep their order. Shuffled rows of one (topic,
    partition) keep each upstream task's write order, as a repartition topic keeps each
    writer's; the upstream tasks are merged by lowest head timestamp, ties to the lower
    task, so a replay sees the same order. (Sorting by timestamp instead would hide records
    that are late.)

    Example:
        >>> r = lambda ts, u, seq: ((u, seq, 1), RawRecord("t", 0, seq, ts, b"", b"", ()))
        >>> [x.timestamp for x in in_writer_order([r(5, 0, 0), r(9, 0, 1), r(7, 1, 0)])]
        [5, 7, 9]
    """
    out: list[RawRecord] = []
    writers: dict[tuple[str, int, Any], list] = {}
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
