import pytest

from kspark import KafkaStreams, Serdes, StreamsBuilder, StreamsConfig
from kspark.errors import ConfigError, KSparkError

BASE = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def test_defaults_follow_kafka_streams_names():
    c = StreamsConfig(BASE)
    assert c["processing.guarantee"] == "at_least_once"
    import getpass
    assert c["state.dir"].endswith(f"kspark-{getpass.getuser()}")  # per user (issue 24)
    assert c["default.key.serde"] is None


def test_unknown_key_is_rejected_by_name():
    with pytest.raises(ConfigError, match="'commit.intervall.ms'"):
        StreamsConfig({**BASE, "commit.intervall.ms": 10})


@pytest.mark.parametrize("key,value", [
    ("commit.interval.ms", -1),
    ("commit.interval.ms", "soon"),
    ("application.id", "has space"),
    ("processing.guarantee", "at_most_once"),
    ("autostop.at", "tomorrow"),
    ("default.key.serde", "NoSuchSerde"),
])
def test_bad_values_are_rejected_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        StreamsConfig({**BASE, key: value})


def test_missing_required_key_is_named():
    with pytest.raises(ConfigError, match="application.id"):
        StreamsConfig({"bootstrap.servers": "x:1"})


def test_exactly_once_v2_is_accepted_and_old_names_are_deprecated_aliases():
    c = StreamsConfig({**BASE, "processing.guarantee": "exactly_once_v2"})
    assert c["processing.guarantee"] == "exactly_once_v2"
    for alias in ("exactly_once", "exactly_once_beta"):
        with pytest.warns(DeprecationWarning,
                          match=f"processing.guarantee='{alias}'.*exactly_once_v2"):
            c = StreamsConfig({**BASE, "processing.guarantee": alias})
        assert c["processing.guarantee"] == "exactly_once_v2"


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2", "exactly_once",
                                       "exactly_once_beta"])
def test_the_test_driver_accepts_every_guarantee(guarantee):
    from kspark.testing import TopologyTestDriver

    b = StreamsBuilder()
    b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    deprecated = guarantee in ("exactly_once", "exactly_once_beta")
    with pytest.warns(DeprecationWarning) if deprecated else _nothing():
        driver = TopologyTestDriver(b.build(), {"processing.guarantee": guarantee})
    with driver:
        driver.create_input_topic("in", Serdes.String(), Serdes.String()).pipe_input("k", "v")
        out = driver.create_output_topic("out", Serdes.String(), Serdes.String())
        assert out.read_key_values_to_list() == [("k", "v")]


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def test_numeric_strings_are_accepted_and_pass_through_prefixes_kept():
    c = StreamsConfig({**BASE, "commit.interval.ms": "250", "spark.master": "local[1]",
                       "producer.linger.ms": 20})
    assert c["commit.interval.ms"] == 250
    assert c.with_prefix("producer.") == {"linger.ms": 20}
    assert c["spark.master"] == "local[1]"


def test_kafka_streams_rejects_invalid_config_at_construction():
    b = StreamsBuilder()
    b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    with pytest.raises(KSparkError, match="no.such"):
        KafkaStreams(b.build(), {**BASE, "no.such": 1})


def test_secrets_are_masked():
    c = StreamsConfig({**BASE, "consumer.sasl.password": "hunter2"})
    assert "hunter2" not in repr(c)


def test_an_empty_dead_letter_topic_name_is_refused():
    with pytest.raises(ConfigError, match="errors.dead.letter.queue.topic.name.*must not be empty"):
        StreamsConfig({**BASE, "errors.dead.letter.queue.topic.name": " "})


@pytest.mark.parametrize("key,value", [("producer.linger.mss", 5),
                                       ("consumer.fetch.max.bytes", "lots")])
def test_client_settings_are_checked_by_building_the_clients(key, value):
    from kspark._kafka.clients import check_client_configs

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        check_client_configs({**BASE, key: value})
