"""Value-transforming operators through the TopologyTestDriver: ``KTable.transform_values``
(with state, deletes, materialized, no forwarding), ``KStream.process_values`` (no
repartition, no new key) and ``KTable.to_stream(mapper)``. Their agreement with Java is
checked by tests/conformance as well."""

import pytest

from kspark import Materialized, Serdes, StreamsBuilder
from kspark.errors import KSparkError
from kspark.processor import Processor
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _out(d, topic, vs=L):
    return [(r.key, r.value, r.timestamp)
            for r in d.create_output_topic(topic, S, vs).read_records_to_list()]


class Numbered:
    """A value transformer with state: numbers the calls it gets (deletes included)."""

    def init(self, context):
        self.calls = 0

    def transform(self, key, value):
        self.calls += 1
        return None if value is None else f"{value}#{self.calls}"

    def close(self):
        pass


def test_transform_values_sees_deletes_and_keeps_timestamps():
    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).transform_values(Numbered).to_stream().to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        t = d.create_input_topic("t", S, S)
        t.pipe_input("a", "x", 1)
        t.pipe_input("a", None, 2)
        t.pipe_input("a", "y", 3)
        assert _out(d, "o", S) == [("a", "x#1", 1), ("a", None, 2), ("a", "y#3", 3)]


def test_materialized_transform_values_keeps_its_result_and_joins_read_it():
    b = StreamsBuilder()
    t = b.table("t", key_serde=S, value_serde=S).transform_values(
        Numbered, Materialized.as_("numbered").with_value_serde(S))
    b.stream("s", key_serde=S, value_serde=S).join(t, lambda v, n: f"{v}+{n}").to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "x", 1)
        d.create_input_topic("s", S, S).pipe_input("a", "v", 2)
        assert d.get_key_value_store("numbered").get("a") == "x#1"
        assert _out(d, "o", S) == [("a", "v+x#1", 2)]


def test_a_value_transformer_cannot_forward():
    class Forwarder(Numbered):
        def init(self, context):
            self.context = context

        def transform(self, key, value):
            self.context.forward(None)

    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).transform_values(Forwarder).to_stream().to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(KSparkError, match="cannot forward"):
            d.create_input_topic("t", S, S).pipe_input("a", "x", 1)


class Tenfold(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        self.context.forward(record.with_value(record.value * 10).with_timestamp(
            record.timestamp + 1))


class Rekey(Tenfold):
    def process(self, record):
        self.context.forward(record.with_key("other"))


def test_process_values_changes_values_and_needs_no_repartition():
    b = StreamsBuilder()
    b.stream("s", key_serde=S, value_serde=L).process_values(Tenfold).group_by_key().count(
    ).to_stream().to("o", key_serde=S, value_serde=L)
    assert "repartition" not in str(b.build().describe())
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("s", S, L).pipe_input("a", 3, 5)
        assert _out(d, "o") == [("a", 1, 6)]


def test_process_values_refuses_a_new_key():
    b = StreamsBuilder()
    b.stream("s", key_serde=S, value_serde=L).process_values(Rekey).to("o", value_serde=L)
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(KSparkError, match="cannot change keys"):
            d.create_input_topic("s", S, L).pipe_input("a", 3, 5)


def test_to_stream_with_a_mapper_rekeys():
    b = StreamsBuilder()
    b.table("t", key_serde=S, value_serde=S).to_stream(lambda k, v: f"{k}/{v}").to(
        "o", key_serde=S, value_serde=S)
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "x", 4)
        assert _out(d, "o", S) == [("a/x", "x", 4)]
