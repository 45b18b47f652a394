"""auto.offset.reset: where a source partition starts when the application's consumer group
has no committed offset for it (kspark._engine.offset_reset decides; the drivers of both
modes look the offsets up with kspark._host.start_offsets and hand the starts on)."""

import pytest

from kspark._engine.offset_reset import (
    PartitionLog,
    assigned_start,
    reset_policy,
    start_offsets,
    topic_policy,
)
from kspark._host.start_offsets import resolve_start_offsets
from kspark.errors import StreamsError

T0, T1, T2 = ("orders", 0), ("orders", 1), ("clicks", 0)
LOGS = {T0: PartitionLog(10, 50), T1: PartitionLog(0, 8), T2: PartitionLog(5, 5)}


def _all(policy: str) -> dict:
    return {tp: reset_policy(policy) for tp in LOGS}


@pytest.mark.parametrize("policy", ["earliest", "latest", "none", "by_duration:PT1H"])
def test_a_committed_offset_in_the_log_is_where_a_partition_starts_whatever_the_policy(policy):
    committed = {T0: 42, T1: 0, T2: 5}  # the log's bounds are in the log
    assert start_offsets("app", LOGS, committed, _all(policy)) == committed


def test_earliest_starts_a_partition_without_committed_offset_at_its_first_offset():
    assert start_offsets("app", LOGS, {T0: 42}, _all("earliest")) == {T0: 42, T1: 0, T2: 5}


def test_latest_starts_a_partition_without_committed_offset_at_its_end():
    assert start_offsets("app", LOGS, {T0: 42}, _all("latest")) == {T0: 42, T1: 8, T2: 5}


def test_by_duration_starts_at_the_first_offset_at_or_after_now_minus_the_duration():
    since = {T1: 6, T2: None}  # T2: no record that recent
    assert start_offsets("app", LOGS, {T0: 42}, _all("by_duration:PT10M"), since) == {
        T0: 42, T1: 6, T2: 5}


def test_by_duration_starts_at_the_end_when_no_record_is_that_recent():
    assert start_offsets("app", {T1: LOGS[T1]}, {}, {T1: reset_policy("by_duration:P1D")},
                         {T1: None}) == {T1: 8}


def test_none_fails_naming_the_partitions_without_committed_offsets_and_what_to_do():
    with pytest.raises(StreamsError) as e:
        start_offsets("app", LOGS, {T0: 42}, _all("none"))
    text = str(e.value)
    assert "no committed offset for clicks-0, orders-1" in text
    assert "orders-0" not in text
    assert "reset policy is 'none'" in text and "auto.offset.reset" in text
    assert "earliest, latest or by_duration" in text
    assert "kafka-consumer-groups --group app --reset-offsets" in text


def test_none_names_a_committed_offset_outside_the_log():
    with pytest.raises(StreamsError, match=r"committed offset outside the log for orders-0 "
                                           r"\(committed 3, log \[10, 50\]\)"):
        start_offsets("app", {T0: LOGS[T0]}, {T0: 3}, {T0: reset_policy("none")})


@pytest.mark.parametrize("committed", [3, 51])
def test_a_committed_offset_outside_the_log_follows_the_policy(committed):
    assert start_offsets("app", {T0: LOGS[T0]}, {T0: committed},
                         {T0: reset_policy("latest")}) == {T0: 50}


def test_a_source_policy_overrides_the_config():
    assert str(topic_policy(False, "earliest", "latest")) == "earliest"
    assert str(topic_policy(False, "by_duration:PT1H", "none")) == "by_duration:PT1H"
    assert str(topic_policy(False, None, "latest")) == "latest"


def test_internal_topics_always_start_at_earliest():
    assert str(topic_policy(True, "latest", "none")) == "earliest"


@pytest.mark.parametrize("text,ms", [("by_duration:PT1H", 3_600_000),
                                     ("by_duration:P1DT2H", 93_600_000),
                                     ("by_duration:PT0.25S", 250),
                                     ("by_duration:pt5m", 300_000),
                                     ("by_duration:PT0S", 0)])
def test_by_duration_takes_a_java_iso_8601_duration(text, ms):
    assert reset_policy(text).duration_ms == ms


@pytest.mark.parametrize("text", ["smallest", "LATEST", "", "by_duration", "by_duration:",
                                  "by_duration:1H", "by_duration:PT", "by_duration:P1DT",
                                  "by_duration:-PT1H", "by_duration:P1W"])
