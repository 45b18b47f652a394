"""No silent garbage (issue 40): as Java's serializers, every built-in serde refuses a value
of a type it does not take, naming the topic, the serde and the value; ``map``,
``flat_map`` and a table's ``group_by`` refuse a result that is not a key-value pair."""

from __future__ import annotations

import uuid

import pytest

from kspark import Serdes, StreamsBuilder, TimeWindows
from kspark.errors import ProcessorError, SerializationError
from kspark.processor import KeyValue
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
AVRO = {"type": "record", "name": "View",
        "fields": [{"name": "user", "type": "string"}, {"name": "n", "type": "int"}]}
U = uuid.UUID("12345678-1234-5678-1234-567812345678")

# (serde, a value it takes, a value of a type it refuses)
BUILT_IN = [
    (Serdes.String(), "héllo", {"a": 1}),
    (Serdes.Integer(), 7, True),
    (Serdes.Long(), -7, 1.5),
    (Serdes.Short(), 300, "300"),
    (Serdes.Float(), 1.5, False),
    (Serdes.Double(), 2.25, "2.25"),
    (Serdes.Bytes(), b"ab", 5),
    (Serdes.ByteArray(), b"\x00\x01", "ab"),
    (Serdes.UUID(), U, 5),
    (Serdes.Void(), None, 0),
    (Serdes.Json(), {"a": [1, 2]}, {1, 2}),
    (Serdes.Avro(AVRO), {"user": "ann", "n": 3}, "ann"),
]


def _driver(build, in_serdes=(S, S)):
    b = StreamsBuilder()
    build(b.stream("in", key_serde=in_serdes[0], value_serde=in_serdes[1]))
    d = TopologyTestDriver(b.build(), {"default.key.serde": "String",
                                       "default.value.serde": "String"})
    return d, d.create_input_topic("in", *in_serdes)


@pytest.mark.parametrize("serde,good,bad", BUILT_IN, ids=lambda x: repr(x)[:24])
def test_every_built_in_serde_round_trips_its_type_and_refuses_another(serde, good, bad):
    assert serde.deserialize("t", serde.serialize("t", good)) == good
    with pytest.raises(SerializationError) as e:
        serde.serialize("orders", bad)
    message = str(e.value)
    assert repr(serde) in message and "'orders'" in message
    assert f"cannot serialize {type(bad).__name__} " in message


@pytest.mark.parametrize("serde", [s for s, _, _ in BUILT_IN], ids=lambda x: repr(x)[:24])
def test_none_is_a_tombstone_for_every_built_in_serde(serde):
    assert serde.serialize("t", None) is None


def test_string_serde_refuses_a_dict_naming_topic_serde_and_type():
    with pytest.raises(SerializationError, match=r"Serdes.String\(\) cannot serialize dict "
                       r"\{'a': 1\} for topic 'out': it takes str only; .*map_values.*"
                       r"Serdes.Json\(\)"):
        S.serialize("out", {"a": 1})


@pytest.mark.parametrize("value", [b"xy", 5, 1.5, True, ["a"]], ids=repr)
def test_string_serde_writes_no_python_repr_of_other_types(value):
    with pytest.raises(SerializationError, match="it takes str only"):
        S.serialize("out", value)


def test_string_serde_still_takes_a_str_subclass():
    class Name(str):
        pass

    assert S.serialize("t", Name("ann")) == b"ann"


@pytest.mark.parametrize("serde", [Serdes.Integer(), Serdes.Long(), Serdes.Short(),
                                   Serdes.Float(), Serdes.Double()], ids=repr)
def test_number_serdes_refuse_a_bool(serde):
    with pytest.raises(SerializationError, match="not bool"):
        serde.serialize("t", True)


@pytest.mark.parametrize("serde,value,fix", [
    (Serdes.Short(), 40000, "16-bit"), (Serdes.Integer(), 2**31, "32-bit"),
    (Serdes.Long(), 2**63, "64-bit"), (Serdes.Float(), 1e300, "32-bit float")], ids=repr)
def test_a_number_out_of_range_is_refused_with_the_range_named(serde, value, fix):
    with pytest.raises(SerializationError, match=f"out of range for a {fix}"):
        serde.serialize("t", value)


def test_float_serdes_take_an_int():
    assert Serdes.Double().serialize("t", 2) == Serdes.Double().serialize("t", 2.0)
    assert Serdes.Float().serialize("t", 2) == Serdes.Float().serialize("t", 2.0)


def test_byte_serdes_take_bytearray_and_memoryview_but_not_an_int():
    assert Serdes.ByteArray().serialize("t", bytearray(b"ab")) == b"ab"
    assert Serdes.Bytes().serialize("t", memoryview(b"ab")) == b"ab"
    with pytest.raises(SerializationError, match="bytes, bytearray or memoryview"):
        Serdes.Bytes().serialize("t", 3)  # bytes(3) would be b"\x00\x00\x00"


def test_uuid_serde_takes_a_uuid_str_and_refuses_other_text():
    assert Serdes.UUID().serialize("t", str(U)) == str(U).encode()
    with pytest.raises(SerializationError, match="not a UUID"):
        Serdes.UUID().serialize("t", "nope")


