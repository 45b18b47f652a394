"""The DSL's option classes behave as Java's (issue 54, "found on the way"): a static
factory called on a configured value keeps its settings, Java's static shortcuts named like
a field work on the class, and what Java refuses at the call is refused at the call."""

from __future__ import annotations

import pytest

from kspark import (BufferConfig, Consumed, Grouped, Joined, Materialized, Produced,
                    Repartitioned, Serdes, StreamJoined, StreamsBuilder, Suppressed,
                    TableJoined, TimeWindows)
from kspark.errors import TopologyError

S, L = Serdes.String(), Serdes.Long()


@pytest.mark.parametrize("made, expected", [
    (lambda: Materialized.with_(S, L).as_("x"), ("x", S, L)),
    (lambda: Materialized.as_("x").with_(S, L), ("x", S, L)),
    (lambda: Grouped.with_(S, L).as_("g"), ("g", S, L)),
    (lambda: Grouped.as_("g").with_(S, L), ("g", S, L)),
    (lambda: Repartitioned.with_(S, L).as_("r"), ("r", S, L)),
    (lambda: Joined.with_(S, L).as_("j"), ("j", S, L)),
    (lambda: Joined.as_("j").with_(S, L), ("j", S, L)),
])
def test_a_static_factory_called_on_a_configured_value_keeps_its_settings(made, expected):
    value = made()
    name = getattr(value, "store_name", None) or getattr(value, "name", None)
    assert (name, value.key_serde, value.value_serde) == expected


def test_every_option_classes_factories_keep_settings_the_same_way():
    assert Produced.with_(S, L).as_("p").key_serde is S
    assert Produced.as_("p").with_(S, L).processor_name == "p"
    assert Consumed.with_(S, L).with_("latest").key_serde is S
    assert Consumed.as_("c").with_(S, L).processor_name == "c"
    assert StreamJoined.as_("s").with_(S, L, L).store_name == "s"
    assert StreamJoined.with_(S, L, L).as_("s").key_serde is S
    part = lambda *a: 0  # noqa: E731
    assert TableJoined.as_("t").with_(part, None).name == "t"


def test_javas_static_shortcuts_named_like_fields_work_on_the_class():
    assert Grouped.key_serde(S) == Grouped(key_serde=S)
    assert Grouped.value_serde(L) == Grouped(value_serde=L)
    assert Produced.key_serde(S).key_serde is S and Produced.value_serde(L).value_serde is L
    assert Repartitioned.number_of_partitions(4).number_of_partitions == 4
    assert Joined.other_value_serde(L).other_value_serde is L
    assert Grouped(key_serde=S).key_serde is S  # on a value: the field


def test_suppress_until_window_closes_on_a_table_not_windowed_fails_at_the_call():
    table = StreamsBuilder().table("t", key_serde=S, value_serde=L)
    with pytest.raises(TopologyError) as e:
        table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    text = str(e.value)
    assert "test_java_options.py:" in text and "KTABLE-SOURCE-0000000002" in text
    assert "until_time_limit" in text


def test_suppress_until_window_closes_on_a_filtered_windowed_table_is_fine():
    (StreamsBuilder().stream("s", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 0)).count()
     .filter(lambda k, v: v > 1)
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())))


def test_through_was_removed_as_in_kafka_streams_4_and_says_what_to_use():
    stream = StreamsBuilder().stream("s", key_serde=S, value_serde=L)
    with pytest.raises(TopologyError, match="repartition\\(\\).*to\\(topic\\)"):
        stream.through("mid")


def test_a_windowed_keys_text_is_javas_to_string():
    from kspark._engine.aggregates.windows import Window, Windowed

    assert str(Windowed("user-1", Window(1000, 2000))) == "[user-1@1000/2000]"
    assert str(Windowed(7, Window(0, 5))) == "[7@0/5]"
    assert str(Window(0, 5)) == "Window{startMs=0, endMs=5}"
