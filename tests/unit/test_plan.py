"""The query plan as data (kspark._plan.plan), its passes and describe: no Spark, no broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._plan.describe import describe_application
from kspark._plan.options import SourceOptions
from kspark._plan.passes import shuffle_keys, spark_hash
from kspark._plan.plan import StagePlan, plan
from kspark._cli.main import main
from kspark.config import StreamsConfig
from kspark.errors import TopologyError

S = Serdes.String()


def _config(**extra):
    return StreamsConfig({"application.id": "app", "bootstrap.servers": "kafka:9092",
                          "execution.mode": "micro_batch", "max.offsets.per.trigger": 500,
                          **extra})


def _passthrough():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=S).filter(lambda k, v: v).to("out")
    return b.build()


def _word_count():
    b = StreamsBuilder()
    (b.stream("words", key_serde=S, value_serde=S)
       .group_by(lambda k, v: v, key_serde=S, value_serde=S).count()
       .to_stream().to("counts", value_serde=Serdes.Long()))
    return b.build()


def _enrich():
    """A stream re-keyed, then joined with a table: the repartition meets the table's task."""
    b = StreamsBuilder()
    users = b.table("users", key_serde=S, value_serde=S)
    (b.stream("clicks", key_serde=S, value_serde=S).select_key(lambda k, v: v)
       .join(users, lambda c, u: f"{c}/{u}").to("enriched"))
    return b.build()


def test_one_stage_topology_reads_kafka_without_exchange():
    p = plan(_passthrough()._graph, {"in": 3, "out": 2}, _config(), start={"in": {"0": 7}})
    (stage,) = p.stages
    (m,) = stage.members
    assert (stage.exchange, stage.terminal, stage.partitions) == (None, True, 3)
    assert (m.sub_topology, m.first, m.tasks, p.tasks, p.routes) == (0, 0, 3, 3, {})
    assert m.source == SourceOptions(("in",), "kafka:9092", 500, 30000, m.source.read_timeout_ms,
                                     start={"in": {"0": 7}}, emit="ranges")
    assert isinstance(m.stage_plan, StagePlan) and m.stage_plan.streaming
    assert (p.stores, p.global_stores, p.pins_globals, p.shuffle_keys) == ((), {}, None, {})


def test_two_stage_topology_shuffles_the_repartition_topic():
    p = plan(_word_count()._graph, {"words": 4, "counts": 4}, _config())
    first, second = p.stages
    rep = "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"
    assert (first.exchange, first.terminal, second.terminal) == (None, False, True)
    assert second.exchange.size == 4 and second.exchange.upstream == (0,)
    assert second.exchange.topics == (rep,)
    assert second.exchange.shuffle_keys == (12, 6, 2, 0) and p.shuffle_keys == {4: [12, 6, 2, 0]}
    assert p.routes == {rep: (4, 0)} and p.fed_partitions == {rep: 4}
    assert first.members[0].stage_plan.fed == {rep: (4, False)}  # the exchange only, not Kafka
    assert second.members[0].source is None and not second.members[0].stage_plan.streaming
    assert (p.first_marker, p.tasks) == ({0: 0, 1: 4}, 8)
    (store,) = p.stores
    assert (store.sub_topology, store.tasks) == (1, 4)
    assert store.changelog == f"app-{store.name}-changelog"
    assert p.store_tasks == {store.name: 4}


def test_join_of_a_repartitioned_stream_with_a_table_shares_the_tables_stage():
    p = plan(_enrich()._graph, {"users": 3, "clicks": 2, "enriched": 3}, _config())
    first, second = p.stages  # upstream first: the clicks' re-keying runs before the join
    assert [m.sub_topology for m in first.members] == [1]
    assert first.members[0].source.topics == ("clicks",) and first.members[0].tasks == 2
    (join,) = second.members
    assert (join.sub_topology, join.tasks, join.source.topics) == (0, 3, ("users",))
    assert second.exchange.size == 3 and second.exchange.upstream == (0,)
    rep = "app-KSTREAM-KEY-SELECT-0000000004-repartition"
    assert p.routes == {rep: (3, 0)} and p.fed_partitions == {rep: 3}  # like the table
    assert (p.first_marker, p.tasks) == ({0: 0, 1: 3}, 5)


