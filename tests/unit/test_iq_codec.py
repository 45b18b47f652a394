"""The interactive-query wire codec: every query and every result type survives encode ->
JSON text -> decode, read on the asking side by a twin of the store over an empty byte
store (only names, serdes and kind are needed); malformed payloads are refused with an
InvalidStateStoreError and nothing in them is ever executed."""

import base64
import builtins
import json
import pickle

import pytest

from kspark import Serdes, Window, Windowed
from kspark._engine.query import internal as iq
from kspark._iq.codec import decode_query, decode_result, encode_query, \
    encode_result, parse_json_key, render_json
from kspark._iq.codec_queries import QUERY_TYPES
from kspark._engine.query.evaluate import evaluate
from kspark._engine.state.bytes_stores import InMemoryBytesStore
from kspark._engine.state.kv import KeyValue
from kspark.errors import InvalidStateStoreError
from kspark.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    QueryResult,
    RangeQuery,
    TimestampedKeyQuery,
    TimestampedRangeQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from kspark.state import Stores, ValueAndTimestamp, VersionedRecord

S, L = Serdes.String(), Serdes.Long()

QUERIES = [
    ("counts", KeyQuery.with_key("a")),
    ("counts", KeyQuery.with_key("a").skip_cache()),
    ("counts", KeyQuery.with_key("missing")),
    ("counts", TimestampedKeyQuery.with_key("a")),
    ("counts", RangeQuery.with_range("a", "b").with_descending_keys()),
    ("counts", RangeQuery.with_upper_bound("b")),
    ("counts", TimestampedRangeQuery.with_lower_bound("b").with_ascending_keys()),
    ("counts", iq.AllQuery(reverse=True)),
    ("counts", iq.AllQuery(timestamped=True)),
    ("counts", iq.PrefixScanQuery(b"a", timestamped=True)),
    ("counts", iq.ApproximateNumEntriesQuery()),
    ("windowed", WindowKeyQuery.with_key_and_window_start_range("a", 0, 100)),
    ("windowed", WindowRangeQuery.with_window_start_range(0, 100)),
    ("windowed", iq.WindowFetchQuery("a", 0, 100, backward=True)),
    ("windowed", iq.WindowFetchAllQuery(0, 100, timestamped=True)),
    ("windowed", iq.WindowAllQuery(backward=True)),
    ("sessions", WindowRangeQuery.with_key("a")),
    ("sessions", iq.SessionFetchQuery("a", backward=True)),
    ("sessions", iq.SessionFindQuery("a", 0, 20)),
    ("sessions", iq.SessionFetchSessionQuery("a", 12, 12)),
    ("rates", VersionedKeyQuery.with_key("eur")),
    ("rates", VersionedKeyQuery.with_key("eur").as_of(25)),
    ("rates", VersionedKeyQuery.with_key("usd")),
    ("rates", MultiVersionedKeyQuery.with_key("eur").from_time(15).with_ascending_timestamps()),
    ("rates", MultiVersionedKeyQuery.with_key("eur").to_time(25)),
]


def twin(driver, name):
    """The store ``name`` as the asking side has it: built by the same builder over an
    empty in-memory byte store."""
    builder = driver._graph.stores[name][0]
    return builder.typed_store(InMemoryBytesStore(name))


def wire(data):
    return json.loads(json.dumps(data))


def norm(result):
    """A QueryResult as comparable data (iterators read to a list)."""
    if result.is_failure():
        value = (result.get_failure_reason(), result.get_failure_message())
    else:
        value = result.get_result()
        if hasattr(value, "__next__"):
            value = [tuple(e) for e in value]
    return value, result.get_position().to_map(), result.get_execution_info()


def test_every_query_type_is_covered_here():
    assert {type(q).__name__ for _, q in QUERIES} == set(QUERY_TYPES)


@pytest.mark.parametrize("name,query", QUERIES, ids=lambda x: repr(x)[:60])
def test_every_query_and_its_result_round_trip_through_json(dsl, name, query):
    store, asking = dsl.get_state_store(name), twin(dsl, name)
    assert decode_query(wire(encode_query(query, asking)), store) == query
    result = evaluate(query, store, Position.from_map({"in": {0: 3}}), partition=0,
                      collect_execution_info=True)
    assert result.is_success(), result
    expected = norm(evaluate(query, store, Position.from_map({"in": {0: 3}})))
    back = decode_result(wire(encode_result(query, result, store)), query, asking)
    assert norm(back)[:2] == expected[:2] and len(norm(back)[2]) == 1


def test_every_failure_round_trips_with_its_reason_message_and_position(dsl):
    store = twin(dsl, "counts")
    query = KeyQuery.with_key("a")
    for reason in FailureReason:
        failed = QueryResult.for_failure(reason, f"why: {reason.name}")
        failed.set_position(Position.from_map({"in": {0: 3, 2: 1}, "t": {1: 0}}))
        assert norm(decode_result(wire(encode_result(query, failed, store)), query, store)) == \
            norm(failed)


