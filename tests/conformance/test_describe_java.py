"""``str(Topology.describe())`` against Java Kafka Streams 4.1.1's
``Topology.describe().toString()``, byte for byte: the unit tests' expected texts, generated
Processor-API topologies (``DescribeReference.java`` builds the same ones), and DSL
scenarios of the conformance language."""

from __future__ import annotations

import pytest

from tests.conformance.describe_reference import build, describe_java, random_topology
from tests.conformance.lang import run
from tests.conformance.reference import run_java
from tests.unit.test_topology_description import CASES

# (seeds, statements at most): small topologies, and large ones (sub-topologies of more than
# 12 nodes, topics and stores sharing HashSet buckets, several global stores)
GENERATED = [(range(0, 3000), 16), (range(100_000, 100_500), 70)]


def test_the_unit_tests_expected_texts_are_javas():
    assert describe_java([s for s, _ in CASES.values()]) == [text for _, text in CASES.values()]


def _kspark_text(statements: list[str]) -> str:
    try:
        return str(build(statements).describe())
    except Exception as e:  # noqa: BLE001 - Java refused it too, or the comparison says
        return f"error {type(e).__name__}: {e}\n"


@pytest.mark.parametrize("seeds, steps", GENERATED, ids=["small", "large"])
def test_generated_topologies_are_described_as_java_describes_them(seeds, steps):
    topologies = [random_topology(seed, steps) for seed in seeds]
    bad = []
    for statements, java in zip(topologies, describe_java(topologies), strict=True):
        ours = _kspark_text(statements)
        if java.startswith("error ") and ours.startswith("error "):
            continue  # an invalid topology, refused by both
        if ours != java:
            bad.append(f"{statements}\n-- java:\n{java}-- kspark:\n{ours}")
    assert not bad, f"{len(bad)} of {len(topologies)} differ; the first:\n{bad[0]}"


DSL = {
    "stream-stream join": ["op a stream in0", "op b stream in1", "op j join a b 10 5", "to j out"],
    "outer join": ["op a stream in0", "op b stream in1", "op j outer_join a b 10 5", "to j out"],
    "repartitioned count": ["op s stream in0", "op k select_key s flip", "op g group_by_key k",
                            "op c count g st", "op o to_stream c", "to o out"],
    "stream-table join": ["op s stream in0", "op t table in1 st", "op j left_join s t",
                          "to j out"],
    # foreign-key joins: Java's nodes, stores, topics and sub-topologies (each side reads
    # what the other writes), generated or named by TableJoined
    "foreign-key join": ["op l table in0 -", "op r table in1 -", "op j fk_join l r mod",
                         "op o to_stream j", "to o out"],
    "foreign-key left join named": ["op l table in0 -", "op r table in1 -",
                                    "op j fk_left_join l r mod orders", "op o to_stream j",
                                    "to o out"],
    "foreign-key join of a mapped table, its result joined": [
        "op l table in0 -", "op m tmap_values l inc", "op r table in1 st",
        "op j fk_join m r mod", "op k tjoin j r", "op o to_stream k", "to o out"],
    "two foreign-key joins against one table": [
        "op l table in0 -", "op r table in1 -", "op j fk_join l r mod a",
        "op k fk_left_join l r mod", "op o to_stream j", "to o out", "op p to_stream k",
        "to p out2"],
    # topology.optimization=all (built with it on both sides): merged repartitions, moved
    # nodes, one store for a self-join
    "optimized: two counts after a key change, one filtered": [
        "optimize", "op s stream in0", "op k select_key s flip", "op f filter k even",
        "op g group_by_key f", "op c count g -", "op h group_by_key k", "op d count h st",
        "op o to_stream c", "to o out"],
    "optimized: a join and a count after one group_by key": [
        "optimize", "op s stream in0", "op t table in1 st", "op k map_values s inc",
        "op m select_key k mod", "op j join m t", "to j out", "op g group_by_key m",
        "op c aggregate g st2", "op o to_stream c", "to o out2"],
    "optimized: a self-join": ["optimize", "op s stream in0", "op j outer_join s s 10 5",
                               "to j out"],
}


def test_dsl_topologies_are_described_as_java_describes_them():
    scenarios = [["describe", *lines] for lines in DSL.values()]
    for rule, java, scenario in zip(DSL, run_java(scenarios), scenarios, strict=True):
        described = [line for line in java if line.startswith("describe ")]
        assert described, (rule, java)
        assert [line for line in run(scenario) if line.startswith("describe ")] == described, rule
