"""A real-time thread's hold of one task's input (``_spark/realtime/polled.py``):
records are handed to the task as Kafka Streams picks them, and no further than a partition
that still has records on the broker allows (``max.task.idle.ms=0``)."""

from __future__ import annotations

from kspark._engine.nodes import RawRecord
from kspark._engine.partition_group import PartitionGroup as TaskGroup
from kspark._spark.realtime.polled import PolledRecords

TABLE, STREAM = ("users", 0), ("orders", 0)


def _records(tp, stamps, first=0):
    return [RawRecord(tp[0], tp[1], first + i, ts, b"k", b"v") for i, ts in enumerate(stamps)]


def test_a_partition_that_runs_out_with_records_left_on_the_broker_stops_the_take():
    g = PolledRecords((TABLE, STREAM))
    g.add(_records(TABLE, [1, 2, 3]))  # the table's first fetch: more of it on the broker
    g.add(_records(STREAM, [10, 11]))
    taken = g.take(at_end=set())
    assert [(r.topic, r.offset) for r in taken] == [("users", 0), ("users", 1), ("users", 2)]
    assert g.positions == {TABLE: 3} and not g.ready(at_end=set())  # waits for the table
    g.add(_records(TABLE, [4, 12], first=3))
    assert g.ready(at_end=set())
    taken = g.take(at_end=set())
    assert [(r.topic, r.offset) for r in taken] == [("users", 3), ("orders", 0), ("orders", 1)]
    assert g.positions == {TABLE: 4, STREAM: 2}


def test_a_partition_read_to_its_end_does_not_stop_the_take():
    g = PolledRecords((TABLE, STREAM))
    g.add(_records(TABLE, [1, 2]))
    g.add(_records(STREAM, [10, 11]))
    taken = g.take(at_end={TABLE})
    assert [r.offset for r in taken] == [0, 1, 0, 1] and not g.pending


def test_the_take_is_the_order_the_task_processes_in():
    g = PolledRecords((TABLE, STREAM))
    g.add(_records(TABLE, [5, 1, 9, 2]))  # out of order within the partition
    g.add(_records(STREAM, [3, 3, 8]))
    taken = g.take(at_end={TABLE, STREAM})
    task = TaskGroup()
    task.add(taken)
    assert list(task.drain()) == taken


def test_without_waiting_everything_held_is_taken():
    g = PolledRecords((TABLE, STREAM), wait=False)
    g.add(_records(TABLE, [1, 2]))
    g.add(_records(STREAM, [0]))
    assert len(g.take()) == 3 and not g.pending
