"""Read-only stores (IQv1: ``driver.store(StoreQueryParameters)``) over the engine's query
code: every read of every store type on real topologies, the store type checked against
the store, and, over several partitions, Java's composite-store rules (first answer of a
single-key read, partitions concatenated in order, a failed partition raised)."""

import pytest

from kspark import Materialized, Serdes, StreamsBuilder, Window, Windowed
from kspark._engine.query.evaluate import evaluate
from kspark._engine.query.facades import ReadOnlyKeyValueStore
from kspark._engine.query.window_facades import ReadOnlySessionStore, ReadOnlyWindowStore
from kspark.errors import InvalidStateStoreError, StateStoreNotAvailableError, \
    UnknownStateStoreError
from kspark.query import FailureReason, Position, QueryResult, StateQueryResult
from kspark.state import Stores, ValueAndTimestamp, VersionedRecord
from kspark.state.queryable import QueryableStoreTypes as T, StoreQueryParameters
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def store(d, name, store_type, partition=None):
    return d.store(StoreQueryParameters.from_name_and_type(name, store_type)
                   .with_partition(partition))


def pairs(it):
    return [tuple(kv) for kv in it]


def test_key_value_facade_reads_plain_values_of_a_dsl_store(dsl):
    s = store(dsl, "counts", T.key_value_store())
    assert s.get("a") == 2 and s.get("zz") is None
    assert pairs(s.range("a", "b")) == [("a", 2), ("b", 1)]
    assert pairs(s.reverse_range("a", "b")) == [("b", 1), ("a", 2)]
    assert pairs(s.all()) == [("a", 2), ("b", 1), ("c", 1)]
    assert pairs(s.reverse_all()) == [("c", 1), ("b", 1), ("a", 2)]
    assert pairs(s.prefix_scan("b", S)) == [("b", 1)]
    assert s.approximate_num_entries() >= 3  # approximate: a cache's entries count too


def test_timestamped_key_value_facade_reads_value_and_timestamp(dsl, papi):
    s = store(dsl, "counts", T.timestamped_key_value_store())
    assert s.get("a") == ValueAndTimestamp(2, 12)
    assert pairs(s.all())[0] == ("a", ValueAndTimestamp(2, 12))
    assert pairs(s.prefix_scan("c", S)) == [("c", ValueAndTimestamp(1, 3))]
    with pytest.raises(InvalidStateStoreError, match=r"'mem' is a key-value store, not a "
                       r"timestamped key-value store: .*QueryableStoreTypes.key_value_store"):
        store(papi, "mem", T.timestamped_key_value_store())


@pytest.mark.parametrize("name", ["mem", "disk"])
def test_processor_api_stores_read_through_the_key_value_facade(papi, name):
    s = store(papi, name, T.key_value_store(), partition=0)
    assert s.get("b") == 2 and pairs(s.range(None, "b")) == [("a", 1), ("b", 2)]
    assert s.approximate_num_entries() >= 3


def test_window_facades(dsl):
    w = store(dsl, "windowed", T.window_store())
    assert w.fetch("a", 10) == 1 and w.fetch("a", 5) is None
    assert pairs(w.fetch("a", 0, 100)) == [(0, 1), (10, 1)]
    assert pairs(w.backward_fetch("a", 0, 100)) == [(10, 1), (0, 1)]
    assert [(kv.key.key, kv.key.window.start) for kv in w.fetch_all(0, 5)] == [
        ("a", 0), ("b", 0), ("c", 0)]
    assert [kv.key.key for kv in w.backward_fetch_all(0, 5)] == ["c", "b", "a"]
    assert [(kv.key.key, kv.key.window.start) for kv in w.all()] == [
        ("a", 0), ("a", 10), ("b", 0), ("c", 0)]
    assert [(kv.key.key, kv.key.window.start) for kv in w.backward_all()] == [
        ("c", 0), ("b", 0), ("a", 10), ("a", 0)]
    tw = store(dsl, "windowed", T.timestamped_window_store())
    assert tw.fetch("a", 10) == ValueAndTimestamp(1, 12)
    assert pairs(tw.fetch("b", 0, 9)) == [(0, ValueAndTimestamp(1, 2))]


def test_session_facade(dsl):
    s = store(dsl, "sessions", T.session_store())
    a1, a12 = Windowed("a", Window(1, 1)), Windowed("a", Window(12, 12))
    assert pairs(s.fetch("a")) == [(a1, "x"), (a12, "z")]
    assert pairs(s.backward_fetch("a")) == [(a12, "z"), (a1, "x")]
    assert pairs(s.find_sessions("a", 5, 20)) == [(a12, "z")]
    assert s.fetch_session("a", 12, 12) == "z" and s.fetch_session("a", 0, 12) is None