def test_json_serde_names_what_json_cannot_encode():
    with pytest.raises(SerializationError, match=r"Serdes.Json\(\) cannot serialize set .* for "
                       r"topic 't': JSON cannot encode it"):
        Serdes.Json().serialize("t", {1, 2})


def test_avro_serde_refusals_are_serialization_errors_naming_the_topic():
    avro = Serdes.Avro(AVRO)
    with pytest.raises(SerializationError, match="for topic 't': it takes a dict"):
        avro.serialize("t", "ann")
    with pytest.raises(SerializationError, match="for topic 't': it does not match the schema"):
        avro.serialize("t", {"user": 1, "n": 2})


def test_a_wrong_value_at_a_sink_names_the_sink_node_and_topic():
    d, i = _driver(lambda s: s.map_values(lambda v: {"v": v}).to("out", key_serde=S,
                                                                  value_serde=S))
    with pytest.raises(SerializationError) as e:
        i.pipe_input("k", "x")
    message = str(e.value)
    assert "sink 'KSTREAM-SINK-" in message and "topic 'out'" in message
    assert "Serdes.String() cannot serialize dict {'v': 'x'}" in message
    assert isinstance(e.value.__cause__, SerializationError)


def test_a_windowed_key_to_a_string_serde_is_refused_with_the_windowed_serde_named():
    d, i = _driver(lambda s: s.group_by_key()
                   .windowed_by(TimeWindows.of_size_with_no_grace(10)).count().to_stream()
                   .to("out", key_serde=S, value_serde=L))
    with pytest.raises(SerializationError, match=r"cannot serialize Windowed .*TimeWindowedSerde"
                       r"\(Serdes.String\(\), window_size_ms\) or SessionWindowedSerde"):
        i.pipe_input("k", "x")


def test_map_returning_a_dict_is_refused():
    d, i = _driver(lambda s: s.map(lambda k, v: {k: v}).to("out"))
    with pytest.raises(ProcessorError, match=r"processor 'KSTREAM-MAP-\d+': TypeError: map\(\) "
                       r"must return a KeyValue or a \(key, value\) tuple, got dict \{'k': 'x'\} "
                       r"\(from <lambda> at .*test_no_silent_garbage.py:\d+\)"):
        i.pipe_input("k", "x")


@pytest.mark.parametrize("result", [["k", "v"], "kv", ("k", "v", 1), None], ids=repr)
def test_map_returning_anything_but_a_pair_is_refused(result):
    d, i = _driver(lambda s: s.map(lambda k, v: result).to("out"))
    with pytest.raises(ProcessorError, match=f"got {type(result).__name__} "):
        i.pipe_input("k", "x")


def test_flat_map_elements_must_be_pairs():
    d, i = _driver(lambda s: s.flat_map(lambda k, v: [(k, v), [k, v]]).to("out"))
    with pytest.raises(ProcessorError, match=r"each element flat_map\(\) returns must be a "
                       r"KeyValue or a \(key, value\) tuple, got list \['k', 'x'\]"):
        i.pipe_input("k", "x")


@pytest.mark.parametrize("result", [{"k": "v"}, "kv", None, 3], ids=repr)
def test_flat_map_must_return_an_iterable_of_pairs_not_a_dict(result):
    d, i = _driver(lambda s: s.flat_map(lambda k, v: result).to("out"))
    with pytest.raises(ProcessorError, match=r"flat_map\(\) must return an iterable of KeyValue "
                       f"or \\(key, value\\) tuples \\(say, a list\\), got "
                       f"{type(result).__name__} "):
        i.pipe_input("k", "x")


def test_keyvalue_and_two_tuples_are_accepted():
    def build(s):
        s.map(lambda k, v: KeyValue.pair(k + "1", v)).to("a")
        s.map(lambda k, v: (k + "2", v)).to("b")
        s.flat_map(lambda k, v: (KeyValue(k, v), (k * 2, v))).to("c")
        s.flat_map(lambda k, v: (KeyValue(k + str(n), v) for n in range(2))).to("d")

    d, i = _driver(build)
    i.pipe_input("k", "x")
    out = {t: d.create_output_topic(t, S, S).read_key_values_to_list() for t in "abcd"}
    assert out == {"a": [("k1", "x")], "b": [("k2", "x")], "c": [("k", "x"), ("kk", "x")],
                   "d": [("k0", "x"), ("k1", "x")]}
    assert KeyValue.pair("k", 1) == ("k", 1) and KeyValue("k", 1).value == 1


def test_a_table_group_by_selector_must_return_a_pair():
    def run(selector):
        b = StreamsBuilder()
        (b.table("users", key_serde=S, value_serde=S)
         .group_by(selector, key_serde=S, value_serde=S).count().to_stream()
         .to("out", key_serde=S, value_serde=L))
        d = TopologyTestDriver(b.build())
        d.create_input_topic("users", S, S).pipe_input("ann", "paris")
        return d.create_output_topic("out", S, L).read_key_values_to_list()

    assert run(lambda user, city: KeyValue(city, user)) == [("paris", 1)]
    with pytest.raises(ProcessorError, match=r"group_by\(\)'s selector must return a KeyValue or "
                       r"a \(key, value\) tuple, got str 'paris'"):
        run(lambda user, city: city)
