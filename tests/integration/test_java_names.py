"""Java's names on a real broker (issue 54): an application kspark ran before it took
Kafka Streams' names is refused at start, naming its old changelogs, rather than starting
its renamed stores empty over committed input offsets."""

from __future__ import annotations

import pytest

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.errors import TopologyError

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()


def test_changelogs_of_ksparks_earlier_names_refuse_the_start_and_say_to_reset(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("names-in"), topic_name("names-out")
    cfg = app_config(execution_mode="micro_batch")
    app = cfg["application.id"]
    old = f"{app}-KSTREAM-AGGREGATE-0000000001-STATE-STORE-changelog"
    admin.create_topics({src: 1, dst: 1, old: 1})
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).group_by_key().count().to_stream().to(
        dst, value_serde=L)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    with pytest.raises(TopologyError) as e:
        streams.start()
    text = str(e.value)
    assert old in text and "kspark reset" in text
    assert f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog" not in \
        admin.partition_counts(), "nothing was created for the renamed store"
    streams.close()


def test_micro_batch_refuses_to_start_over_a_repartition_topic_with_unprocessed_records(
        broker, spark, admin, topic_name, app_config):
    """A Java application (or a real-time run) stopped before it processed its repartition
    topic's records: micro-batch mode, which carries repartitions in Spark exchanges, would
    never read them, so it refuses to start, naming the topic."""
    from confluent_kafka import Producer

    src, dst = topic_name("drain-in"), topic_name("drain-out")
    cfg = app_config(execution_mode="micro_batch")
    repartition = f"{cfg['application.id']}-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"
    admin.create_topics({src: 1, dst: 1, repartition: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(repartition, key=b"k", value=b"v")
    assert p.flush(30) == 0
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by(lambda k, v: v).count().to_stream()
     .to(dst, value_serde=L))
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    with pytest.raises(TopologyError, match=f"repartition topic '{repartition}' partition 0 "
                                            "holds 1 record"):
        streams.start()
    streams.close()
