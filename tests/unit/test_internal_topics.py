"""The internal topics an application creates at start, as data (``_plan/internal_topics.py``),
and the one path that creates them (``_spark/topic_creation.py``): names as Java's, one
partition per task, Kafka Streams' configs, one partition-count check, the changelog
refusals before anything is created."""

from __future__ import annotations

import pytest

from kspark import Consumed, Materialized, Serdes, StreamsBuilder
from kspark._engine.state.checkpoint import write_checkpoint
from kspark._plan.internal_topics import (
    REPARTITION_TOPIC_CONFIG,
    PlannedTopic,
    changelog_topics,
    kspark_topics_at,
    repartition_topics_of,
    spark_sink_topics,
    start_topics,
)
from kspark._plan.plan import plan
from kspark._spark.realtime.layout import repartition_topics
from kspark._spark.topic_creation import create_start_topics, ensure_internal_topics
from kspark.config import StreamsConfig
from kspark.errors import ChangelogLostError, TopologyError

S = Serdes.String()


def _config(tmp_path=None, **extra):
    values = {"application.id": "app", "bootstrap.servers": "k:9092", **extra}
    if tmp_path is not None:
        values["state.dir"] = str(tmp_path)
    return StreamsConfig(values)


def _counting(logged: bool = True):
    """in -> group_by (repartition) -> count into store 'counts' -> to_spark sink 'sunk'."""
    b = StreamsBuilder()
    m = Materialized.as_("counts")
    (b.stream("in", Consumed.with_(S, S)).group_by(lambda k, v: v)
      .count(m if logged else m.with_logging_disabled())
      .to_stream().to_spark("parquet", path="/x", name="sunk"))
    return b.build()._graph


class FakeAdmin:
    def __init__(self):
        self.created: list[tuple[str, int, dict | None, int]] = []

    def create_topics(self, topics, config=None, exist_ok=True, replication_factor=-1):
        for t, n in topics.items():
            self.created.append((t, n, config, replication_factor))


def test_a_logged_store_gets_a_compacted_changelog_with_one_partition_per_task():
    [t] = changelog_topics("app", _counting().stores, {"counts": 3}, {})
    assert (t.name, t.partitions, dict(t.config)["cleanup.policy"]) == \
        ("app-counts-changelog", 3, "compact")
    assert t.purpose == "store 'counts''s tasks"


def test_an_unlogged_store_gets_no_changelog():
    assert changelog_topics("app", _counting(logged=False).stores, {"counts": 3}, {}) == []


def test_topic_overrides_apply_to_changelogs_and_repartition_topics():
    ov = {"segment.bytes": "1048576"}
    [c] = changelog_topics("app", _counting().stores, {"counts": 1}, ov)
    [r] = repartition_topics_of({"app-r-repartition": 2}, "its readers' tasks", ov)
    assert dict(c.config)["segment.bytes"] == dict(r.config)["segment.bytes"] == "1048576"


def test_a_repartition_topic_is_configured_as_kafka_streams_and_named_as_java():
    g = _counting()
    p = plan(g, {"in": 2}, _config())
    [t] = repartition_topics_of(repartition_topics(p, g), "its readers' tasks", {})
    assert t.name.startswith("app-") and t.name.endswith("-repartition")
    assert (t.partitions, dict(t.config)) == (2, REPARTITION_TOPIC_CONFIG)


def test_a_spark_sinks_topic_is_configured_as_a_repartition_topic():
    g = _counting()
    p = plan(g, {"in": 2}, _config())
    [t] = spark_sink_topics("app", g.spark_sinks, p, {})
    assert (t.name, t.partitions, dict(t.config)) == \
        ("app-sunk-spark-sink", 2, REPARTITION_TOPIC_CONFIG)
    assert t.purpose == "the tasks writing Spark sink 'sunk'"


def test_kspark_topics_are_made_at_their_step_of_the_start():
    assert [(t.name, t.partitions) for t in kspark_topics_at("app", 5, "start")] == \
        [("app-kspark-progress", 5), ("app-kspark-control", 1)]
    assert [(t.name, t.partitions) for t in kspark_topics_at("app", 1, "guard")] == \
        [("app-kspark-instance", 1)]


def test_start_topics_come_in_creation_order():
    g = _counting()
    p = plan(g, {"in": 2}, _config())
    reparts = repartition_topics_of(repartition_topics(p, g), "its readers' tasks", {})
    names = [t.name for t in start_topics(g, p, {}, reparts)]
    assert names == ["app-counts-changelog", "app-sunk-spark-sink", reparts[0].name,
                     "app-kspark-progress", "app-kspark-control"]


def test_ensure_creates_each_topic_in_order_with_its_config_and_replication():
    admin = FakeAdmin()
    topics = [PlannedTopic("a", 2, "x", (("cleanup.policy", "compact"),)),
              PlannedTopic("b", 1, "y")]
    ensure_internal_topics(admin, {"a": 2}, topics, 3)
    assert admin.created == [("a", 2, {"cleanup.policy": "compact"}, 3), ("b", 1, None, 3)]


def test_an_existing_topic_with_another_partition_count_is_refused_naming_it():
    admin = FakeAdmin()
    topics = [PlannedTopic("a", 2, "x"), PlannedTopic("app-c-changelog", 3, "store 'c''s tasks")]
    with pytest.raises(TopologyError) as e:
        ensure_internal_topics(admin, {"app-c-changelog": 2}, topics, -1)
    assert str(e.value) == (
        "internal topic 'app-c-changelog' has 2 partitions but there are 3 of store 'c''s "
        "tasks; reset the application (delete its internal topics and the state directory) "
        "or restore the input topics' partition counts")
    assert [c[0] for c in admin.created] == ["a"], "the topics before it are created, as today"


def test_a_missing_changelog_with_local_state_is_refused_before_anything_is_created(tmp_path):
    g = _counting()
    c = _config(tmp_path)
    task_dir = tmp_path / "app" / "1_0"
    task_dir.mkdir(parents=True)
    write_checkpoint(task_dir / ".checkpoint", {("app-counts-changelog", 0): 7})
    admin = FakeAdmin()
    with pytest.raises(ChangelogLostError, match="'app-counts-changelog' does not exist"):
        create_start_topics(admin, {"in": 1}, c, g, plan(g, {"in": 1}, c))
    assert admin.created == []
    create_start_topics(admin, {"in": 1, "app-counts-changelog": 1}, c, g, plan(g, {"in": 1}, c))
    assert admin.created[0][0] == "app-counts-changelog", "an existing changelog: no refusal"


def test_changelogs_of_the_earlier_naming_are_refused_before_anything_is_created(tmp_path):
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count()
    g = b.build()._graph
    c = _config(tmp_path)
    admin = FakeAdmin()
    old = "app-KSTREAM-AGGREGATE-0000000001-STATE-STORE-changelog"
    with pytest.raises(TopologyError, match="named as kspark named generated stores"):
        create_start_topics(admin, {"in": 1, old: 1}, c, g, plan(g, {"in": 1}, c))
    assert admin.created == []
