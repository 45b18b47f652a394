"""``topology.optimization=all`` against Java Kafka Streams 4.1.1: scenarios of the
conformance language with an ``optimize`` line (both sides build with the key), each
compared in full: the description (every node, topic and sub-topology of the rewritten
topology), the output records, store rows and changelog records.

- reuse.ktable.source.topics: a source table's store writes no changelog of its own;
- merge.repartition.topics: the repartitions after one key change are one, named after the
  first one's topic, with what lay between the key change and them moved below it;
- single.store.self.join: a stream joined with itself keeps one store and one join node.

Every rule scenario of ``rules.py`` and generated scenarios agree with ``optimize`` too.
"""

from __future__ import annotations

import pytest

from tests.conformance.check import compare, normal
from tests.conformance.generate import scenario
from tests.conformance.lang import run
from tests.conformance.reference import run_java
from tests.conformance.rules import RULES

_TABLE_INPUTS = ["input in a 1 1", "input in b 2 2", "input in a 3 3", "input in b ~ 4"]
_INPUTS = ["input in a 1 1", "input in b 2 2", "input in c 3 3", "input in a 4 4",
           "input in ~ 5 5", "input in b 6 6"]

_SELF_INPUTS = ["input in a 1 1", "input in a 2 3", "input in b 3 4", "input in a 4 20",
                "input in b 5 6", "input in a 6 2", "input in ~ 7 3", "input in a ~ 4",
                "input in a 8 40", "input in a 9 12"]

OPTIMIZED: dict[str, list[str]] = {
    "a source table's store has no changelog (its topic is)": [
        "optimize", "cache 0", "changelog st", "op t table in st", "op o to_stream t",
        "to o out", "store st kv", *_TABLE_INPUTS],
    "a source table joined by a stream, its store read from its topic": [
        "optimize", "cache 0", "changelog st", "op t table in0 st", "op s stream in1",
        "op j join s t", "to j out", "input in0 a 1 1", "input in0 b 2 2",
        "input in1 a 10 3", "input in1 b 20 4", "input in0 a ~ 5", "input in1 a 30 6"],
    "two aggregations after one key change share one repartition": [
        "optimize", "cache 0", "op s stream in", "op k select_key s flip",
        "op g group_by_key k", "op c count g st", "op r reduce g st2",
        "op o to_stream c", "to o out", "op p to_stream r", "to p out2", *_INPUTS],
    "unnamed aggregations after a group_by share the first one's topic": [
        "optimize", "cache 0", "op s stream in", "op g group_by s mod", "op c count g -",
        "op r aggregate g -", "op o to_stream c", "to o out", "op p to_stream r",
        "to p out2", *_INPUTS],
    "a value change between the key change and the aggregation": [
        "optimize", "cache 0", "op s stream in", "op k select_key s flip",
        "op m map_values k inc", "op g group_by_key m", "op c count g st",
        "op o to_stream c", "to o out", *_INPUTS],
    "a join and an aggregation after one key change": [
        "optimize", "cache 0", "op s stream in", "op t table in1 st",
        "op k select_key s flip", "op j left_join k t", "to j out", "op g group_by_key k",
        "op c count g st2", "op o to_stream c", "to o out2", "input in1 a 7 0",
        "input in1 b 8 0", *_INPUTS],
    "two key changes merged, then aggregated twice": [
        "optimize", "cache 0", "op s stream in", "op k1 select_key s flip",
        "op k2 select_key s key", "op u merge k1 k2", "op g group_by_key u",
        "op c count g st", "op r reduce g st2", "op o to_stream c", "to o out",
        "op p to_stream r", "to p out2", *_INPUTS],
    "an explicit repartition stays as it is": [
        "optimize", "cache 0", "op s stream in", "op k select_key s flip",
        "op r repartition k", "op g group_by_key r", "op c count g st", "op o to_stream c",
        "to o out", *_INPUTS],
    "to_table after a key change, and a stream-stream join": [
        "optimize", "cache 0", "op s stream in", "op k select_key s flip",
        "op t to_table k st", "op o to_stream t", "to o out", "op r stream in1",
        "op j join k r 5 0", "to j out2", "input in1 a 9 2", *_INPUTS],
    # single.store.self.join: one store, one join node; Java joins with inner semantics
    # whatever the kind of join
    "a stream joined with itself": [
        "optimize", "cache 0", "dropped", "op l stream in", "op j join l l 5 0", "to j out",
        *_SELF_INPUTS],
    "a stream left-joined with itself, with grace": [
        "optimize", "cache 0", "dropped", "op l stream in", "op j left_join l l 10 3",
        "to j out", *_SELF_INPUTS],
    "a stream outer-joined with itself": [
        "optimize", "cache 0", "dropped", "op l stream in", "op j outer_join l l 5 -1",
        "to j out", *_SELF_INPUTS],
    "a re-keyed stream joined with itself: one repartition for both sides": [
        "optimize", "cache 0", "op l stream in", "op k select_key l flip",
        "op j join k k 5 0", "op g group_by_key j", "op c count g st", "op o to_stream c",
        "to o out", *_SELF_INPUTS],
}