def _global_and_two_kafka_sources():
    b = StreamsBuilder()
    countries = b.global_table("countries", key_serde=S, value_serde=S)
    (b.stream("orders", key_serde=S, value_serde=S)
       .join(countries, lambda k, v: v, lambda o, c: f"{o}@{c}").to("out"))
    b.stream("payments", key_serde=S, value_serde=S).group_by_key().count()
    return b.build()


def test_the_first_kafka_source_pins_the_global_topics():
    p = plan(_global_and_two_kafka_sources()._graph,
             {"orders": 2, "payments": 2, "out": 2}, _config())
    sources = p.sources()  # sub-topologies 1 and 2: the global store is node group 0
    assert p.pins_globals == 1 and set(sources) == {1, 2}
    assert sources[1].global_topics == ("countries",) and sources[2].global_topics == ()
    assert list(p.global_stores.values()) == ["countries"]


def test_global_stores_with_a_remote_checkpoint_and_two_kafka_sources_are_refused():
    with pytest.raises(TopologyError, match="checkpoint.location"):
        plan(_global_and_two_kafka_sources()._graph, {"orders": 2, "payments": 2, "out": 2},
             _config(**{"checkpoint.location": "hdfs://nn/checkpoints/app"}))


def test_shuffle_keys_are_those_spark_computes():
    # checked against Spark's pmod(hash(cast(k as int)), n) in tests/integration/test_skeleton.py
    assert [spark_hash(k) for k in (0, 1, -7)] == [933211791, -559580957, -1618159745]
    assert shuffle_keys(1) == [0] and shuffle_keys(3) == [0, 1, 11]
    assert shuffle_keys(7) == [12, 0, 1, 9, 3, 2, 11]
    assert shuffle_keys(16) == [12, 16, 5, 1, 37, 20, 2, 35, 13, 6, 49, 7, 25, 15, 4, 0]


def test_source_options_travel_as_one_json_option():
    o = SourceOptions(("a", "b"), "kafka:9092", 100, 3000, 6000, resets={"a": "latest"},
                      start={"a": {"0": 3}}, stop={"a": {"0": 9}, "b": {"1": 4}},
                      global_topics=("g",), clock_ms=1000, emit="ranges")
    assert SourceOptions.from_json(o.to_json()) == o
    assert json.loads(o.to_json())["stop"] == {"a": {"0": 9}, "b": {"1": 4}}
    with pytest.raises(TopologyError, match="not SourceOptions"):
        SourceOptions.from_json(json.dumps({**json.loads(o.to_json()), "surprise": 1}))