def test_anything_else_is_not_a_policy_as_in_kafka(text):
    with pytest.raises(ValueError, match="must be 'earliest', 'latest', 'none' or "
                                         "'by_duration:<ISO-8601 duration>'"):
        reset_policy(text)


def test_a_negative_duration_is_refused_saying_so():
    with pytest.raises(ValueError, match="a negative duration is not supported"):
        reset_policy("by_duration:-PT1H")


def test_a_real_time_thread_keeps_the_drivers_start_until_a_task_commits():
    assert assigned_start(None, (-1, 80), -2) == 80  # still nothing committed
    assert assigned_start(85, (-1, 80), -2) == 85  # a task committed since
    assert assigned_start(3, (3, 10), -2) == 10  # the group still has the offset outside the log
    assert assigned_start(12, (3, 10), -2) == 12
    assert assigned_start(7, None, -2) == 7  # a committed offset the driver found valid
    assert assigned_start(None, None, -2) == -2  # an internal topic: the earliest offset


class _Admin:
    """Offsets as the Admin client answers them, and the by-time lookups asked."""

    def __init__(self, logs, times=None):
        self.logs, self.times, self.asked = logs, times or {}, []

    def end_offsets(self, tps, earliest=False):
        return {tp: (self.logs[tp].start if earliest else self.logs[tp].end) for tp in tps}

    def offsets_for_time(self, tps, timestamp_ms):
        self.asked.append((sorted(tps), timestamp_ms))
        return {tp: self.times.get(tp) for tp in tps}


def test_by_duration_looks_up_only_the_partitions_to_reset_at_now_minus_the_duration():
    admin = _Admin(LOGS, {T1: 4, T2: None})
    starts = resolve_start_offsets(admin, "app", sorted(LOGS), {T0: 42}, {},
                                   "by_duration:PT1M", now_ms=1_000_000)
    assert starts == {T0: 42, T1: 4, T2: 5}
    assert admin.asked == [([T2, T1], 1_000_000 - 60_000)]


def test_the_lookup_takes_each_topics_source_policy_over_the_config():
    admin = _Admin(LOGS)
    starts = resolve_start_offsets(admin, "app", sorted(LOGS), {}, {"clicks": "earliest"},
                                   "latest")
    assert starts == {T0: 50, T1: 8, T2: 5} and admin.asked == []
    with pytest.raises(StreamsError, match="no committed offset for orders-0, orders-1"):
        resolve_start_offsets(admin, "app", sorted(LOGS), {}, {"clicks": "earliest"}, "none")


def _real_time_starts(monkeypatch, policy, committed):
    from kspark import StreamsBuilder, StreamsConfig
    from kspark._spark import modes
    from kspark._spark.modes import _real_time_starts

    b = StreamsBuilder()
    b.stream("orders").to("out")
    app = type("App", (), {"graph": b.build()._graph, "config": StreamsConfig({  # noqa: SLF001
        "application.id": "app", "bootstrap.servers": "b:1", "auto.offset.reset": policy})})
    monkeypatch.setattr(modes, "committed_offsets", lambda *a, **k: committed)
    admin = _Admin(LOGS)
    admin.settings = None
    return _real_time_starts(admin, app, {"orders": 2, "out": 1})


def test_real_time_hands_its_threads_only_the_partitions_the_policy_started(monkeypatch):
    # orders-0: committed in the log (the thread reads it); orders-1: 99 is past the log's
    # end, so the thread starts at the end while the group still has 99
    assert _real_time_starts(monkeypatch, "latest", {T0: 42, T1: 99}) == ((T1, 99, 8),)


def test_real_time_starts_earliest_at_the_beginning_whatever_was_deleted_since(monkeypatch):
    from confluent_kafka import OFFSET_BEGINNING

    assert _real_time_starts(monkeypatch, "earliest", {T1: 99}) == (
        (T0, -1, OFFSET_BEGINNING), (T1, 99, OFFSET_BEGINNING))


def test_micro_batch_pins_the_policys_start_of_partitions_without_committed_offsets():
    from kspark._spark.resume import _fresh_start

    admin = _Admin(LOGS)
    assert _fresh_start(admin, "app", [T0, T1], {T0: 42}, {}, "latest") == {
        "orders": {"0": 42, "1": 8}}
