"""A built-in stateless operator's node runs it in its own call (``InlinedOperator.inline``),
and the serdes that pass bytes through are skipped for bytes: both are the per-record path
made shorter, so each must do exactly what the long way does.

A new operator in ``_engine/operators.py`` must be inlined or listed in ``NOT_INLINED`` with
its reason: the guard test fails until it is."""

import inspect

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._engine import operators
from kspark._engine.api import Record
from kspark._engine.context import NodeContext
from kspark._engine.nodes import ProcessorNode, bytes_identity
from kspark._engine.operators import (FilterProcessor, InlinedOperator, MapProcessor,
                                      MapValuesProcessor, PassThroughProcessor, PeekProcessor,
                                      SelectKeyProcessor)
from kspark.errors import KSparkError, ProcessorError, TopologyError
from kspark.serde._builtin import ByteArraySerde
from kspark.testing import TopologyTestDriver

NOT_INLINED = {  # operator: why its node keeps the processor's own call
    "NullKeyFilter": "rare (repartitions only); reads keep.on, set after build",
    "FlatMapProcessor": "forwards several records per input: the node's call is a small part",
    "BranchProcessor": "forwards to one named child, chosen per record",
    "DelayProcessor": "schedules records in its store (KIP-311)",
}


class Collect:
    """A child node that keeps what reaches it."""

    def __init__(self):
        self.got = []

    def process(self, record):
        self.got.append(record)


class Ctx(NodeContext):
    """The long way: a processor's own context forwarding to the children."""

    def __init__(self, children):
        self.children = children

    def forward(self, record, child_name=None):
        for c in self.children:
            c.process(record)


def _boom(*_):
    raise ValueError("boom")


def _pair_or_not(k, v):
    return (v, k) if v != "bad" else [v]


CASES = {
    "filter": lambda: FilterProcessor(lambda k, v: v != "drop"),
    "filter_not": lambda: FilterProcessor(lambda k, v: v != "drop", negate=True),
    "map_values": lambda: MapValuesProcessor(str.upper),
    "map_values_with_key": lambda: MapValuesProcessor(lambda k, v: f"{k}:{v}", with_key=True),
    "map": lambda: MapProcessor(lambda k, v: (v, k)),
    "select_key": lambda: SelectKeyProcessor(lambda k, v: v[:1]),
    "peek": lambda: PeekProcessor(lambda k, v: None),
    "pass_through": lambda: PassThroughProcessor(),
}
RECORDS = [Record("a", "x", 5), Record("b", "drop", 6, (("h", b"1"),)), Record(None, "z", 7)]


def _long_way(make, records):
    child = Collect()
    p = make()
    p.init(Ctx([child]))
    for r in records:
        p.process(r)
    return child.got


def _inlined(make, records, failed=None):
    child = Collect()
    step = make().inline([child], failed)
    for r in records:
        step(r)
    return child.got


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_inlined_operator_forwards_exactly_what_its_process_forwards(name):
    assert _inlined(CASES[name], RECORDS) == _long_way(CASES[name], RECORDS)


@pytest.mark.parametrize("make", [
    lambda: FilterProcessor(_boom), lambda: MapValuesProcessor(_boom),
    lambda: MapValuesProcessor(_boom, with_key=True), lambda: MapProcessor(_boom),
    lambda: MapProcessor(_pair_or_not), lambda: SelectKeyProcessor(_boom),
    lambda: PeekProcessor(_boom)])
def test_what_user_code_raises_goes_to_the_node_with_the_input_record_and_nothing_is_forwarded(
        make):
    failures = []
    record = Record("k", "bad", 9, (("h", b"v"),))
    assert _inlined(make, [record], lambda r, e: failures.append((r, e))) == []
    assert [r for r, _ in failures] == [record]
    assert isinstance(failures[0][1], (ValueError, TypeError))


def test_a_kspark_error_from_user_code_is_not_handed_to_the_handler_but_raised():
    def stop(v):
        raise TopologyError("stop")
    with pytest.raises(KSparkError, match="stop"):
        _inlined(lambda: MapValuesProcessor(stop), [Record("k", "v", 1)],
                 lambda r, e: pytest.fail("handled"))