@pytest.fixture(scope="module")
def java_optimized() -> dict[str, list[str]]:
    scenarios = [["describe", *r] for r in OPTIMIZED.values()]
    return dict(zip(OPTIMIZED, run_java(scenarios), strict=True))


@pytest.mark.parametrize("rule", list(OPTIMIZED))
def test_optimized_rule_agrees_with_java(rule, java_optimized):
    expected, lines = java_optimized[rule], ["describe", *OPTIMIZED[rule]]
    assert not expected or not expected[0].startswith("error"), expected  # a real case
    assert normal(run(lines)) == normal(expected)


def test_a_source_tables_changelog_is_its_topic_only_when_optimized():
    lines = OPTIMIZED["a source table's store has no changelog (its topic is)"]
    assert not [a for a in run(lines) if a.startswith("changelog ")]
    assert [a for a in run(lines[1:]) if a.startswith("changelog ")]  # not optimized: one


def test_merged_repartitions_are_one_topic():
    described = run(["describe", *OPTIMIZED["two aggregations after one key change share "
                                            "one repartition"]])
    sinks = [line for line in described if "Sink: " in line and "repartition" in line]
    assert sinks == ["describe     Sink: st-repartition-sink (topic: st-repartition)"]


@pytest.mark.timeout(600)
def test_every_rule_agrees_with_java_when_optimized():
    scenarios = [["describe", "optimize", *r] for r in RULES.values()]
    bad = compare(scenarios)
    assert not bad, f"{len(bad)} rules disagree when optimized; the first: {bad[0][0]}"


@pytest.mark.timeout(1200)
def test_generated_scenarios_agree_with_java_when_optimized():
    # seeds the unoptimized test (test_java_reference.py) does not run; sampled for time
    scenarios = [["describe", "optimize", *scenario(20_000 + i)] for i in range(150)]
    bad = compare(scenarios)
    assert not bad, f"{len(bad)} of 150 disagree when optimized; the first: {bad[0][0]}"


EXPLICIT = {  # ensure.explicit.internal.resource.naming (KIP-1111) with optimize
    "unnamed source table": ["op t table in", "op o to_stream t", "to o out"],
    "two unnamed aggregations, merged": [
        "op s stream in", "op g group_by s mod", "op c count g", "op r reduce g",
        "op o to_stream c", "to o out"],
    "named aggregations, merged": [
        "op s stream in", "op g group_by s mod", "op c count g st", "op r reduce g st2",
        "op o to_stream c", "to o out"],
}


def test_explicit_naming_lists_what_java_lists_when_optimized():
    """Java lists the repartition topics the DSL named, merged away or not."""
    scenarios = [["explicit", "optimize", *lines, "input in a 1 5"]
                 for lines in EXPLICIT.values()]
    for rule, java, lines in zip(EXPLICIT, run_java(scenarios), scenarios, strict=True):
        ours = [a.replace("\n", " ").replace("TopologyError", "TopologyException").rstrip()
                for a in run(lines)]
        assert ours == [a.rstrip() for a in java], rule


def test_repartitions_sharing_a_step_after_the_key_change_are_refused_as_java_refuses():
    """Java's mergeRepartitionTopics fails when two repartitions share a node below the key
    change (the first merge moves it under the new repartition); so does kspark."""
    lines = ["optimize", "op s stream in", "op k select_key s flip", "op f filter k even",
             "op g group_by_key f", "op c count g -", "op d count g st", "op o to_stream c",
             "to o out", "input in a 1 5"]
    (java,) = run_java([lines])
    assert java[0].startswith("error StreamsException: Found a null keyChangingChild node")
    assert run(lines)[0].startswith("error TopologyError: Found a null keyChangingChild node")
