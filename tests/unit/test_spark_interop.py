"""Spark in, Spark out without Spark: the columns each serde reads as, the rows a Spark sink
gets (and rejects), the sinks' specs, the Delta writer's exactly-once rule, and the
TopologyTestDriver's view of a sink (docs/spark-interop.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pytest

from kspark import Serdes, StreamsBuilder, TimeWindows
from kspark._interop.columns import serde_columns
from kspark._interop.delta import committed_version, write_batch
from kspark._interop.rows import TopicRows
from kspark._interop.sinks import SparkSinkSpec
from kspark._control.reset import is_internal
from kspark._spark.realtime.checks import free_slots
from kspark.dsl import SessionWindowedSerde, TimeWindowedSerde, Window, Windowed
from kspark.errors import ConfigError, TopologyError
from kspark.testing import TopologyTestDriver


class Msg:
    """A Kafka message's methods, as confluent_kafka's ``Message``."""

    def __init__(self, key, value, offset=0, ts=1000, headers=None):
        self.k, self.v, self.o, self.ts, self.h = key, value, offset, ts, headers

    def key(self):
        return self.k

    def value(self):
        return self.v

    def topic(self):
        return "t"

    def partition(self):
        return 0

    def offset(self):
        return self.o

    def timestamp(self):
        return (0, self.ts)

    def headers(self):
        return self.h


@pytest.mark.parametrize("serde, arrow", [
    (Serdes.String(), pa.string()), (Serdes.Long(), pa.int64()), (Serdes.Integer(), pa.int32()),
    (Serdes.Short(), pa.int16()), (Serdes.Double(), pa.float64()), (Serdes.Float(), pa.float32()),
    (Serdes.Bytes(), pa.binary()), (Serdes.ByteArray(), pa.binary()), (Serdes.UUID(), pa.string()),
    (Serdes.Json(), pa.string()), (Serdes.Void(), pa.string())])
def test_every_built_in_serde_reads_as_a_typed_column(serde, arrow):
    (field,) = serde_columns(serde, "value").fields
    assert field.type == arrow


def test_a_round_trip_through_each_built_in_serde_gives_the_value_back_in_its_column():
    cases = [(Serdes.String(), "é"), (Serdes.Long(), -2 ** 63), (Serdes.Integer(), 7),
             (Serdes.Double(), 1.5), (Serdes.Bytes(), b"\x00\x01"), (Serdes.Json(), {"a": [1]})]
    for serde, value in cases:
        rows = TopicRows(Serdes.String(), serde)
        batch, bad = rows.batch([Msg(b"k", serde.serialize("t", value))])
        assert not bad
        got = batch.to_pydict()["value"][0]
        assert got == (json.dumps(value, separators=(",", ":")) if isinstance(value, dict)
                       else value)


def test_windowed_keys_read_as_the_inner_key_with_window_start_and_end_timestamps():
    for serde, window in ((TimeWindowedSerde(Serdes.String(), 10_000), Window(20_000, 30_000)),
                          (SessionWindowedSerde(Serdes.String()), Window(5, 9))):
        rows = TopicRows(serde, Serdes.Long())
        key = serde.serialize("t", Windowed("ann", window))
        batch, bad = rows.batch([Msg(key, Serdes.Long().serialize("t", 3))])
        row = batch.to_pylist()[0]
        assert [f.name for f in rows.schema][:4] == ["key", "window_start", "window_end", "value"]
        assert (row["key"], row["value"]) == ("ann", 3)
        assert (int(row["window_start"].timestamp() * 1000),
                int(row["window_end"].timestamp() * 1000)) == (window.start, window.end)


def test_avro_records_read_as_structs_and_unions_of_several_types_as_json_text():
    schema = {"type": "record", "name": "V", "fields": [
        {"name": "n", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "opt", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["int", "string"]},
        {"name": "m", "type": {"type": "map", "values": "double"}}]}
    serde = Serdes.Avro(schema)
    value = {"n": 1, "tags": ["a"], "opt": None, "either": 3, "m": {"x": 0.5}}
    rows = TopicRows(Serdes.String(), serde)
    batch, bad = rows.batch([Msg(b"k", serde.serialize("t", value))])
    assert not bad
    assert pa.types.is_struct(rows.schema.field("value").type)
    got = batch.to_pylist()[0]["value"]
    assert got == {"n": 1, "tags": ["a"], "opt": None, "either": "3", "m": [("x", 0.5)]}


def test_a_registry_serde_with_a_record_type_reads_as_its_fields():
    @dataclass
    class View:
        page: str
        seconds: int

    serde = Serdes.avro(record_type=View, config={"schema.registry.url": "mock://interop"})
    rows = TopicRows(Serdes.String(), serde)
    batch, bad = rows.batch([Msg(b"k", serde.serialize("t", View("/a", 5)))])
    assert not bad and batch.to_pylist()[0]["value"] == {"page": "/a", "seconds": 5}


def test_a_json_schema_reads_as_a_struct_only_when_it_declares_every_property():
    closed = json.dumps({"type": "object", "additionalProperties": False, "properties": {
        "page": {"type": "string"}, "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}}}})
    serde = Serdes.json_schema(closed, config={"schema.registry.url": "mock://interop-js"})
    rows = TopicRows(Serdes.String(), serde)
    batch, bad = rows.batch([Msg(b"k", serde.serialize("t", {"page": "/a", "n": 2,
                                                              "tags": ["x"]}))])
    assert not bad and batch.to_pylist()[0]["value"] == {"page": "/a", "n": 2, "tags": ["x"]}
    open_ = json.dumps({"type": "object", "properties": {"page": {"type": "string"}}})
    serde = Serdes.json_schema(open_, config={"schema.registry.url": "mock://interop-js2"})
    (field,) = serde_columns(serde, "value").fields
    assert field.type == pa.string(), "undeclared properties would be dropped by a struct"


def test_a_record_its_serde_cannot_read_is_rejected_with_its_error_not_dropped():
    rows = TopicRows(Serdes.String(), Serdes.Long())
    batch, bad = rows.batch([Msg(b"a", Serdes.Long().serialize("t", 1), 0),
                             Msg(b"b", b"xyz", 1), Msg(b"c", Serdes.Long().serialize("t", 2), 2)])
    assert batch.to_pydict()["value"] == [1, 2]
    assert [(m.offset(), "expects 8 bytes" in str(e)) for m, e in bad] == [(1, True)]


def test_a_value_that_does_not_fit_its_column_is_rejected_naming_the_columns():
    class LongSerde:  # as Serdes.Long() for the columns, but reads a value too large
        def deserialize(self, topic, data):
            return 2 ** 70 if data == b"big" else 1

    rows = TopicRows(Serdes.String(), LongSerde())
    batch, bad = rows.batch([Msg(b"a", b"ok", 0), Msg(b"b", b"big", 1)])
    assert batch.num_rows == 1
    ((m, e),) = bad
    assert m.offset() == 1 and "does not fit the Spark columns" in str(e) and "int64" in str(e)


def test_metadata_columns_carry_topic_partition_offset_timestamp_and_headers():
    rows = TopicRows(Serdes.String(), Serdes.String())
    batch, _ = rows.batch([Msg(b"k", b"v", 7, 1234, [("h", b"1")])])
    row = batch.to_pylist()[0]
    assert (row["topic"], row["partition"], row["offset"]) == ("t", 0, 7)
    assert int(row["timestamp"].timestamp() * 1000) == 1234
    assert row["headers"] == [{"key": "h", "value": b"1"}]


def test_a_sink_spec_refuses_what_its_writer_cannot_do():
    with pytest.raises(TopologyError, match="give path="):
        SparkSinkSpec.of("s", "delta", table="db.t")
    with pytest.raises(TopologyError, match="missing: \\['dbtable'\\]"):
        SparkSinkSpec.of("s", "jdbc", options={"url": "jdbc:x"})
    with pytest.raises(TopologyError, match="give table="):
        SparkSinkSpec.of("s", "iceberg", path="/x")
    with pytest.raises(TopologyError, match="not both"):
        SparkSinkSpec.of("s", "parquet", path="/x", table="t")
    with pytest.raises(TopologyError, match="Kafka topic's name"):
        SparkSinkSpec.of("a b", "parquet", path="/x")
    with pytest.raises(TopologyError, match="fn\\(dataframe, batch_id\\)"):
        SparkSinkSpec.function("s", "not callable")  # type: ignore[arg-type]
    assert SparkSinkSpec.of("s", "iceberg", table="cat.db.t").writer == "table"
    assert SparkSinkSpec.of("s", "PARQUET", path="/x", partition_by="key").partition_by == ("key",)


def test_to_spark_adds_a_sink_node_writing_the_applications_own_topic():
    b = StreamsBuilder()
    s = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.Long())
    s.to_spark("delta", path="/t", name="counts")
    s.foreach_batch(lambda df, i: None)
    graph = b.build()._graph
    node = graph.nodes["counts"]
    assert (node.topic, node.internal, node.value_serde) == ("counts-spark-sink", True,
                                                             Serdes.Long())
    assert sorted(graph.spark_sinks) == ["KSTREAM-SPARKSINK-0000000001", "counts"]
    with pytest.raises(TopologyError, match="already exists"):
        s.to_spark("parquet", path="/u", name="counts")


def test_the_driver_shows_the_rows_a_sink_gets_as_the_sink_decodes_them():
    b = StreamsBuilder()
    (b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String())
      .group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(1000)).count()
      .to_stream().to_spark("parquet", path="/x", name="counts"))
    with TopologyTestDriver(b.build(), {"application.id": "a"}) as d:
        topic = d.create_input_topic("in", Serdes.String(), Serdes.String())
        topic.pipe_input("k", "v", 1500)
        topic.pipe_input("k", "v", 1700)
        rows = d.get_spark_sink_rows("counts")
        assert [(r["key"], r["value"], r["offset"]) for r in rows] == [("k", 1, 0), ("k", 2, 1)]
        assert int(rows[0]["window_start"].timestamp() * 1000) == 1000
        with pytest.raises(TopologyError, match="no Spark sink named 'x'"):
            d.get_spark_sink_rows("x")


def test_the_delta_writer_writes_each_batch_of_a_sink_once(tmp_path):
    path = str(tmp_path / "t")
    one = pa.table({"key": ["a"], "value": [1]})
    assert committed_version(path, "app:s:q1") is None
    assert write_batch(path, one, "app:s:q1", 0)
    assert not write_batch(path, one, "app:s:q1", 0), "a batch run again writes nothing"
    assert write_batch(path, one, "app:s:q1", 1)
    assert write_batch(path, one, "app:s:q2", 0), "another query (a new checkpoint) writes"
    from deltalake import DeltaTable

    assert DeltaTable(path).to_pyarrow_table().num_rows == 3
    assert committed_version(path, "app:s:q1") == 1


def test_real_time_mode_keeps_a_slot_for_the_spark_sinks_when_streaming():
    assert free_slots(2, {}) == 2 and free_slots(2, {"s": 1}) == 1
    with pytest.raises(ConfigError, match="needs a task slot for the sinks"):
        free_slots(1, {"s": 1})
    assert free_slots(1, {"s": 1}, batch_run=True) == 1, "a batch run's sinks write at its end"


def test_a_reset_deletes_the_spark_sinks_topics():
    assert is_internal("app", "app-counts-spark-sink")
    assert not is_internal("app", "other-counts-spark-sink")


def test_a_batch_run_over_an_empty_partition_finishes_with_nothing_committed_there():
    """Real-time mode finishes a batch run from the group's committed offsets: a partition
    that was empty at start (stop offset 0) has none, and is done (found by the Delta
    example, whose one-partition topic got no records)."""
    from kspark._spark.batch_run import BatchRun
    from kspark.errors import StreamsError

    class Meta:
        app_id, finished = "app", False

        def finish(self):
            self.finished = True

    meta = Meta()
    BatchRun(meta, {("t", 0): 5, ("t", 1): 0}, False).finish_at({("t", 0): 5})
    assert meta.finished
    with pytest.raises(StreamsError, match="ended at offset None of topic 't' partition 0"):
        BatchRun(Meta(), {("t", 0): 5, ("t", 1): 0}, False).finish_at({("t", 1): 0})
