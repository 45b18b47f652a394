"""Interactive queries (IQv2, ``kspark.query``) against real topologies in the
TopologyTestDriver: every query type on the store kinds that answer it, result order,
partition selection, position bounds, unknown query types, wrong and unknown stores.

The rules are Kafka Streams' (``org.apache.kafka.streams.query`` and the Metered*Store
query handlers)."""


import pytest

from kspark import Serdes, Window, \
    Windowed
from kspark.errors import UnknownStateStoreError
from kspark.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    RangeQuery,
    StateQueryRequest,
    TimestampedKeyQuery,
    TimestampedRangeQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
    dominates,
)
from kspark.state import ValueAndTimestamp, VersionedRecord

S, L = Serdes.String(), Serdes.Long()


def ask(d, store, query, **how):
    r = StateQueryRequest.in_store(store).with_query(query)
    for name, arg in how.items():
        r = getattr(r, name)(*([] if arg is True else [arg]))
    return d.query(r)


def only(d, store, query, **how):
    return ask(d, store, query, **how).get_partition_results()[0]


def pairs(it):
    return [tuple(kv) for kv in it]


def test_key_query_answers_the_plain_value_even_of_a_timestamped_store(dsl, papi):
    assert only(dsl, "counts", KeyQuery.with_key("a")).get_result() == 2
    assert only(dsl, "counts", KeyQuery.with_key("zz")).get_result() is None
    assert only(papi, "mem", KeyQuery.with_key("a").skip_cache()).get_result() == 1
    assert only(papi, "disk", KeyQuery.with_key("c")).get_result() == 3


def test_timestamped_key_query_needs_a_store_keeping_timestamps(dsl, papi):
    assert only(dsl, "counts", TimestampedKeyQuery.with_key("a")).get_result() == \
        ValueAndTimestamp(2, 12)
    r = only(papi, "mem", TimestampedKeyQuery.with_key("a"))
    assert r.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
    assert "key-value store 'mem'" in r.get_failure_message()
    assert "TimestampedKeyQuery" in r.get_failure_message()


@pytest.mark.parametrize("store", ["mem", "disk"])
def test_range_queries_follow_key_order_and_bounds(papi, store):
    assert pairs(only(papi, store, RangeQuery.with_no_bounds()).get_result()) == [
        ("a", 1), ("b", 2), ("c", 3)]
    assert pairs(only(papi, store, RangeQuery.with_range("b", "c")).get_result()) == [
        ("b", 2), ("c", 3)]
    assert pairs(only(papi, store, RangeQuery.with_upper_bound("b")).get_result()) == [
        ("a", 1), ("b", 2)]
    assert pairs(only(papi, store, RangeQuery.with_lower_bound("b")
                      .with_descending_keys()).get_result()) == [("c", 3), ("b", 2)]
    assert pairs(only(papi, store, RangeQuery.with_no_bounds().with_descending_keys()
                      .with_ascending_keys()).get_result()) == [("a", 1), ("b", 2), ("c", 3)]


def test_range_and_timestamped_range_of_a_dsl_store(dsl, papi):
    assert pairs(only(dsl, "counts", RangeQuery.with_no_bounds()).get_result()) == [
        ("a", 2), ("b", 1), ("c", 1)]
    assert pairs(only(dsl, "counts", TimestampedRangeQuery.with_range("a", "b")
                      .with_descending_keys()).get_result()) == [
        ("b", ValueAndTimestamp(1, 2)), ("a", ValueAndTimestamp(2, 12))]
    r = only(papi, "mem", TimestampedRangeQuery.with_no_bounds())
    assert r.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE


def test_window_key_query_answers_a_dsl_window_stores_values_as_stored(dsl):
    r = only(dsl, "windowed", WindowKeyQuery.with_key_and_window_start_range("a", 0, 100))
    assert pairs(r.get_result()) == [(0, ValueAndTimestamp(1, 1)), (10, ValueAndTimestamp(1, 12))]
    r = only(dsl, "windowed", WindowKeyQuery.with_key_and_window_start_range("a", 5, 100))
    assert pairs(r.get_result()) == [(10, ValueAndTimestamp(1, 12))]


def test_window_range_query_by_start_range_on_window_stores_by_key_on_session_stores(dsl):
    r = only(dsl, "windowed", WindowRangeQuery.with_window_start_range(0, 5))
    assert sorted((kv.key.key, kv.key.window.start, kv.value.value) for kv in r.get_result()) == [
        ("a", 0, 1), ("b", 0, 1), ("c", 0, 1)]
    assert only(dsl, "windowed", WindowRangeQuery.with_key("a")).get_failure_reason() is \
        FailureReason.UNKNOWN_QUERY_TYPE
    r = only(dsl, "sessions", WindowRangeQuery.with_key("a"))
    assert pairs(r.get_result()) == [(Windowed("a", Window(1, 1)), "x"),
                                      (Windowed("a", Window(12, 12)), "z")]
    r = only(dsl, "sessions", WindowRangeQuery.with_window_start_range(0, 5))
    assert r.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
    assert "SessionStores only support WindowRangeQuery.with_key" in r.get_failure_message()


def test_versioned_key_query_answers_the_record_valid_then_with_its_valid_to(dsl):
    assert only(dsl, "rates", VersionedKeyQuery.with_key("eur")).get_result() == \
        VersionedRecord(3, 30, None)
    assert only(dsl, "rates", VersionedKeyQuery.with_key("eur").as_of(25)).get_result() == \
        VersionedRecord(2, 20, 30)
    assert only(dsl, "rates", VersionedKeyQuery.with_key("eur").as_of(5)).get_result() is None
    assert only(dsl, "rates", VersionedKeyQuery.with_key("usd")).get_result() is None


