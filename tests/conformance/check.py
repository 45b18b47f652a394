"""Compare kspark with Java Kafka Streams on scenarios of the language in ``lang.py``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.conformance.lang import normal_metrics, run
from tests.conformance.reference import run_java

__all__ = ["compare", "normal"]


def normal(answer: list[str]) -> list[str]:
    """Errors agree on being errors; their messages are each engine's own. Metric lines
    compare by name, group, tag keys and kind of node (``lang.normal_metrics``)."""
    if answer and answer[0].startswith("error"):
        return ["error"]
    metrics = sorted(normal_metrics([x for x in answer if x.startswith("metric ")]))
    return [x for x in answer if not x.startswith("metric ")] + metrics


def compare(scenarios: list[list[str]]) -> list[tuple[list[str], list[str], list[str]]]:
    """The scenarios on which kspark and Java disagree, with (scenario, Java's, kspark's)."""
    with ThreadPoolExecutor(1) as pool:  # the JVM works while kspark runs
        java = pool.submit(run_java, scenarios)
        ours = [run(sc) for sc in scenarios]
        answers = java.result()
    return [(sc, expected, got) for sc, expected, got in zip(scenarios, answers, ours, strict=True)
            if normal(got) != normal(expected)]
