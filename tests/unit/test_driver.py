"""The engine through the TopologyTestDriver (stateless skeleton operators)."""

from hypothesis import given, strategies as st

from kspark import Serdes, StreamsBuilder
from kspark._engine.nodes import RawRecord
from kspark._engine.partition_group import PartitionGroup
from kspark.processor import Processor, Topology
from kspark.testing import TestRecord, TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


def _driver(build):
    b = StreamsBuilder()
    build(b.stream("in", key_serde=S, value_serde=I))
    d = TopologyTestDriver(b.build())
    return d, d.create_input_topic("in", S, I), d.create_output_topic("out", S, I)


def test_filter_and_map_values_keep_key_timestamp_headers():
    d, i, o = _driver(lambda s: s.filter(lambda k, v: v % 2 == 0).map_values(lambda v: v * 10)
                      .to("out", value_serde=I))
    i.pipe_input("a", 1, timestamp_ms=5)
    i.pipe_input("b", 2, timestamp_ms=7, headers=[("h", b"1")])
    assert o.read_records_to_list() == [TestRecord("b", 20, 7, (("h", b"1"),))]
    assert o.is_empty()


def test_filter_not_map_peek_foreach():
    seen, done = [], []

    def build(s):
        s = s.filter_not(lambda k, v: v < 0).peek(lambda k, v: seen.append(v))
        s.foreach(lambda k, v: done.append(k))
        s.map(lambda k, v: (k.upper(), v + 1)).to("out", key_serde=S, value_serde=I)

    d, i, o = _driver(build)
    i.pipe_key_value_list([("a", -1), ("b", 1), ("c", 2)])
    assert o.read_key_values_to_list() == [("B", 2), ("C", 3)]
    assert seen == [1, 2] and done == ["b", "c"]


def test_map_values_with_key():
    d, i, o = _driver(lambda s: s.map_values(lambda k, v: f"{k}{v}", with_key=True)
                      .to("out", value_serde=S))
    o = d.create_output_topic("out", S, S)
    i.pipe_input("x", 3)
    assert o.read_value() == "x3"


def test_processor_api_context():
    class Tag(Processor):
        def init(self, context):
            self.ctx = context

        def process(self, record):
            m = self.ctx.record_metadata()
            self.ctx.forward(record.with_value(
                f"{self.ctx.task_id()}:{m.topic}:{m.offset}:{self.ctx.current_stream_time_ms()}"))

    t = (Topology().add_source("src", "in", key_serde=S, value_serde=I)
         .add_processor("tag", Tag, "src")
         .add_sink("sink", "out", "tag", key_serde=S, value_serde=S))
    d = TopologyTestDriver(t)
    i, o = d.create_input_topic("in", S, I), d.create_output_topic("out", S, S)
    i.pipe_input("k", 1, timestamp_ms=10)
    i.pipe_input("k", 1, timestamp_ms=4)
    assert o.read_values_to_list() == ["0_0:in:0:10", "0_0:in:1:10"]


def test_default_serdes_from_config():
    b = StreamsBuilder()
    b.stream("in").to("out")
    d = TopologyTestDriver(b.build(),
                           {"default.key.serde": "String", "default.value.serde": "Integer"})
    d.create_input_topic("in", S, I).pipe_input("a", 5)
    assert d.create_output_topic("out", S, I).read_key_values_to_map() == {"a": 5}


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(0, 100)),
                max_size=40))
def test_partition_group_orders_by_head_timestamp_and_keeps_partition_order(recs):
    raws = [RawRecord(t, p, off, ts, None, None) for off, (t, p, ts) in enumerate(recs)]
    g = PartitionGroup()
    g.add(raws)
    out = list(g.drain())
    assert sorted(out, key=lambda r: r.offset) == sorted(raws, key=lambda r: r.offset)
    for tp in {(r.topic, r.partition) for r in raws}:
        assert [r.offset for r in out if (r.topic, r.partition) == tp] == \
               [r.offset for r in raws if (r.topic, r.partition) == tp]


def test_records_read_back_come_from_the_partition_with_the_lowest_head_timestamp():
    """What the task writes to topics it reads comes back one record at a time from the
    partition whose head has the lowest timestamp (Java's PartitionGroup.nextRecord): equal
    heads alternate, and a lower timestamp written later goes first."""

    class Split(Processor):
        def init(self, context):
            self.ctx = context

        def process(self, record):
            for sink, ts in (("to-a", 5), ("to-a", 5), ("to-b", 5), ("to-b", 3)):
                self.ctx.forward(record.with_timestamp(ts), sink)

    class Tag(Processor):
        def init(self, context):
            self.ctx = context

        def process(self, record):
            m = self.ctx.record_metadata()
            self.ctx.forward(record.with_value(f"{m.topic}{m.offset}@{record.timestamp}"))

    t = (Topology().add_source("src", "in", key_serde=S, value_serde=I)
         .add_processor("split", Split, "src")
         .add_sink("to-a", "a", "split", key_serde=S, value_serde=I)
         .add_sink("to-b", "b", "split", key_serde=S, value_serde=I)
         .add_source("back", "a", "b", key_serde=S, value_serde=I)
         .add_processor("tag", Tag, "back")
         .add_sink("out", "out", "tag", key_serde=S, value_serde=S))
    with TopologyTestDriver(t) as d:
        d.create_input_topic("in", S, I).pipe_input("k", 1, timestamp_ms=9)
        assert d.create_output_topic("out", S, S).read_values_to_list() == [
            "a0@5", "b0@5", "b1@3", "a1@5"]  # written in the order a0, a1, b0, b1
