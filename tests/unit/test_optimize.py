"""topology.optimization (``kspark._graph.optimize``): the values Java takes, and what each
rewrite does to the graph (the conformance suite compares the results with Java's)."""

from __future__ import annotations

import pytest

from kspark import Materialized, Serdes, StreamsBuilder, StreamsConfig
from kspark._graph.optimize import optimizations
from kspark.errors import ConfigError, TopologyError

S, L = Serdes.String(), Serdes.Long()


def test_values_as_java_reads_them():
    assert optimizations("all") == {"reuse.ktable.source.topics", "merge.repartition.topics",
                                    "single.store.self.join"}
    assert optimizations("none") == optimizations(None) == frozenset()
    assert optimizations("merge.repartition.topics , reuse.ktable.source.topics") == {
        "merge.repartition.topics", "reuse.ktable.source.topics"}
    for bad in ("all,none", "some", "all,merge.repartition.topics"):
        with pytest.raises(TopologyError):
            optimizations(bad)


def test_the_config_takes_the_key_and_refuses_a_bad_value():
    base = {"application.id": "a", "bootstrap.servers": "localhost:9092"}
    assert StreamsConfig({**base, "topology.optimization": "all"})["topology.optimization"] \
        == "all"
    with pytest.raises(ConfigError, match="topology.optimization"):
        StreamsConfig({**base, "topology.optimization": "everything"})


def _table_app() -> StreamsBuilder:
    b = StreamsBuilder()
    b.table("prices", Materialized.as_("st"), key_serde=S, value_serde=L).to_stream().to("out")
    return b


def test_a_source_tables_store_keeps_its_topic_as_changelog():
    graph = _table_app().build({"topology.optimization": "reuse.ktable.source.topics"})._graph
    assert not graph.stores["st"][0].logging_enabled
    assert graph.source_changelogs == {"st": "prices"}
    plain = _table_app().build({"topology.optimization": "none"})._graph
    assert plain.stores["st"][0].logging_enabled and not plain.source_changelogs


def test_repartitions_after_one_key_change_merge_into_the_first_ones_topic():
    b = StreamsBuilder()
    g = b.stream("in", key_serde=S, value_serde=L).select_key(lambda k, v: v).group_by_key()
    g.count(Materialized.as_("c1"))
    g.count(Materialized.as_("c2"))
    graph = b.build({"topology.optimization": "merge.repartition.topics"})._graph
    assert graph.internal_topics() == ["c1-repartition"]
    assert graph.nodes["c1-repartition-filter"].parents == ("KSTREAM-KEY-SELECT-0000000001",)


def test_a_self_join_keeps_one_store_and_one_join_node():
    from kspark import JoinWindows

    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=L)
    s.join(s, lambda a, c: a + c, JoinWindows.of_time_difference_without_grace(10)).to("out")
    graph = b.build({"topology.optimization": "single.store.self.join"})._graph
    assert list(graph.stores) == ["KSTREAM-JOINTHIS-0000000003-store"]
    assert list(graph.nodes) == ["KSTREAM-SOURCE-0000000000", "KSTREAM-WINDOWED-0000000001",
                                 "KSTREAM-MERGE-0000000005", "KSTREAM-SINK-0000000006"]
