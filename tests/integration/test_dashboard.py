"""The Grafana dashboard (``kspark dashboard``) queries what the metrics endpoint serves, on
the real broker and SparkSession, in both execution modes (commit latency is served in
real-time mode only).

A running application with ``metrics.http.port=0`` processes 20 records; its ``/metrics``
then holds every metric name each panel's PromQL queries, with a series matching each
query's selector once ``$application_id`` is the application's id, and the labels each
query groups by on those series; the ``application_id`` variable's query and regex find
the application's id in the scrape. A panel of the other mode only queries names this
mode does not serve (its description says so).
"""

from __future__ import annotations

import re
import time

import pytest

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark._client.dashboard import PANELS, dashboard
from tests.conftest import consume_all
from tests.integration.test_operations_on_spark import _get, _produce
from tests.unit.test_dashboard import queried
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
S = Serdes.String()
_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+\S+$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _series(page: str) -> dict[str, list[dict[str, str]]]:
    """Each metric's series (their label sets) in a Prometheus text page."""
    out: dict[str, list[dict[str, str]]] = {}
    for line in page.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.setdefault(m.group(1), []).append(dict(_LABEL.findall(m.group(2) or "")))
    return out


def _matches(labels: dict[str, str], matchers: list[tuple[str, str, str]]) -> bool:
    for label, op, value in matchers:
        have = labels.get(label, "")
        ok = {"=": have == value, "!=": have != value,
              "=~": re.fullmatch(value, have) is not None,
              "!~": re.fullmatch(value, have) is None}[op]
        if not ok:
            return False
    return True


def _exprs(mode: str) -> list[str]:
    """The PromQL of the panels whose metrics ``mode`` serves."""
    titles = {p.title for p in PANELS if mode in p.modes}
    return [t["expr"] for p in dashboard()["panels"] if p["title"] in titles
            for t in p["targets"]]


def _problems(expr: str, series: dict[str, list[dict[str, str]]], app: str) -> list[str]:
    """What ``expr`` queries that the scrape does not hold, one line each."""
    metrics, grouping = queried(expr.replace("$application_id", app))
    out = []
    for name, matchers in metrics.items():
        if name not in series:
            out.append(f"{name}: not served")
            continue
        hit = [s for s in series[name] if _matches(s, matchers)]
        if not hit:
            out.append(f"{name}: no series matches {matchers} (labels: {series[name][:2]})")
        for label in grouping:
            if not all(label in s for s in hit):
                out.append(f"{name}: grouped by {label!r}, a label its series lack")
    return out


def _topology(src: str, dst: str):
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).map_values(str.upper).to(
        dst, key_serde=S, value_serde=S)
    return b.build()


@sampled_modes("real_time")  # micro_batch in the full matrix (the suite's time)
def test_every_metric_the_dashboard_queries_is_served(
        execution_mode, broker, admin, spark, topic_name, app_config):
    src, dst = (topic_name(f"dash-{execution_mode}-{n}") for n in ("in", "out"))
    admin.create_topics({src: 2, dst: 2})
    _produce(broker, src, [(i % 2, f"k{i}", f"v{i}", 1000 + i) for i in range(20)])
    config = app_config(execution_mode=execution_mode, autostop_at="none",
                        metrics_http_port=0, commit_interval_ms=200)
    app = config["application.id"]
    streams = KafkaStreams(_topology(src, dst), config, spark=spark)
    streams.start()
    try:
        assert len(consume_all(broker, dst, 20)) == 20
        port = streams.metrics_http_port()
        exprs = _exprs(execution_mode)
        deadline = time.monotonic() + 120
        while True:  # figures reach the driver with commits: wait for the last ones
            status, page = _get(port, "/metrics")
            series = _series(page)
            problems = [f"{e}\n  {p}" for e in exprs for p in _problems(e, series, app)]
            if status == 200 and not problems or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200
        assert problems == [], "\n".join(problems)
        variable = dashboard()["templating"]["list"][1]
        metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)",
                                     variable["definition"]).groups()
        regex = re.compile(variable["regex"].strip("/"))
        ids = {m.group(1) for s in series[metric]
               if (m := regex.fullmatch(s.get(label, ""))) is not None}
        assert ids == {app}, (ids, [s.get(label) for s in series[metric]])
        others = {name for p in PANELS if execution_mode not in p.modes
                  for expr, _ in p.targets for name in queried(expr)[0]}
        assert not others & series.keys(), others & series.keys()
    finally:
        streams.close()
