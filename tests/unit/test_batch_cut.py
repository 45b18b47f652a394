"""Where a capped micro-batch ends (``_spark/batch_cut.py``): one topic by lag, several by
time, so that a task merging them never runs ahead of a partition that still has records."""

from __future__ import annotations

from kspark._spark.batch_cut import cap_by_lag, cap_by_time, cut_at


def _topics(**stamps: list[int]):
    """start, ends, first_at and newest over in-memory partitions 0 of ``stamps``' topics."""
    start = {t: {"0": 0} for t in stamps}
    ends = {t: {"0": len(v)} for t, v in stamps.items()}
    probes: list[int] = []

    def first_at(c: int) -> dict:
        probes.append(c)
        return {(t, 0): next((i for i, x in enumerate(v) if x >= c), None)
                for t, v in stamps.items()}

    newest = max((x for v in stamps.values() for x in v), default=None)
    return start, ends, first_at, newest, probes


def test_a_batch_within_the_cap_reads_every_partition_to_its_end():
    start, ends, first_at, newest, probes = _topics(a=[1, 2], b=[3])
    assert cap_by_time(start, ends, 3, first_at, newest) == ends
    assert probes == []


def test_one_topic_is_shared_in_proportion_to_lag_each_partition_at_least_one():
    assert cap_by_lag({"t": {"0": 0, "1": 0, "2": 5}}, {"t": {"0": 90, "1": 1, "2": 15}},
                      10) == {"t": {"0": 8, "1": 1, "2": 6}}


def test_several_topics_end_before_one_timestamp():
    start, ends, first_at, newest, _ = _topics(s=[1, 2, 3, 4, 5, 6], t=[1, 3, 5, 7, 9, 11])
    cut = cap_by_time(start, ends, 6, first_at, newest)
    rows = {n: [x for x in v[:cut[n]["0"]]] for n, v in
            {"s": [1, 2, 3, 4, 5, 6], "t": [1, 3, 5, 7, 9, 11]}.items()}
    edge = min(v[cut[n]["0"]] for n, v in {"s": [1, 2, 3, 4, 5, 6],
                                           "t": [1, 3, 5, 7, 9, 11]}.items()
               if cut[n]["0"] < len(v))
    assert 3 <= sum(map(len, rows.values())) <= 6
    assert all(x < edge for v in rows.values() for x in v)  # nothing at or after the cut


def test_a_tables_earlier_rows_come_in_the_same_batch_as_the_stream_records_after_them():
    # a table topic written ahead of a stream (W4): cut by lag, the first batch would hold
    # half of each, stream records at 500-999 whose table rows were left for the next batch
    table, stream = list(range(0, 2000, 2)), list(range(1000, 2000))
    start, ends, first_at, newest, _ = _topics(table=table, stream=stream)
    cut = cap_by_time(start, ends, 1000, first_at, newest)
    last_stream = stream[cut["stream"]["0"] - 1] if cut["stream"]["0"] else -1
    assert table[cut["table"]["0"]] > last_stream  # every table row before it is in
    by_lag = cap_by_lag(start, ends, 1000)
    assert table[by_lag["table"]["0"]] < stream[by_lag["stream"]["0"] - 1]


def test_more_records_at_the_oldest_timestamp_than_the_cap_are_cut_by_lag():
    start, ends, first_at, newest, _ = _topics(a=[5] * 10, b=[5] * 10)
    assert cap_by_time(start, ends, 4, first_at, newest) == cap_by_lag(start, ends, 4)


def test_unknown_timestamps_are_cut_by_lag():
    start, ends, first_at, _, _ = _topics(a=[1, 2, 3], b=[1, 2, 3])
    assert cap_by_time(start, ends, 2, first_at, None) == cap_by_lag(start, ends, 2)


def test_a_partition_without_a_record_at_the_cut_reads_to_its_end():
    assert cut_at({"a": {"0": 0}}, {"a": {"0": 7}}, {("a", 0): None}) == {"a": {"0": 7}}


def test_an_older_record_after_the_start_keeps_the_partition_at_its_start():
    # Kafka's answer is the first offset in the whole log: it may lie before the start
    assert cut_at({"a": {"0": 4}}, {"a": {"0": 7}}, {("a", 0): 1}) == {"a": {"0": 4}}


def test_the_bisection_is_bounded_by_the_timestamps_width():
    big = 1_800_000_000_000
    start, ends, first_at, newest, probes = _topics(a=[big + i for i in range(100)],
                                                    b=[big + i for i in range(100)])
    cut = cap_by_time(start, ends, 50, first_at, newest)
    assert 25 <= sum(c["0"] for c in cut.values()) <= 50
    assert len(probes) <= 1 + 64
