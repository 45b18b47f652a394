"""The remaining stateless DSL operators and punctuation, through the TopologyTestDriver."""

import pytest

from kspark import Serdes, StreamsBuilder
from kspark.errors import TopologyError
from kspark.processor import Processor, PunctuationType
from kspark.testing import TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


def _run(build, records, outputs=("out",), out_serdes=(S, I)):
    b = StreamsBuilder()
    build(b.stream("in", key_serde=S, value_serde=I))
    d = TopologyTestDriver(b.build())
    i = d.create_input_topic("in", S, I)
    for k, v in records:
        i.pipe_input(k, v)
    return {o: d.create_output_topic(o, *out_serdes).read_key_values_to_list() for o in outputs}


def test_flat_map_and_flat_map_values():
    out = _run(lambda s: s.flat_map(lambda k, v: [(k, v), (k + k, -v)]).to("out", key_serde=S,
                                                                           value_serde=I),
               [("a", 1)])
    assert out["out"] == [("a", 1), ("aa", -1)]
    out = _run(lambda s: s.flat_map_values(lambda v: range(v)).to("out", value_serde=I),
               [("a", 3), ("b", 0)])
    assert out["out"] == [("a", 0), ("a", 1), ("a", 2)]


def test_select_key():
    out = _run(lambda s: s.select_key(lambda k, v: f"k{v}").to("out", key_serde=S), [("a", 1)])
    assert out["out"] == [("k1", 1)]


def test_split_routes_to_first_match_and_default():
    def build(s):
        br = (s.split(name="n-").branch(lambda k, v: v < 0, name="neg")
              .branch(lambda k, v: v < 10, name="small").default_branch())
        assert sorted(br) == ["n-0", "n-neg", "n-small"]
        br["n-neg"].to("neg")
        br["n-small"].to("small")
        br["n-0"].to("big")

    out = _run(build, [("a", -1), ("b", 5), ("c", 50), ("d", -7)], ("neg", "small", "big"))
    assert out == {"neg": [("a", -1), ("d", -7)], "small": [("b", 5)], "big": [("c", 50)]}


def test_seed_branch_returns_a_list_and_drops_unmatched():
    def build(s):
        pos, neg = s.branch(lambda k, v: v > 0, lambda k, v: v < 0)
        pos.to("pos")
        neg.to("neg")

    out = _run(build, [("a", 1), ("z", 0), ("b", -1)], ("pos", "neg"))
    assert out == {"pos": [("a", 1)], "neg": [("b", -1)]}


def test_merge_keeps_arrival_order():
    def build(s):
        evens = s.filter(lambda k, v: v % 2 == 0).map_values(lambda v: v * 100)
        odds = s.filter(lambda k, v: v % 2 == 1)
        evens.merge(odds).to("out", value_serde=I)

    out = _run(build, [("a", 1), ("b", 2), ("c", 3)])
    assert out["out"] == [("a", 1), ("b", 200), ("c", 3)]


def test_to_then_stream_and_repartition_read_back_their_topics():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).to("mid")
    (b.stream("mid", key_serde=S, value_serde=I).map_values(lambda v: v + 1)
     .repartition(name="r", value_serde=I).map_values(lambda v: v * 2).to("out", value_serde=I))
    t = b.build()
    d = TopologyTestDriver(t, {"application.id": "app"})
    d.create_input_topic("in", S, I).pipe_input("a", 1)
    assert d.create_output_topic("out", S, I).read_key_values_to_list() == [("a", 4)]
    assert d.create_output_topic("mid", S, I).read_value() == 1
    assert d.create_output_topic("app-r-repartition", S, I).read_value() == 2
    assert str(t.describe()).count("Sub-topology") == 3


def test_print_writes_label_key_value(capsys):
    _run(lambda s: s.print(label="dbg"), [("a", 1)], outputs=())
    assert capsys.readouterr().out == "[dbg]: a, 1\n"


def test_process_with_an_unknown_store_is_a_clear_error():
    s = StreamsBuilder().stream("in", key_serde=S, value_serde=I)
    with pytest.raises(TopologyError, match="no state store named 'store'"):
        s.process(Processor, "store")


class Ticker(Processor):
    def __init__(self, kind, interval=10):
        self.kind, self.interval, self.fired = kind, interval, []

    def init(self, context):
        self.context = context
        self.cancel = context.schedule(self.interval, self.kind, self.tick)

    def tick(self, ts):
        self.context.forward(self._rec.with_value(ts))

    def process(self, record):
        self._rec = record


def _ticker_driver(kind):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).process(lambda: Ticker(kind)).to(
        "out", key_serde=S, value_serde=I)
    d = TopologyTestDriver(b.build(), initial_wall_clock_time_ms=1000)
    return d, d.create_input_topic("in", S, I), d.create_output_topic("out", S, I)


def test_stream_time_punctuation_fires_per_interval_and_skips_missed_ones():
    d, i, o = _ticker_driver(PunctuationType.STREAM_TIME)
    for ts in [0, 5, 10, 12, 45, 30, 50]:
        i.pipe_input("k", 0, timestamp_ms=ts)
    # due at 0, then 10 (fires at 10), then 20 (fires at 45: 20,30,40 skipped), then 50
    assert o.read_values_to_list() == [0, 10, 45, 50]


def test_wall_clock_punctuation_fires_on_the_mocked_clock():
    d, i, o = _ticker_driver(PunctuationType.WALL_CLOCK_TIME)
    i.pipe_input("k", 0, timestamp_ms=0)
    d.advance_wall_clock_time(9)
    assert o.is_empty()
    d.advance_wall_clock_time(1)
    d.advance_wall_clock_time(25)
    assert o.read_values_to_list() == [1010, 1035]


def test_cancelled_punctuation_stops():
    class Once(Ticker):
        def tick(self, ts):
            super().tick(ts)
            self.cancel.cancel()

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).process(
        lambda: Once(PunctuationType.STREAM_TIME)).to("out", key_serde=S, value_serde=I)
    d = TopologyTestDriver(b.build())
    i = d.create_input_topic("in", S, I)
    for ts in (0, 10, 20):
        i.pipe_input("k", 0, timestamp_ms=ts)
    assert d.create_output_topic("out", S, I).read_values_to_list() == [0]
