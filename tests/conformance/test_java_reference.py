"""kspark's TopologyTestDriver against Java Kafka Streams' (kafka-streams-test-utils 4.1.1):
issue 10's rules as fixed scenarios, then generated scenarios over the DSL; every output
record (key, value, timestamp, order) and every compared store row must be identical.

``make conformance COUNT=3000`` runs more generated scenarios.
"""

from __future__ import annotations

import pytest

from tests.conformance.check import compare, normal
from tests.conformance.generate import scenario
from tests.conformance.lang import run
from tests.conformance.reference import run_java
from tests.conformance.rules import RULES

SEED, COUNT = 0, 300


@pytest.fixture(scope="module")
def java_rules() -> dict[str, list[str]]:
    return dict(zip(RULES, run_java(list(RULES.values())), strict=True))


@pytest.mark.parametrize("rule", list(RULES))
def test_rule_agrees_with_java(rule, java_rules):
    expected = java_rules[rule]
    assert not expected or not expected[0].startswith("error"), expected  # a real case
    assert normal(run(RULES[rule])) == normal(expected)


@pytest.mark.timeout(1200)
def test_generated_scenarios_agree_with_java():
    scenarios = [scenario(SEED + i) for i in range(COUNT)]
    bad = compare(scenarios)
    report = "\n\n".join("\n".join(sc) + "\n-- java:\n" + "\n".join(e) + "\n-- kspark:\n"
                         + "\n".join(g) for sc, e, g in bad[:3])
    assert not bad, f"{len(bad)} of {COUNT} scenarios disagree with Java; first ones:\n{report}"
