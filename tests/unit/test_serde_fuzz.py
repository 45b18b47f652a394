"""Random bytes fed to every built-in serde: each either reads them or raises a
SerializationError (never another exception, never a hang); a source node names the topic,
partition, offset and whether the KEY or the VALUE failed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Serdes, StreamsBuilder
from kspark._engine.state.buffer_value import SuppressBufferSerde
from kspark._engine.state.internal_serdes import GraceBufferSerde, PlainValueSerde
from kspark._engine.aggregates.windows import SessionWindowedSerde, TimeWindowedSerde
from kspark.errors import CorruptStateError, SerializationError
from kspark.testing import TopologyTestDriver

AVRO = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "qty", "type": "long"},
    {"name": "price", "type": ["null", "double"]},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]}

SERDES = [Serdes.String(), Serdes.Integer(), Serdes.Long(), Serdes.Short(), Serdes.Float(),
          Serdes.Double(), Serdes.Bytes(), Serdes.ByteArray(), Serdes.UUID(), Serdes.Void(),
          Serdes.Json(), Serdes.Avro(AVRO), TimeWindowedSerde(Serdes.String(), 10),
          TimeWindowedSerde(Serdes.Long(), 10), SessionWindowedSerde(Serdes.String()),
          SessionWindowedSerde(Serdes.Json())]
# random bytes, and some that come close to valid input (JSON-ish, nested, UTF-8)
DATA = (st.binary(max_size=64) | st.text(max_size=24).map(str.encode)
        | st.sampled_from([b"[" * 5000, b'{"a": [1, 2', b"\xff\xfe", b"-", b"1e999", b"NaN",
                           b"\x02" * 40, bytes(16), b"\x80\x05."]))


@pytest.mark.parametrize("serde", SERDES, ids=repr)
@settings(max_examples=150, deadline=None)
@given(data=DATA)
def test_random_bytes_deserialize_or_raise_serialization_error(serde, data):
    try:
        serde.deserialize("fuzz", data)
    except SerializationError as e:
        assert "Serde" in str(e)  # names the serde that failed


@pytest.mark.parametrize("serde", [SuppressBufferSerde(), SuppressBufferSerde(Serdes.Long()),
                                   GraceBufferSerde(), GraceBufferSerde(Serdes.String()),
                                   PlainValueSerde()], ids=repr)
@settings(max_examples=150, deadline=None)
@given(data=DATA | DATA.map(lambda d: b"K\x01" + d) | DATA.map(lambda d: b"K\x01VL" + d))
def test_random_bytes_in_an_internal_store_are_refused_as_corrupt_state(serde, data):
    try:
        serde.deserialize("store", data)
    except CorruptStateError as e:
        assert "store 'store'" in str(e)


def _driver(config=None):
    b = StreamsBuilder()
    b.stream("in", key_serde=Serdes.Integer(), value_serde=Serdes.Json()).to(
        "out", key_serde=Serdes.Integer(), value_serde=Serdes.Json())
    d = TopologyTestDriver(b.build(), config)
    return d, d.create_input_topic("in", Serdes.ByteArray(), Serdes.ByteArray())


@pytest.mark.parametrize("key,value,part", [
    (b"\x00\x01", b"1", "KEY"), (b"\x00\x00\x00\x01", b"{oops", "VALUE"),
    (b"\x00\x00\x00\x01", b"\xff", "VALUE"), (b"x" * 9, b"\xff", "KEY")])
def test_a_source_names_topic_partition_offset_and_key_or_value(key, value, part):
    d, i = _driver()
    with d:
        i.pipe_input(b"\x00\x00\x00\x07", b"[1]")
        with pytest.raises(SerializationError) as e:
            i.pipe_input(key, value)
    message = str(e.value)
    assert message.startswith(f"cannot deserialize the {part} of the record at topic 'in', "
                              f"partition 0, offset 1 ")
    serde = "Serdes.Integer()" if part == "KEY" else "Serdes.Json()"
    assert f"with the source's {part.lower()} serde {serde}" in message
    assert "deserialization.exception.handler=log_and_continue" in message


@settings(max_examples=200, deadline=None)
@given(key=DATA, value=DATA)
def test_any_input_record_is_processed_or_refused_by_name(key, value):
    d, i = _driver({"deserialization.exception.handler": "log_and_continue"})
    with d:
        i.pipe_input(key, value)  # skipped (and counted), never a crash
    d, i = _driver()
    with d:
        try:
            i.pipe_input(key, value)
        except SerializationError as e:
            assert "topic 'in', partition 0, offset 0" in str(e)
            assert (" the KEY " in str(e)) != (" the VALUE " in str(e))
