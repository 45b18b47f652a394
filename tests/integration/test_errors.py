"""Failures surface fast, with messages naming the topic, address, key or offset."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark._local.broker import free_port
from kspark.errors import (
    BrokerUnreachableError,
    ConfigError,
    MissingSinkTopicError,
    MissingSourceTopicError,
    StreamsError,
)

pytestmark = pytest.mark.integration


def _topology(src: str, dst: str):
    b = StreamsBuilder()
    b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.Integer()).to(dst)
    return b.build()


def test_unknown_input_topic_is_named(spark, admin, topic_name, app_config):
    dst = topic_name("out")
    admin.create_topics({dst: 1})
    streams = KafkaStreams(_topology("no-such-topic", dst), app_config(), spark=spark)
    start = time.monotonic()
    with pytest.raises(MissingSourceTopicError, match="'no-such-topic'"):
        streams.start()
    assert time.monotonic() - start < 15


def test_unknown_output_topic_is_named(spark, admin, topic_name, app_config):
    src = topic_name("in")
    admin.create_topics({src: 1})
    with pytest.raises(MissingSinkTopicError, match="'missing-out'"):
        KafkaStreams(_topology(src, "missing-out"), app_config(), spark=spark).start()


def test_unreachable_broker_is_named_within_the_timeout(spark, app_config):
    address = f"127.0.0.1:{free_port()}"
    cfg = app_config(bootstrap_servers=address, request_timeout_ms=3000)
    start = time.monotonic()
    with pytest.raises(BrokerUnreachableError, match=address):
        KafkaStreams(_topology("a", "b"), cfg, spark=spark).start()
    assert time.monotonic() - start < 20


def test_invalid_config_is_named_at_construction(app_config):
    with pytest.raises(ConfigError, match="max.offsets.per.trigger"):
        KafkaStreams(_topology("a", "b"), app_config(max_offsets_per_trigger=0))


def test_undeserializable_record_fails_the_query_naming_topic_partition_offset(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("bad-in"), topic_name("bad-out")
    admin.create_topics({src: 1, dst: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(src, key=b"k", value=b"\x00\x00\x00\x01")
    p.produce(src, key=b"k", value=b"bad")  # 3 bytes: not an Integer
    p.flush(10)
    streams = KafkaStreams(_topology(src, dst), app_config(), spark=spark)
    streams.start()
    with pytest.raises(StreamsError, match=rf"topic '{src}', partition 0, offset 1"):
        streams.await_termination(120)


def test_an_exception_in_user_code_names_its_cause_task_node_and_line(spark, admin, broker,
                                                                      topic_name, app_config):
    src, dst = topic_name("bad-code-in"), topic_name("bad-code-out")
    admin.create_topics({src: 1, dst: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(src, key=b"k", value=b"[1, 2]")
    p.flush(10)
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.Json())
      .map_values(lambda v: v["x"], name="pick-x")  # a list has no "x"
      .to(dst, value_serde=Serdes.Json()))
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    with pytest.raises(StreamsError) as e:
        streams.await_termination(120)
    first_line = str(e.value).splitlines()[0]
    assert "TypeError: list indices must be integers" in first_line
    assert "task 0_0, processor 'pick-x'" in first_line
    assert f"topic {src!r}, partition 0, offset 0" in first_line
    assert "test_errors.py:" in first_line and "Traceback" not in str(e.value)


def test_an_error_outside_processing_names_the_task_and_the_exception(spark, admin, broker,
                                                                      topic_name, app_config):
    """Errors raised outside a processor's process() (here its init(), as a client or
    library error would be) are named too: task, micro-batch, exception type and message."""
    from kspark.processor import Processor

    class Broken(Processor):
        def init(self, context):
            raise OSError("the model file is missing")

        def process(self, record):
            pass

    src = topic_name("init-in")
    admin.create_topics({src: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(src, key=b"k", value=b"v")
    p.flush(10)
    b = StreamsBuilder()
    b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.String()).process(Broken)
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    with pytest.raises(StreamsError) as e:
        streams.await_termination(120)
    message = str(e.value)
    assert ("task 0_0 failed in micro-batch 0: builtins.OSError: the model file is missing"
            in message)
    assert "Traceback" not in message


@pytest.mark.parametrize("key,value", [("producer.linger.mss", 5),
                                       ("consumer.fetch.max.bytes", "lots"),
                                       ("admin.socket.timeout.mss", 5)])
def test_a_bad_client_setting_is_refused_at_start_naming_the_key(admin, topic_name, app_config,
                                                                 key, value):
    src, dst = topic_name("clients-in"), topic_name("clients-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = {**app_config(), key: value}
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        KafkaStreams(_topology(src, dst), cfg).start()


def test_a_store_locked_by_another_process_names_store_directory_and_cause(
        spark, admin, broker, topic_name, app_config):
    """Case 4: RocksDB's lock held elsewhere (here by this test) fails the task with a
    StateStoreError naming the store and its directory, not a bare worker traceback."""
    from pathlib import Path

    from kspark import Materialized
    from kspark._engine.state.bytes_stores import RocksDBBytesStore

    src, dst = topic_name("locked-in"), topic_name("locked-out")
    admin.create_topics({src: 1, dst: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(src, key=b"k", value=b"v")
    p.flush(10)
    b = StreamsBuilder()
    store = "counts"
    (b.stream(src, key_serde=Serdes.String(), value_serde=Serdes.String()).group_by_key()
      .count(Materialized.as_(store)).to_stream().to(dst, value_serde=Serdes.Long()))
    cfg = app_config()
    held = RocksDBBytesStore(store, Path(cfg["state.dir"], cfg["application.id"], "0_0", store))
    try:
        streams = KafkaStreams(b.build(), cfg, spark=spark)
        streams.start()
        with pytest.raises(StreamsError, match=rf"StateStoreError: cannot open RocksDB store "
                                               rf"'{store}' at .*0_0.*lock"):
            streams.await_termination(120)
    finally:
        held.close()
