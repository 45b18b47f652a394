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