def test_results_of_processor_api_stores_round_trip(papi):
    store = papi.get_state_store("disk")
    for query in (KeyQuery.with_key("a"), RangeQuery.with_no_bounds(), iq.AllQuery()):
        result = evaluate(query, store, Position.empty())
        expected = norm(evaluate(query, store, Position.empty()))
        assert norm(decode_result(wire(encode_result(query, result, store)), query, store)) == \
            expected


@pytest.fixture
def kv():
    return Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, L).build()


def b64(raw):
    return base64.b64encode(raw).decode()


GOOD_QUERY = {"type": "KeyQuery", "key": b64(b"a"), "skips_cache": False}
MALFORMED_QUERIES = [
    [], "KeyQuery", None,
    {"type": "os.system", "key": b64(b"a")},
    {"type": "__import__('os').system('true')"},
    {"type": "KeyValueStore"},
    {"type": "Query"},
    {**GOOD_QUERY, "extra": 1},
    {"type": "KeyQuery", "key": b64(b"a")},
    {**GOOD_QUERY, "key": "not base64!"},
    {**GOOD_QUERY, "key": 5},
    {**GOOD_QUERY, "skips_cache": 1},
    {"type": "RangeQuery", "lower": None, "upper": None, "order": "SIDEWAYS"},
    {"type": "WindowKeyQuery", "key": b64(b"a"), "time_from": True, "time_to": 5},
    {"type": "WindowKeyQuery", "key": b64(b"a"), "time_from": 1.5, "time_to": 5},
    {"type": "WindowKeyQuery", "key": b64(b"a"), "time_from": 0, "time_to": 1 << 70},
    {"type": "PrefixScanQuery", "prefix": [1, 2], "timestamped": False},
]


@pytest.fixture
def nothing_runs(monkeypatch):
    """Fail the test if decoding ever unpickles, evaluates or executes anything."""
    def refuse(*args, **kwargs):
        raise AssertionError("the codec executed something")
    for module, name in ((pickle, "loads"), (builtins, "eval"), (builtins, "exec")):
        monkeypatch.setattr(module, name, refuse)


@pytest.mark.parametrize("payload", MALFORMED_QUERIES, ids=lambda p: repr(p)[:50])
def test_malformed_queries_are_refused_and_nothing_is_executed(kv, payload, nothing_runs):
    with pytest.raises(InvalidStateStoreError, match="malformed interactive-query payload"):
        decode_query(payload, kv)


def test_a_key_its_serde_cannot_read_is_refused(kv):
    longs = Stores.key_value_store_builder(Stores.in_memory_key_value_store("l"), L, L).build()
    with pytest.raises(InvalidStateStoreError, match="serde"):
        decode_query({**GOOD_QUERY, "key": b64(b"abc")}, longs)


OK = {"status": "ok", "result": b64((5).to_bytes(8, "big")), "position": {},
      "execution_info": []}
MALFORMED_RESULTS = [
    [], {"status": "maybe"}, {**OK, "extra": 0}, {**OK, "position": {"t": {"x": 1}}},
    {**OK, "position": {"t": {"0": "1"}}}, {**OK, "position": []},
    {**OK, "execution_info": [1]}, {**OK, "result": b64(pickle.dumps(5))[:-1]},
    {"status": "failed", "reason": "EVERYTHING", "message": "m", "position": {},
     "execution_info": []},
    {"status": "failed", "reason": "NOT_ACTIVE", "message": 5, "position": {},
     "execution_info": []},
]


@pytest.mark.parametrize("payload", MALFORMED_RESULTS, ids=lambda p: repr(p)[:50])
def test_malformed_results_are_refused(kv, payload, nothing_runs):
    with pytest.raises(InvalidStateStoreError, match="malformed"):
        decode_result(payload, KeyQuery.with_key("a"), kv)


def test_malformed_iterator_entries_are_refused(kv):
    for entries in ([[b64(b"a")]], [{"key": b64(b"a")}], [[b64(b"a"), 5]], "x"):
        with pytest.raises(InvalidStateStoreError, match="malformed"):
            decode_result({**OK, "result": entries}, RangeQuery.with_no_bounds(), kv)


def test_render_json_makes_answers_printable():
    assert render_json(KeyValue(Windowed("a", Window(0, 10)), ValueAndTimestamp(b"\x00", 5))) == {
        "key": {"key": "a", "start": 0, "end": 10}, "value": {"value": "AA==", "timestamp": 5}}
    assert render_json(VersionedRecord(1.5, 3, None)) == {"value": 1.5, "timestamp": 3,
                                                          "valid_to": None}
    assert render_json({"n": [1, None, True]}) == {"n": [1, None, True]}
    assert render_json({1: 2}) == "{1: 2}" and render_json(object).startswith("<class")
    json.dumps(render_json([KeyValue("k", {"x": b"y"})]))


def test_parse_json_key_keeps_what_the_key_serde_reads_back(kv):
    longs = Stores.key_value_store_builder(Stores.in_memory_key_value_store("l"), L, L).build()
    assert parse_json_key("7", longs) == 7 and parse_json_key("7", kv) == "7"
    assert parse_json_key('"q"', kv) == "q" and parse_json_key("x y", longs) == "x y"
    assert parse_json_key("true", kv) == "true"
