"""suppress(): final window results and time-limited updates, through the driver."""

import pytest

from kspark import BufferConfig, Serdes, StreamsBuilder, Suppressed, TimeWindows
from kspark.errors import StreamsError
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def _final_counts(buffer=None, records=()):
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
      .suppress(Suppressed.until_window_closes(buffer)).to_stream()
      .map(lambda wk, v: (f"{wk.key}@{wk.window.start}", v)).to("out", key_serde=S, value_serde=L))
    d = TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0})
    i = d.create_input_topic("in", S, S)
    for k, ts in records:
        i.pipe_input(k, "x", ts)
    return d, d.create_output_topic("out", S, L)


def test_until_window_closes_emits_one_final_result_per_window():
    d, out = _final_counts(records=[("a", 1), ("a", 3), ("b", 4), ("a", 12), ("a", 14)])
    assert out.is_empty()  # [0,10) closes at 10 + grace 5 = 15
    d.create_input_topic("in", S, S).pipe_input("c", "x", 15)
    assert out.read_key_values_to_list() == [("a@0", 2), ("b@0", 1)]
    d.create_input_topic("in", S, S).pipe_input("c", "x", 30)
    assert out.read_key_values_to_list() == [("a@10", 2), ("c@10", 1)]


def test_until_time_limit_rate_limits_per_key():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key().count()
      .suppress(Suppressed.until_time_limit(100)).to_stream().to("out", value_serde=L))
    with TopologyTestDriver(b.build(), {"statestore.cache.max.bytes": 0}) as d:
        i = d.create_input_topic("in", S, S)
        for ts in (0, 10, 50):
            i.pipe_input("a", "x", ts)
        out = d.create_output_topic("out", S, L)
        assert out.is_empty()
        i.pipe_input("b", "x", 100)   # stream time 100: a's first update was held since 0
        assert out.read_key_values_to_list() == [("a", 3)]


def test_bounded_buffer_emits_early_or_shuts_down():
    d, out = _final_counts(BufferConfig.with_max_records(1).emit_early_when_full(),
                           [("a", 1), ("b", 2)])
    assert out.read_key_values_to_list() == [("a@0", 1)]
    with pytest.raises(StreamsError, match="full"):
        _final_counts(BufferConfig.with_max_records(1).shut_down_when_full(), [("a", 1), ("b", 2)])
