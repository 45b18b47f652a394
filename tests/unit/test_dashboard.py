"""The Grafana dashboard (``kspark dashboard``): valid JSON Grafana imports, panels that do
not overlap, queries over the names the metrics endpoint gives. Whether the endpoint
serves every queried name is tests/integration/test_dashboard.py's check; its PromQL
reader (:func:`queried`) lives here, with its own tests."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from kspark._cli.main import build_parser, main
from kspark._client.dashboard import PANELS, dashboard, prom
from kspark._client.metrics_endpoint import prometheus_name

# the PromQL words that are not metric names (aggregations, functions, modifiers)
_WORDS = {"sum", "avg", "max", "min", "count", "rate", "irate", "increase", "by", "without",
          "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset",
          "bool", "topk", "bottomk", "quantile", "stddev", "stdvar", "abs", "delta",
          "max_over_time", "min_over_time", "avg_over_time", "label_values", "time"}
_MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_SELECTOR = re.compile(r"([a-zA-Z_:][\w:]*)?\s*\{([^}]*)\}")


def queried(expr: str) -> tuple[dict[str, list[tuple[str, str, str]]], set[str]]:
    """``({metric: [(label, op, value), ...]}, {grouping label, ...})`` of a PromQL
    expression: each metric it queries with its selector's matchers, and the labels of its
    ``by (...)`` / ``without (...)`` clauses. Identifiers followed by ``(`` are functions;
    range durations, ``$variables`` and strings are left out.

    >>> queried('sum by (topic) (rate(m_total{a="x", b=~"y.*"}[5m])) / other')
    ({'m_total': [('a', '=', 'x'), ('b', '=~', 'y.*')], 'other': []}, {'topic'})
    """
    metrics: dict[str, list[tuple[str, str, str]]] = {}
    for name, body in _SELECTOR.findall(expr):
        metrics.setdefault(name, []).extend(_MATCHER.findall(body))
    grouping = {label.strip() for clause in
                re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr)
                for label in clause.split(",") if label.strip()}
    rest = re.sub(r"\b(?:by|without)\s*\([^)]*\)", " ", expr)
    rest = re.sub(r'\{[^}]*\}|\[[^\]]*\]|"(?:[^"\\]|\\.)*"|\$\w+', " ", rest)
    for word in re.findall(r"[a-zA-Z_:][\w:]*(?=\s*[\s)\[{,]|\s*$)", rest):
        if word not in _WORDS and not re.fullmatch(r"\d+\w*", word):
            metrics.setdefault(word, [])
    return metrics, grouping


def _exprs() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]


def test_the_reader_finds_metrics_with_and_without_selectors_and_skips_functions():
    assert queried("count(count by (thread_id) (x_total{thread_id=~\"a-.*\"}))") == \
        ({"x_total": [("thread_id", "=~", "a-.*")]}, {"thread_id"})
    assert queried("max(up) + sum without (job) (foo[5m])") == \
        ({"up": [], "foo": []}, {"job"})


def test_the_json_round_trips_and_has_what_a_grafana_import_needs():
    d = dashboard()
    assert json.loads(json.dumps(d)) == d
    assert d["schemaVersion"] == 39 and d["uid"] and d["title"] and d["id"] is None
    assert [i["name"] for i in d["__inputs"]] == ["DS_PROMETHEUS"]
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    app = variables["application_id"]
    assert app["definition"] == app["query"]["query"]
    regex = re.compile(app["regex"].strip("/"))
    assert [regex.fullmatch(t).group(1) for t in
            ("orders-StreamThread-1", "orders-StreamThread-12", "my-app-micro-batch")] == \
        ["orders", "orders", "my-app"]
    assert {r["id"] for r in d["__requires"] if r["type"] == "panel"} == \
        {p["type"] for p in d["panels"]}


def test_panel_ids_are_unique_and_panels_do_not_overlap():
    panels = dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels) == len(PANELS)
    cells: dict[tuple[int, int], str] = {}
    for p in panels:
        g = p["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]


def test_every_panel_queries_prometheus_through_the_datasource_variable():
    for p in dashboard()["panels"]:
        assert p["type"] in ("timeseries", "stat") and p["targets"], p["title"]
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert [t["refId"] for t in p["targets"]] == ["ABCDEFGH"[i] for i in
                                                      range(len(p["targets"]))]
        for t in p["targets"]:
            assert t["datasource"] == p["datasource"] and t["expr"].count("(") == \
                t["expr"].count(")")


def test_every_query_is_of_one_application_and_of_names_the_endpoint_gives():
    for expr in _exprs():
        metrics, _ = queried(expr)
        assert metrics, expr
        for name, matchers in metrics.items():
            assert name.startswith("kafka_streams_"), expr
            labels = {label for label, _, value in matchers if "$application_id" in value}
            assert labels in ({"thread_id"}, {"client_id"}), expr


@pytest.mark.parametrize("group, name", [
    ("stream-task-metrics", "dropped-records-total"),
    ("stream-thread-metrics", "commit-latency-avg"),
    ("consumer-fetch-manager-metrics", "records-lag"),
    ("kafka.consumer", "records-lag.max"),
])
def test_prom_names_metrics_as_the_endpoint_does(group, name):
    assert prom(group, name) == prometheus_name(group, name)


def test_kspark_dashboard_prints_the_dashboard():
    assert build_parser().parse_args(["dashboard"]).command == "dashboard"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dashboard"]) == 0
    assert json.loads(out.getvalue()) == json.loads(json.dumps(dashboard()))