def test_versioned_facade(dsl):
    v = store(dsl, "rates", T.versioned_key_value_store())
    assert v.get("eur") == VersionedRecord(3, 30, None)
    assert v.get("eur", 15) == VersionedRecord(1, 10, 20) and v.get("eur", 1) is None


def test_a_facade_reads_the_store_as_it_is_at_each_call(dsl):
    s = store(dsl, "counts", T.key_value_store())
    dsl.create_input_topic("in", S, S).pipe_input("a", "again", 20)
    assert s.get("a") == 3


def test_wrong_type_unknown_store_and_missing_partition_are_refused(dsl):
    with pytest.raises(InvalidStateStoreError, match=r"'windowed' is a window store with "
                       r"timestamps, not a key-value store: query it with QueryableStoreTypes"
                       r"\.timestamped_window_store\(\)"):
        store(dsl, "windowed", T.key_value_store())
    with pytest.raises(InvalidStateStoreError, match="versioned key-value store"):
        store(dsl, "rates", T.key_value_store())
    with pytest.raises(UnknownStateStoreError, match=r"'nope'.*'counts'"):
        store(dsl, "nope", T.key_value_store())
    with pytest.raises(InvalidStateStoreError, match="partition 3"):
        store(dsl, "counts", T.key_value_store(), partition=3)


def test_a_global_store_is_read_through_the_facade_but_not_through_query():
    b = StreamsBuilder()
    b.global_table("g", key_serde=S, value_serde=L, materialized=Materialized.as_("g-store"))
    with TopologyTestDriver(b.build()) as d:
        d.create_input_topic("g", S, L).pipe_input("k", 5)
        assert store(d, "g-store", T.timestamped_key_value_store()).get("k").value == 5
        from kspark.query import KeyQuery, StateQueryRequest
        r = d.query(StateQueryRequest.in_store("g-store").with_query(KeyQuery.with_key("k")))
        assert r.get_global_result().get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE


# Several partitions: one in-memory store per partition behind a hand-made ask().

def _partitioned(entries_by_partition):
    stores = {}
    for p, entries in entries_by_partition.items():
        s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, L) \
            .with_logging_disabled().build()
        for k, v in entries:
            s.put(k, v)
        stores[p] = s
    asked = []

    def ask(query, partitions):
        asked.append(partitions)
        out = StateQueryResult()
        for p in sorted(stores if partitions is None else partitions):
            out.add_result(p, evaluate(query, stores[p], Position.empty(), partition=p))
        return out
    return ask, asked


def test_single_key_reads_take_the_first_answer_and_narrow_to_the_keys_partition():
    ask, asked = _partitioned({0: [("a", 1)], 1: [("b", 2), ("a", 9)]})
    assert ReadOnlyKeyValueStore(ask, "kv").get("a") == 1 and asked == [None]
    narrowed = ReadOnlyKeyValueStore(ask, "kv", partition_of=lambda k: {"a": 1}.get(k))
    assert narrowed.get("a") == 9 and asked[-1] == {1}
    assert narrowed.get("b") == 2 and asked[-1] is None  # partition unknown: all asked


def test_iterating_reads_concatenate_partitions_in_order_and_counts_add_up():
    ask, _ = _partitioned({1: [("c", 3), ("a", 1)], 0: [("b", 2)]})
    s = ReadOnlyKeyValueStore(ask, "kv")
    assert pairs(s.all()) == [("b", 2), ("a", 1), ("c", 3)]
    assert pairs(s.reverse_range("a", "c")) == [("b", 2), ("c", 3), ("a", 1)]
    assert s.approximate_num_entries() == 3


@pytest.mark.parametrize("reason,error", [
    (FailureReason.NOT_ACTIVE, StateStoreNotAvailableError),
    (FailureReason.NOT_PRESENT, StateStoreNotAvailableError),
    (FailureReason.DOES_NOT_EXIST, StateStoreNotAvailableError),
    (FailureReason.NOT_UP_TO_BOUND, InvalidStateStoreError),
    (FailureReason.STORE_EXCEPTION, InvalidStateStoreError),
])
def test_a_failed_partition_raises_by_its_reason(reason, error):
    def ask(query, partitions):
        out = StateQueryResult()
        out.add_result(0, QueryResult.for_failure(reason, "it broke"))
        return out
    for facade, read in [(ReadOnlyKeyValueStore, lambda s: s.get("a")),
                         (ReadOnlyWindowStore, lambda s: s.fetch("a", 0, 10)),
                         (ReadOnlySessionStore, lambda s: s.fetch("a"))]:
        with pytest.raises(error, match=f"'kv' partition 0 cannot answer \\({reason.name}\\)"
                                        ": it broke") as e:
            read(facade(ask, "kv"))
        assert type(e.value) is error
