"""Config as Kafka Streams users write it (kspark._config_java): Java's deprecated names are
read as today's, and each Java key or client key kspark does not take is refused saying
what to use instead."""

import warnings

import pytest

from kspark import StreamsBuilder, StreamsConfig
from kspark._config_java import CLIENT_KEYS, JAVA_KEYS
from kspark.config import CONFIG_KEYS
from kspark.errors import ConfigError
from kspark.testing import TopologyTestDriver

BASE = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def _refused(**extra) -> str:
    with pytest.raises(ConfigError) as e:
        StreamsConfig({**BASE, **extra})
    return str(e.value)


def test_cache_max_bytes_buffering_is_the_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="'cache.max.bytes.buffering' is deprecated.*"
                                                "read as statestore.cache.max.bytes"):
        c = StreamsConfig({**BASE, "cache.max.bytes.buffering": 0})
    assert c["statestore.cache.max.bytes"] == 0 and c.is_set("statestore.cache.max.bytes")
    assert "cache.max.bytes.buffering" not in c


def test_given_both_cache_keys_the_new_one_wins_as_in_kafka_streams():
    with pytest.warns(DeprecationWarning, match="statestore.cache.max.bytes is set too, so "
                                                "cache.max.bytes.buffering is ignored"):
        c = StreamsConfig({**BASE, "cache.max.bytes.buffering": 0,
                           "statestore.cache.max.bytes": 1024})
    assert c["statestore.cache.max.bytes"] == 1024


def test_the_deprecated_cache_key_is_validated_as_the_new_one():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert "statestore.cache.max.bytes" in _refused(**{"cache.max.bytes.buffering": -1})


