"""The rows between source, stages and shuffles: one wire format (kspark._spark.wire)."""

import pyarrow as pa
import pytest

from kspark._engine.nodes import RawRecord
from kspark._spark.routing import RoutingCollector, in_writer_order, ranges_of, shuffled_records
from kspark._plan.plan import StagePlan
from kspark._spark.wire import (FED_ARROW_SCHEMA, FED_SCHEMA, MARKER_TOPIC, SOURCE_ARROW_SCHEMA,
                                SOURCE_SCHEMA, TaskMarker, marker_batch, markers_in,
                                records_only)
from kspark.errors import CorruptStateError


def test_each_schema_is_declared_once_and_spark_ddl_follows_it():
    assert SOURCE_SCHEMA == ("topic string, partition int, offset long, timestamp long, "
                             "key binary, value binary, "
                             "headers array<struct<key:string,value:binary>>")
    assert FED_SCHEMA == SOURCE_SCHEMA + ", src_task int, shuffle_key int"
    assert FED_ARROW_SCHEMA.names[:7] == SOURCE_ARROW_SCHEMA.names


@pytest.mark.parametrize("marker", [
    TaskMarker(0), TaskMarker(3, (("a", 0, 1, 5), ("b", 2, 0, 9))),
    TaskMarker(1, (), {"g": {"0": 7}}, None),
    TaskMarker(2, (("a", 1, 0, 1),), {"g": {"1": 2}}, 1000),
])
def test_a_marker_round_trips_through_its_batch(marker):
    batch = marker_batch(marker)
    assert batch.schema == SOURCE_ARROW_SCHEMA
    assert batch.column(0).to_pylist() == [MARKER_TOPIC]
    assert markers_in(batch) == [marker]
    assert records_only(batch).num_rows == 0
    assert ranges_of(batch) == list(marker.ranges)


def test_the_old_list_form_and_unknown_fields_are_refused_by_name():
    for raw in (b'[["t", 0, 1, 5]]', b'{"ranges": [], "extra": 1}'):
        with pytest.raises(CorruptStateError, match="task marker"):
            TaskMarker.decode(0, raw)


def _plan(fed):
    return StagePlan(0, ("n",), fed, {t: (4, 2) for t in fed}, {4: [10, 11, 12, 13]}, {})


class _Producer:
    def __init__(self):
        self.sent = []

    def send(self, *args):
        self.sent.append(args)

    def flush(self):
        pass


def test_a_stage_writes_markers_for_every_reader_task_then_its_records():
    producer = _Producer()
    c = RoutingCollector(producer, _plan({"rep": (2, False), "thru": (2, True)}), 1,
                         pins={"g": {"0": 3}}, clock=500)
    c.send("rep", b"k", b"v", 7, (("h", b"x"),), 1)
    c.send("out", b"k", b"v", 8, (), None)
    c.send("thru", b"k", b"w", 9, (), 0)
    batch = c.take_batch()
    assert batch.schema == FED_ARROW_SCHEMA
    assert [m.task for m in markers_in(batch)] == [2, 3]
    assert all(m.globals == {"g": {"0": 3}} and m.clock == 500 for m in markers_in(batch))
    assert batch.column("shuffle_key").to_pylist() == [12, 13, 13, 12]
    assert len(producer.sent) == 2 and c.sent == 2  # "out" and the through() topic
    records = shuffled_records(batch)
    assert [(o, r.topic, r.headers) for o, r in records] == [
        ((1, 0, 1), "rep", (("h", b"x"),)), ((1, 1, 1), "thru", ())]
    assert c.take_batch().num_rows == 2  # the markers again, no records


def test_shuffled_records_merge_by_head_timestamp_and_keep_each_writers_order():
    def rec(ts, upstream, seq):
        return (upstream, seq, 1), RawRecord("t", 0, seq, ts, b"", b"", ())

    out = in_writer_order([rec(5, 1, 0), rec(1, 1, 1), rec(3, 0, 0), ((0, 0), RawRecord(
        "in", 0, 0, 99, b"", b"", ()))])
    assert [(r.topic, r.timestamp) for r in out] == [("in", 99), ("t", 3), ("t", 5), ("t", 1)]


def test_an_empty_stage_output_is_an_empty_batch_of_the_fed_schema():
    c = RoutingCollector(_Producer(), _plan({}), 0)
    batch = c.take_batch()
    assert batch.num_rows == 0 and batch.schema == FED_ARROW_SCHEMA
    assert isinstance(batch, pa.RecordBatch)