def test_a_node_inlines_its_built_in_operator_unless_it_is_terminal():
    b = StreamsBuilder()
    s = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String())
    s.map_values(str.upper).filter(lambda k, v: True).to(
        "out", key_serde=Serdes.String(), value_serde=Serdes.String())
    s.peek(lambda k, v: None)  # a terminal peek: its node measures end-to-end latency
    with TopologyTestDriver(b.build()) as driver:
        nodes = {n.name: n for n in driver._task.nodes}
        inlined = sorted(n for n, node in nodes.items() if "process" in vars(node))
    assert inlined == ["KSTREAM-FILTER-0000000002", "KSTREAM-MAPVALUES-0000000001"]


@pytest.mark.parametrize("response, outcome", [("continue", ["A", "C"]), ("fail", None)])
def test_a_failing_inlined_step_follows_the_processing_handler_and_names_its_node(
        response, outcome):
    b = StreamsBuilder()
    s = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String())
    s.map_values(lambda v: _boom() if v == "b" else v.upper()).to(
        "out", key_serde=Serdes.String(), value_serde=Serdes.String())
    config = {"processing.exception.handler": f"log_and_{response}"}
    with TopologyTestDriver(b.build(), config) as driver:
        pipe = driver.create_input_topic("in", Serdes.String(), Serdes.String())
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        if outcome is None:
            with pytest.raises(ProcessorError, match="KSTREAM-MAPVALUES-0000000001"):
                for v in "abc":
                    pipe.pipe_input("k", v)
            return
        for v in "abc":
            pipe.pipe_input("k", v)
        assert out.read_values_to_list() == outcome


def test_every_stateless_operator_is_inlined_or_says_why_not():
    ops = {name for name, cls in inspect.getmembers(operators, inspect.isclass)
           if cls.__module__ == operators.__name__ and issubclass(cls, operators.Processor)
           and not name.startswith("_") and cls is not InlinedOperator}
    inlined = {n for n in ops if issubclass(getattr(operators, n), InlinedOperator)}
    unclassified = ops - inlined - set(NOT_INLINED)
    assert not unclassified, f"inline these or list them in NOT_INLINED: {sorted(unclassified)}"
    assert not inlined & set(NOT_INLINED)


def test_only_serdes_marked_bytes_identity_are_skipped_and_an_override_loses_the_mark():
    class Upper(ByteArraySerde):
        def serialize(self, topic, data):
            return data.upper()
    assert bytes_identity(Serdes.ByteArray(), "serialize")
    assert bytes_identity(Serdes.Bytes(), "deserialize")
    assert not bytes_identity(Upper(), "serialize")
    assert bytes_identity(Upper(), "deserialize")
    assert not bytes_identity(Serdes.String(), "deserialize")


@pytest.mark.parametrize("value, written", [(b"v", b"v"), (bytearray(b"ba"), b"ba"),
                                            (memoryview(b"mv"), b"mv"), (None, None)])
def test_a_byte_array_sink_writes_bytes_unchanged_and_converts_what_is_not_bytes(value, written):
    b = StreamsBuilder()
    raw = Serdes.ByteArray()
    (b.stream("in", key_serde=raw, value_serde=raw).map_values(lambda v: value)
     .to("out", key_serde=raw, value_serde=raw))
    with TopologyTestDriver(b.build()) as driver:
        driver.create_input_topic("in", raw, raw).pipe_input(b"k", b"in")
        out = driver.create_output_topic("out", raw, raw).read_key_value()
    assert out.key == b"k" and out.value == written and type(out.value) is type(written)


def test_a_sink_whose_serde_overrides_serialize_calls_it_for_bytes():
    class Upper(ByteArraySerde):
        def serialize(self, topic, data):
            return None if data is None else bytes(data).upper()
    b = StreamsBuilder()
    raw = Serdes.ByteArray()
    b.stream("in", key_serde=raw, value_serde=raw).to("out", key_serde=raw, value_serde=Upper())
    with TopologyTestDriver(b.build()) as driver:
        driver.create_input_topic("in", raw, raw).pipe_input(b"k", b"abc")
        assert driver.create_output_topic("out", raw, raw).read_value() == b"ABC"


def test_a_processor_node_that_is_not_inlined_keeps_its_class_process():
    node = ProcessorNode("n", operators.BranchProcessor([]))
    assert "process" not in vars(node)