def test_a_config_copied_with_with_values_does_not_warn_again():
    with pytest.warns(DeprecationWarning):
        c = StreamsConfig({**BASE, "cache.max.bytes.buffering": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert c.with_values({"commit.interval.ms": 5})["statestore.cache.max.bytes"] == 0


@pytest.mark.parametrize("policy", ["earliest", "latest", "none", "by_duration:PT1H"])
def test_auto_offset_reset_takes_kafkas_policies(policy):
    assert StreamsConfig({**BASE, "auto.offset.reset": policy})["auto.offset.reset"] == policy


def test_auto_offset_reset_defaults_to_earliest_as_kafka_streams():
    assert StreamsConfig(BASE)["auto.offset.reset"] == "earliest"


def test_a_bad_auto_offset_reset_is_refused_naming_the_key_and_the_choices():
    text = _refused(**{"auto.offset.reset": "smallest"})
    assert "'auto.offset.reset'" in text and "by_duration:<ISO-8601 duration>" in text


@pytest.mark.parametrize("prefix", ["consumer.", "restore.consumer.", "main.consumer."])
def test_consumer_auto_offset_reset_is_refused_pointing_to_auto_offset_reset(prefix):
    text = _refused(**{f"{prefix}auto.offset.reset": "latest"})
    assert text.startswith(f"config key '{prefix}auto.offset.reset' is not honoured: use "
                           "auto.offset.reset")


def test_global_consumer_auto_offset_reset_stays_the_global_stores_key():
    c = StreamsConfig({**BASE, "global.consumer.auto.offset.reset": "latest"})
    assert c["global.consumer.auto.offset.reset"] == "latest"


@pytest.mark.parametrize("key", sorted(CLIENT_KEYS))
@pytest.mark.parametrize("prefix", ["consumer.", "restore.consumer."])
def test_a_consumer_key_kspark_does_not_honour_is_refused_with_what_to_use(prefix, key):
    assert _refused(**{prefix + key: "1"}) == (f"config key '{prefix}{key}' is not honoured: "
                                               f"{CLIENT_KEYS[key]}")


@pytest.mark.parametrize("key,value,says", [
    ("consumer.enable.auto.commit", "true", "commits input offsets itself.*commit.interval.ms"),
    ("consumer.group.id", "other", "change application.id"),
    ("consumer.isolation.level", "read_uncommitted", "read_committed"),
    ("producer.transactional.id", "tx", "stable id <application.id>-<task>"),
    ("producer.enable.idempotence", "false", "idempotent"),
])
def test_a_client_key_kspark_sets_itself_is_refused_saying_what_kspark_does(key, value, says):
    import re

    assert re.search(says, _refused(**{key: value}))


@pytest.mark.parametrize("key,value", [("consumer.fetch.min.bytes", 1),
                                       ("restore.consumer.fetch.max.bytes", 1 << 20),
                                       ("producer.linger.ms", 5), ("admin.socket.timeout.ms", 1),
                                       ("producer.transaction.timeout.ms", 60000),
                                       ("consumer.enable.auto.commit", "false"),
                                       ("security.protocol", "SSL")])
def test_client_keys_kspark_honours_pass_through(key, value):
    assert StreamsConfig({**BASE, key: value})[key] == value


def test_main_consumer_keys_point_to_the_consumer_prefix():
    assert _refused(**{"main.consumer.fetch.min.bytes": 1}) == (
        "config key 'main.consumer.fetch.min.bytes' is not honoured: kspark's input consumers "
        "take the consumer.* keys: write consumer.fetch.min.bytes")


def test_global_consumer_keys_point_to_the_restore_consumer_prefix():
    assert "write restore.consumer.fetch.max.bytes" in _refused(
        **{"global.consumer.fetch.max.bytes": 1})


@pytest.mark.parametrize("key", sorted(JAVA_KEYS))
def test_a_kafka_streams_key_kspark_does_not_take_says_what_kspark_does(key):
    assert _refused(**{key: "x"}) == (f"unknown config key {key!r} (a Kafka Streams key): "
                                      f"{JAVA_KEYS[key]}")


def test_a_top_level_consumer_key_gets_the_consumer_pointer():
    assert "max.offsets.per.trigger" in _refused(**{"max.poll.records": 500})


def test_the_pointer_tables_name_no_key_kspark_accepts():
    assert set(JAVA_KEYS) & set(CONFIG_KEYS) == set()
    # auto.offset.reset is refused under the consumer prefixes, taken at top level
    assert set(CLIENT_KEYS) & set(CONFIG_KEYS) == {"auto.offset.reset"}


@pytest.mark.parametrize("value", [0, -1, "-1"])
def test_max_task_idle_ms_takes_kafka_streams_default_and_never_wait_in_both_modes(
        execution_mode, value):
    c = StreamsConfig({**BASE, "execution.mode": execution_mode, "max.task.idle.ms": value})
    assert c["max.task.idle.ms"] == int(value)


@pytest.mark.parametrize("execution_mode,why", [("micro_batch", "never holds records back"),
                                      ("real_time", "processes a piped record at once")])
def test_a_max_task_idle_ms_wait_is_refused_naming_the_mode(execution_mode, why):
    text = _refused(**{"execution.mode": execution_mode, "max.task.idle.ms": 500})
    assert text.startswith("max.task.idle.ms=500 is not supported under "
                           f"execution.mode={execution_mode}")
    assert why in text and "use 0 (Kafka Streams' default" in text


def test_max_task_idle_ms_below_minus_one_is_invalid():
    assert "must be >= -1" in _refused(**{"max.task.idle.ms": -2})


def test_the_test_driver_refuses_a_max_task_idle_ms_wait_too():
    b = StreamsBuilder()
    b.stream("in").to("out")
    with pytest.raises(ConfigError, match="max.task.idle.ms=100 is not supported"):
        TopologyTestDriver(b.build(), {"max.task.idle.ms": 100})


def test_a_real_time_thread_never_waits_for_an_empty_partition_under_minus_one():
    from kspark._engine.nodes import RawRecord
    from kspark._spark.realtime.polled import PolledRecords

    held = [RawRecord("a", 0, 7, 1, None, b"x", ())]
    waits, never = PolledRecords((("a", 0), ("b", 0))), PolledRecords((("a", 0), ("b", 0)),
                                                                          wait=False)
    waits.add(held)
    never.add(held)
    assert not waits.ready(at_end=set())  # 0: b's data may still be on the broker
    assert waits.ready(at_end={("b", 0)})  # 0: b is read to its end
    assert never.ready(at_end=set())
