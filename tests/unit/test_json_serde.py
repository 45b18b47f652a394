"""``Serdes.Json()`` on orjson: each difference from the standard library's ``json`` (what the
serde used before) and the decision taken (docs/serdes.md, "Serdes.Json() and Java's JSON
serializers"); Jackson's bytes are compared in tests/conformance/test_json_java.py."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from collections import namedtuple

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Serdes
from kspark.errors import SerializationError

J = Serdes.Json()


def _before(value) -> bytes:
    """The bytes Serdes.Json() wrote before orjson."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def test_non_ascii_is_written_as_utf8_as_jackson_does():
    assert J.serialize("t", {"name": "Zoë", "e": "😀"}) == '{"name":"Zoë","e":"😀"}'.encode()
    assert J.deserialize("t", _before({"name": "Zoë"})) == {"name": "Zoë"}  # old records


@pytest.mark.parametrize("value, raw", [
    (0.1, b"0.1"), (1.0, b"1.0"), (1e16, b"1e+16"), (1e-5, b"0.00001"), (-0.0, b"-0.0"),
    (1e7, b"10000000.0"), (2.5e-8, b"2.5e-8")], ids=repr)
def test_floats_are_written_in_their_shortest_round_trip_form(value, raw):
    assert J.serialize("t", value) == raw
    assert J.deserialize("t", raw) == value
    assert J.deserialize("t", _before(value)) == value


@pytest.mark.parametrize("value", [2**64, -2**63 - 1, 2**200, [1, {"n": -10**40, "s": "é"}]],
                         ids=lambda v: repr(v)[:20])
def test_integers_beyond_64_bits_are_written_as_before_and_read_exactly(value):
    raw = J.serialize("t", value)
    assert raw == _before(value)  # the standard library writes the record, all ASCII
    assert J.deserialize("t", raw) == value


def test_64_bit_integers_stay_on_orjson_and_read_exactly():
    for n in (2**64 - 1, -2**63, 1234567890123456789):
        assert J.serialize("t", {"n": n, "s": "é"}) == f'{{"n":{n},"s":"é"}}'.encode()
        assert J.deserialize("t", str(n).encode()) == n
    assert J.deserialize("t", b'{"id":"12345678901234567890123"}') == {
        "id": "12345678901234567890123"}  # a digit run in a string: read the same way


@pytest.mark.parametrize("value", [float("nan"), [1.0, float("inf")], {"a": None, "b": -math.inf}],
                         ids=repr)
def test_nan_and_infinities_are_written_as_before_not_as_null(value):
    raw = J.serialize("t", value)
    assert raw == _before(value) and b"null" not in raw.replace(b'"a":null', b"")
    back = J.deserialize("t", raw)
    assert repr(back) == repr(value)  # nan != nan: compare the text


def test_a_null_without_nan_stays_on_orjson():
    assert J.serialize("t", {"a": None, "é": 1.5}) == '{"a":null,"é":1.5}'.encode()


def test_non_string_keys_become_text_as_json_dumps_made_them():
    value = {1: "a", 1.5: "b", False: "c", None: "d", "s": "e"}
    assert J.serialize("t", value) == _before(value)


def test_tuples_namedtuples_and_float_subclasses_are_written_as_before():
    point = namedtuple("Point", "x y")

    class Celsius(float):
        pass

    for value in [(1, 2), point(1, 2), {"t": Celsius(21.5)}]:
        assert J.serialize("t", value) == _before(value)


def test_a_lone_surrogate_is_written_as_an_escape_as_before():
    assert J.serialize("t", "a\ud800") == b'"a\\ud800"'
    assert J.deserialize("t", b'"a\\ud800"') == "a\ud800"


def test_nesting_deeper_than_orjson_takes_is_written_as_before():
    value: list = []
    for _ in range(400):
        value = [value]
    assert J.deserialize("t", J.serialize("t", value)) == value


class Kind(enum.Enum):
    CLICK = "click"


@dataclasses.dataclass
class View:
    user: str
    at: datetime.datetime
    id: uuid.UUID
    kind: Kind


def test_dataclasses_datetimes_uuids_and_enums_are_now_taken():
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert J.serialize("t", View("ann", at, u, Kind.CLICK)) == (
        b'{"user":"ann","at":"2026-01-02T03:04:05+00:00",'
        b'"id":"12345678-1234-5678-1234-567812345678","kind":"click"}')
    assert J.serialize("t", datetime.date(2026, 1, 2)) == b'"2026-01-02"'


def test_a_nan_in_a_dataclass_is_refused_rather_than_written_as_null():
    @dataclasses.dataclass
    class Reading:
        value: float

    with pytest.raises(SerializationError, match="NaN or an infinity"):
        J.serialize("t", Reading(math.nan))


@pytest.mark.parametrize("value", [{1, 2}, b"ab", object(), {"k": {1}}],
                         ids=lambda v: type(v).__name__)
def test_what_json_cannot_encode_is_still_refused_naming_the_topic(value):
    with pytest.raises(SerializationError, match=r"Serdes.Json\(\) cannot serialize .* for "
                       r"topic 'orders': JSON cannot encode it"):
        J.serialize("orders", value)


@pytest.mark.parametrize("raw, value", [
    (b"NaN", "nan"), (b"[Infinity,-Infinity]", "[inf, -inf]"), (b"1e999", "inf"),
    (b"\xef\xbb\xbf[1]", "[1]"), ('{"é":1}'.encode("utf-16"), "{'é': 1}"),
    (b' {"a" : [1, 2.5] } ', "{'a': [1, 2.5]}")], ids=repr)
def test_what_json_loads_read_is_still_read(raw, value):
    assert repr(J.deserialize("t", raw)) == value


@pytest.mark.parametrize("raw", [b"{oops", b"\xff", b"", b"[" * 5000, b"nul"], ids=repr)
def test_bytes_that_are_not_json_are_a_serialization_error_naming_the_topic(raw):
    with pytest.raises(SerializationError, match=r"Serdes.Json\(\) cannot deserialize .* of "
                       r"'orders'"):
        J.deserialize("orders", raw)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=JSON.filter(lambda v: v is not None))  # None is a Kafka null
def test_any_json_value_reads_back_as_the_standard_library_read_it(value):
    raw = J.serialize("t", value)
    expected = json.loads(_before(value))
    assert J.deserialize("t", raw) == expected
    assert json.loads(raw) == expected  # and the standard library reads the new bytes