def test_plan_and_describe_import_no_pyspark():
    code = ("import sys, kspark._plan.plan, kspark._plan.describe; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_describe_prints_the_topology_then_the_spark_plan_and_its_assumptions():
    t = _word_count()
    text = describe_application(str(t.describe()), t._graph, _config(), {"words": 4}, broker=False)
    assert text.startswith(str(t.describe()))
    assert "   Stage 1 (4 Spark tasks): exchange of 4 partitions" in text
    assert "repartition topic, not created in Kafka; 4 partitions" in text
    assert "-changelog: changelog of store KSTREAM-AGGREGATE-STATE-STORE-0000000002" in text
    assert "   app-kspark-progress: the tasks' progress markers (one partition per task), " \
        "8 partitions" in text
    assert "   app-kspark-control: stop signals, task reports, query routes, 1 partition" in text
    assert "   words: 4 (given)" in text


def test_describe_says_what_it_assumed():
    t = _enrich()
    text = describe_application(str(t.describe()), t._graph, _config(), {"clicks": 2}, broker=False)
    assumed = "assumed: the broker was not asked; give the topic's partition count"
    assert f"   users: 1 ({assumed})" in text


def test_cli_describe_prints_both_views(capsys):
    assert main(["describe", "kspark.demo.run:demo_topology", "--set", "application.id=demo",
                 "--set", "execution.mode=micro_batch", "--partitions", "demo-pageviews=3"]) == 0
    out = capsys.readouterr().out
    assert "Topologies:\n   Sub-topology: 0\n" in out
    assert "   Stage 0 (3 Spark tasks): reads Kafka, no exchange" in out
    assert "   demo-pageviews: 3 (given)" in out


def test_cli_describe_follows_the_configured_mode_and_needs_no_application_id(capsys):
    """The default mode (real_time) is described as it runs: tasks meeting through
    repartition topics created in Kafka; with no application.id, a placeholder names them."""
    assert main(["describe", "tests.unit.test_plan:_word_count", "--no-broker",
                 "--partitions", "words=2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Topologies:\n")
    assert "Real-time plan (" in out and "Stage 0" not in out
    assert ("   application.id-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition: "
            "repartition topic, 2 partitions, purged after each commit") in out
    assert main(["describe", "kspark.demo.run:demo_topology", "--partitions", "x=many"]) == 2


def test_task_ids_number_sub_topologies_as_java_global_stores_counted():
    """Java numbers sub-topologies and global stores together in the order added, and its
    task ids (so the task-id of metrics and the task directories) use those numbers."""
    t = _global_and_two_kafka_sources()
    p = plan(t._graph, {"orders": 2, "payments": 2, "out": 2}, _config())
    described = [line.split()[1] for line in str(t.describe()).splitlines()
                 if line.strip().startswith("Sub-topology:") and "global" not in line]
    assert described == ["1", "2"]
    assert sorted(m.sub_topology for m in p.members()) == [1, 2]


def _fk_join():
    """A foreign-key join: the two tables' sub-topologies feed each other (Java's layout)."""
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    (orders.join(b.table("products", key_serde=S, value_serde=S), lambda v: v.split(":")[0],
                 lambda o, p: f"{o}/{p}").to_stream().to("out", value_serde=S))
    return b.build()


FK_COUNTS = {"orders": 3, "products": 2, "out": 3}


def test_a_cycle_of_sub_topologies_is_cut_where_it_goes_back_to_an_earlier_stage():
    """Micro-batch mode: the topic closing the cycle is a Kafka topic (``looped``), written
    by its writer's tasks and read by its reader's Kafka source; the rest is acyclic."""
    p = plan(_fk_join()._graph, FK_COUNTS, _config(), stop={"orders": {"0": 5, "1": 5, "2": 5},
                                                           "products": {"0": 1, "1": 1}})
    assert all(u < s.index for s in p.stages if s.exchange for u in s.exchange.upstream)
    (back, n), = p.looped.items()
    assert back == "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic" and n == 2
    reader = next(m for m in p.members() if m.source is not None and back in m.source.topics)
    writer = next(m for m in p.members() if back in m.stage_plan.fed)
    assert (reader.sub_topology, writer.sub_topology) == (1, 0)
    assert reader.source.looped == (back,) and reader.source.resets == {back: "earliest"}
    assert set(reader.source.stop) == {"products"}  # a batch run reads it to its end
    assert writer.stage_plan.fed[back] == (2, True) and back not in p.routes  # Kafka only
    assert back not in p.fed_partitions and reader.stage_plan.partition_counts[back] == 2
    stage_of = {m.sub_topology: s.index for s in p.stages for m in s.members}
    assert stage_of[writer.sub_topology] > stage_of[reader.sub_topology]


def test_real_time_plans_keep_the_cycle():
    """Real-time mode meets through Kafka anyway: nothing is looped."""
    p = plan(_fk_join()._graph, FK_COUNTS, StreamsConfig(
        {"application.id": "app", "bootstrap.servers": "kafka:9092"}))
    assert p.looped == {} and len(p.fed_partitions) == 2


def test_the_looped_topics_are_read_from_kafka_from_the_earliest_offset():
    from kspark._plan.plan import kafka_sources

    g = _fk_join()._graph
    looped = plan(g, FK_COUNTS, _config()).looped
    topics, resets = kafka_sources(g, looped)
    assert topics == ["orders", "products", *looped]
    assert resets == {t: "earliest" for t in looped}
    assert kafka_sources(g) == (["orders", "products"], {})


def test_describe_says_the_looped_topic_is_read_from_kafka():
    t = _fk_join()
    text = describe_application(str(t.describe()), t._graph, _config(), FK_COUNTS, broker=False)
    back = "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
    assert (f"      Kafka source: [products, {back}] ({back} closes a cycle: read from Kafka "
            "in the micro-batch after the one writing it)") in text
    assert f"      Writes {back} (2 partitions) to Kafka, in its transaction" in text
    assert (f"   {back}: closes a cycle of sub-topologies, read from Kafka; 2 partitions, "
            "created in Kafka, purged after each micro-batch") in text


def test_source_options_carry_the_looped_topics():
    o = SourceOptions(("a", "app-x-topic"), "kafka:9092", 100, 3000, 6000,
                      looped=("app-x-topic",))
    assert SourceOptions.from_json(o.to_json()) == o