def test_multi_versioned_key_query_lists_versions_valid_in_the_range(dsl):
    q = MultiVersionedKeyQuery.with_key("eur")
    assert list(only(dsl, "rates", q).get_result()) == [
        VersionedRecord(3, 30, None), VersionedRecord(2, 20, 30), VersionedRecord(1, 10, 20)]
    assert list(only(dsl, "rates", q.from_time(15).to_time(25)
                     .with_ascending_timestamps()).get_result()) == [
        VersionedRecord(1, 10, 20), VersionedRecord(2, 20, 30)]
    assert list(only(dsl, "rates", q.from_time(31).with_descending_timestamps())
                .get_result()) == [VersionedRecord(3, 30, None)]
    bad = only(dsl, "rates", q.from_time(20).to_time(10))
    assert bad.get_failure_reason() is FailureReason.STORE_EXCEPTION
    assert "ValueError" in bad.get_failure_message()


def test_a_store_kind_refuses_query_types_it_does_not_answer(dsl):
    cases = [("rates", KeyQuery.with_key("eur")), ("counts", VersionedKeyQuery.with_key("a")),
             ("windowed", KeyQuery.with_key("a")), ("sessions", RangeQuery.with_no_bounds())]
    for store, query in cases:
        r = only(dsl, store, query)
        assert r.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE, store
        assert type(query).__name__ in r.get_failure_message()
        assert repr(store) in r.get_failure_message()


def test_partition_selection_answers_partition_zero_and_not_present_for_others(dsl):
    q = KeyQuery.with_key("a")
    assert set(ask(dsl, "counts", q).get_partition_results()) == {0}
    res = ask(dsl, "counts", q, with_partitions={0, 2}).get_partition_results()
    assert res[0].get_result() == 2
    assert res[2].get_failure_reason() is FailureReason.NOT_PRESENT
    assert set(ask(dsl, "counts", q, with_partitions={3}).get_partition_results()) == {3}
    assert ask(dsl, "counts", q, with_partitions={0}).get_only_partition_result() \
        .get_result() == 2


def test_position_is_the_processed_offsets_and_bounds_are_checked(dsl):
    assert ask(dsl, "counts", KeyQuery.with_key("a")).get_position() == Position.from_map(
        {"in": {0: 3}, "rates": {0: 2}})
    met = PositionBound.at(Position.from_map({"in": {0: 3}}))
    assert only(dsl, "counts", KeyQuery.with_key("a"), with_position_bound=met) \
        .get_result() == 2
    ahead = PositionBound.at(Position.from_map({"in": {0: 7}, "other": {0: 1}}))
    r = only(dsl, "counts", KeyQuery.with_key("a"), with_position_bound=ahead)
    assert r.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
    msg = r.get_failure_message()
    assert "topic 'in' partition 0 is at offset 3, the bound asks for 7 (4 behind)" in msg
    assert "topic 'other' partition 0 has seen nothing" in msg
    assert r.get_position() == Position.from_map({"in": {0: 3}, "rates": {0: 2}})
    # a bound on another partition does not hold back partition 0; require_active drops it
    other = PositionBound.at(Position.from_map({"in": {5: 99}}))
    assert only(dsl, "counts", KeyQuery.with_key("a"), with_position_bound=other).is_success()
    assert only(dsl, "counts", KeyQuery.with_key("a"), with_position_bound=ahead,
                require_active=True).is_success()


def test_execution_info_is_collected_only_when_asked(dsl):
    assert only(dsl, "counts", KeyQuery.with_key("a")).get_execution_info() == []
    info = only(dsl, "counts", KeyQuery.with_key("a"), enable_execution_info=True) \
        .get_execution_info()
    assert len(info) == 1 and "'counts'" in info[0]


def test_an_unknown_store_lists_the_stores(dsl):
    with pytest.raises(UnknownStateStoreError, match=r"'nope'.*\['counts'.*'windowed'\]"):
        ask(dsl, "nope", KeyQuery.with_key("a"))


def test_a_failed_result_raises_on_get_result(dsl):
    r = only(dsl, "rates", KeyQuery.with_key("eur"))
    with pytest.raises(Exception, match="UNKNOWN_QUERY_TYPE"):
        r.get_result()


def test_position_keeps_the_largest_offset_and_dominates_checks_every_component():
    p = Position.empty().with_component("t", 0, 5).with_component("t", 0, 2)
    assert p.to_map() == {"t": {0: 5}} and not p.is_empty()
    merged = p.copy().merge(Position.from_map({"t": {0: 1, 1: 4}, "u": {0: 0}}))
    assert merged.to_map() == {"t": {0: 5, 1: 4}, "u": {0: 0}} and p.to_map() == {"t": {0: 5}}
    assert merged.get_topics() == {"t", "u"} and merged.get_partition_positions("x") == {}
    assert dominates(merged, PositionBound.at(p)) and not dominates(p, PositionBound.at(merged))
    assert dominates(Position.empty(), PositionBound.unbounded())
    assert dominates(p, PositionBound.at(Position.from_map({"t": {0: 5, 1: 9}})), partition=0)
    assert not dominates(p, PositionBound.at(Position.from_map({"t": {0: 5, 1: 9}})))
