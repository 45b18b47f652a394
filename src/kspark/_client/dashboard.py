"""A Grafana dashboard over the metrics endpoint's ``/metrics`` (``metrics.http.port``).

:func:`dashboard` builds it from :data:`PANELS`, a declared list: each :class:`Panel` names
its queries in PromQL over the Prometheus names the endpoint serves
(``kafka_streams_<group>_<name>``, ``metrics_endpoint.prometheus_name``). ``kspark
dashboard > kspark.json`` prints it, ready for Grafana's *Dashboards > New > Import*
(schema 39: Grafana 10.4 and later). Two variables choose what it shows: ``datasource``
(a Prometheus; ``DS_PROMETHEUS`` when imported) and ``application_id``, read from the
``thread_id`` label (``<application.id>-StreamThread-<n>`` in real-time mode,
``<application.id>-micro-batch`` in micro-batch mode); the consumer lag's series carry
``client_id="<application.id>-consumer"``.

Imports nothing of kspark: the CLI loads it with no start-up cost.

Example:
    >>> d = dashboard()
    >>> d["schemaVersion"], d["templating"]["list"][1]["name"]
    (39, 'application_id')
    >>> [p["title"] for p in d["panels"]][:4]
    ['State', 'Stream threads', 'Tasks', 'Consumer lag']
    >>> prom("stream-task-metrics", "dropped-records-total")
    'kafka_streams_stream_task_metrics_dropped_records_total'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["dashboard", "Panel", "PANELS", "prom", "THREADS", "CONSUMER", "CLIENT", "UID"]

UID = "kspark-streams"
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# the series of one application: its threads' (every task, node and topic metric carries
# one) and its consumer's
THREADS = 'thread_id=~"$application_id-(StreamThread-[0-9]+|micro-batch)"'
CONSUMER = 'client_id="$application_id-consumer"'
# the client's own metrics (stream-metrics): client-id is client.id, by default the app id
CLIENT = 'client_id="$application_id"'
# the application id out of a thread_id (Grafana keeps the first capture group)
APPLICATION_REGEX = "/^(.+)-(?:StreamThread-[0-9]+|micro-batch)$/"
_RATE = "[$__rate_interval]"
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prom(group: str, name: str) -> str:
    """The Prometheus name the endpoint gives Kafka Streams' metric ``name`` of ``group``
    (the same as ``metrics_endpoint.prometheus_name``, which this module does not import:
    it would load prometheus-client into every ``kspark`` command).

    >>> prom("consumer-fetch-manager-metrics", "records-lag")
    'kafka_streams_consumer_fetch_manager_metrics_records_lag'
    """
    return f"kafka_streams_{_INVALID.sub('_', group)}_{_INVALID.sub('_', name)}"


def _task(name: str) -> str:
    return f"{prom('stream-task-metrics', name)}{{{THREADS}}}"


def _node(name: str) -> str:
    return f"{prom('stream-processor-node-metrics', name)}{{{THREADS}}}"


def _topic(name: str) -> str:
    return f"{prom('stream-topic-metrics', name)}{{{THREADS}}}"


def _thread(name: str) -> str:
    return f"{prom('stream-thread-metrics', name)}{{{THREADS}}}"


_LAG = f"{prom('consumer-fetch-manager-metrics', 'records-lag')}{{{CONSUMER}}}"


@dataclass(frozen=True)
class Panel:
    """One panel: ``targets`` are ``(PromQL, legend)`` pairs; ``kind`` ``timeseries`` or
    ``stat``; ``unit`` a Grafana unit; ``modes``: the execution modes whose endpoint serves
    its metrics (both unless it says)."""

    title: str
    targets: tuple[tuple[str, str], ...]
    description: str
    unit: str = "short"
    kind: str = "timeseries"
    width: int = 12
    height: int = 8
    modes: tuple[str, ...] = ("micro_batch", "real_time")
    text: str = "auto"  # a stat panel's text: its value, or its series' name ("name")


_STATS = (
    Panel("State",
          ((f"{prom('stream-metrics', 'state')}{{{CLIENT}}} == 1", "{{state}}"),),
          "The client's state (stream-metrics' state: RUNNING, REBALANCING, ERROR, ...), "
          "as Kafka Streams names it; served with the state in a label. Selected by "
          "client_id, which is client.id when the application sets one.",
          kind="stat", width=4, height=4, text="name"),
    Panel("Stream threads",
          ((f"{prom('stream-metrics', 'alive-stream-threads')}{{{CLIENT}}}", "threads"),),
          "Alive stream threads (stream-metrics' alive-stream-threads): in real-time mode "
          "the stream threads reporting, in micro-batch mode 1, the driver's view of the "
          "micro-batches' tasks; 0 once the client stops or fails.",
          kind="stat", width=4, height=4),
    Panel("Tasks", ((f"count({_task('dropped-records-total')})", "tasks"),),
          "Tasks the driver has figures of (one per input partition and sub-topology).",
          kind="stat", width=4, height=4),
    Panel("Consumer lag", ((f"sum({_LAG})", "records"),),
          "Records of the input partitions not processed yet (records-lag, summed).",
          kind="stat", width=6, height=4),
    Panel("Dropped records", ((f"sum({_task('dropped-records-total')})", "dropped"),),
          "Records dropped since the run started: late for a closed window, skipped by a "
          "handler, or with an invalid timestamp (dropped-records-total).",
          kind="stat", width=6, height=4),
)

_SERIES = (
    Panel("Records in and out",
          ((f"sum by (topic) (rate({_topic('records-consumed-total')}{_RATE}))",
            "in: {{topic}}"),
           (f"sum by (topic) (rate({_topic('records-produced-total')}{_RATE}))",
            "out: {{topic}}")),
          "Records read from each input topic and written to each output (and repartition) "
          "topic per second (stream-topic-metrics, committed work).", unit="recps"),
    Panel("Records processed",
          ((f"sum by (thread_id) (rate({_thread('process-total')}{_RATE}))",
            "{{thread_id}}"),),
          "Records processed per second by each thread (stream-thread-metrics "
          "process-total).", unit="recps"),
    Panel("Bytes in and out",
          ((f"sum by (topic) (rate({_topic('bytes-consumed-total')}{_RATE}))",
            "in: {{topic}}"),
           (f"sum by (topic) (rate({_topic('bytes-produced-total')}{_RATE}))",
            "out: {{topic}}")),
          "Bytes read and written per topic per second, as Kafka Streams counts them "
          "(key, value, headers, topic name, timestamp, offset, partition).", unit="Bps"),
    Panel("Consumer lag by topic",
          ((f"sum by (topic) ({_LAG})", "{{topic}}"),),
          "Records of each input topic not processed yet (records-lag of its partitions).",
          unit="short"),
    Panel("End-to-end latency",
          ((f"max by (processor_node_id) ({_node('record-e2e-latency-max')})",
            "max {{processor_node_id}}"),
           (f"avg by (processor_node_id) ({_node('record-e2e-latency-avg')})",
            "avg {{processor_node_id}}")),
          "Wall clock minus the record's timestamp when a source node or a sink node "
          "finished it (record-e2e-latency-avg, -max), per node.", unit="ms"),
    Panel("Dropped records per second",
          ((f"sum by (task_id) (rate({_task('dropped-records-total')}{_RATE}))",
            "{{task_id}}"),),
          "Records dropped per second, per task (dropped-records-total).", unit="recps"),
    Panel("Commits",
          ((f"sum by (thread_id) (rate({_thread('commit-total')}{_RATE}))",
            "{{thread_id}}"),),
          "Commits per second: each stream thread's (real-time mode), or the committed task "
          "batches of the micro-batches (micro-batch mode).", unit="ops"),
    Panel("Commit latency (real-time mode)",
          ((f"max by (thread_id) ({_thread('commit-latency-max')})", "max {{thread_id}}"),
           (f"avg by (thread_id) ({_thread('commit-latency-avg')})", "avg {{thread_id}}")),
          "How long each stream thread's commits take (commit-latency-avg, -max). Served "
          "in real-time mode only: a micro-batch's commit is Spark's.", unit="ms",
          modes=("real_time",)),
    Panel("Restored records",
          ((f"sum by (task_id) (rate({_task('restore-total')}{_RATE}))", "{{task_id}}"),),
          "Records restored into the tasks' stores per second when they open "
          "(restore-total; recorded at metrics.recording.level=DEBUG, 0 below).",
          unit="recps"),
    Panel("Records left to restore",
          ((f"sum by (task_id) ({_task('restore-remaining-records-total')})", "{{task_id}}"),),
          "Changelog records still to restore while a task's stores restore, 0 once "
          "restored (restore-remaining-records-total).", unit="short"),
)

PANELS: tuple[Panel, ...] = _STATS + _SERIES


def _layout(panels: tuple[Panel, ...]) -> list[dict[str, int]]:
    """Each panel's ``gridPos``: left to right on Grafana's 24 columns, a new row when the
    next one does not fit; a row is as high as its highest panel."""
    out, x, y, row_height = [], 0, 0, 0
    for p in panels:
        if x + p.width > 24:
            x, y, row_height = 0, y + row_height, 0
        out.append({"h": p.height, "w": p.width, "x": x, "y": y})
        x, row_height = x + p.width, max(row_height, p.height)
    return out


def _panel_json(panel: Panel, panel_id: int, grid: dict[str, int]) -> dict[str, Any]:
    targets = [{"datasource": DATASOURCE, "editorMode": "code", "expr": expr,
                "legendFormat": legend, "range": True, "refId": chr(ord("A") + i)}
               for i, (expr, legend) in enumerate(panel.targets)]
    defaults: dict[str, Any] = {"unit": panel.unit, "min": 0, "color": {"mode": "palette-classic"}}
    if panel.kind == "stat":
        options: dict[str, Any] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value", "graphMode": "area", "justifyMode": "auto",
            "orientation": "auto", "textMode": panel.text}
        defaults["color"] = {"mode": "thresholds"}
        defaults["thresholds"] = {"mode": "absolute",
                                  "steps": [{"color": "green", "value": None}]}
    else:
        options = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                   "tooltip": {"mode": "multi", "sort": "desc"}}
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                              "showPoints": "never", "spanNulls": False}
    return {"id": panel_id, "type": panel.kind, "title": panel.title,
            "description": panel.description, "datasource": DATASOURCE, "gridPos": grid,
            "fieldConfig": {"defaults": defaults, "overrides": []}, "options": options,
            "targets": targets}


def _variables() -> list[dict[str, Any]]:
    """``datasource`` (any Prometheus; the import's ``DS_PROMETHEUS``) and
    ``application_id`` (every application id the thread_id label holds)."""
    query = f"label_values({prom('stream-thread-metrics', 'process-total')}, thread_id)"
    return [
        {"name": "datasource", "label": "Prometheus", "type": "datasource",
         "query": "prometheus", "current": {"text": "Prometheus", "value": "${DS_PROMETHEUS}"},
         "hide": 0, "includeAll": False, "multi": False, "options": [], "refresh": 1,
         "regex": ""},
        {"name": "application_id", "label": "application.id", "type": "query",
         "datasource": DATASOURCE, "definition": query,
         "query": {"qryType": 1, "query": query,
                   "refId": "PrometheusVariableQueryEditor-VariableQuery"},
         "regex": APPLICATION_REGEX, "current": {}, "hide": 0, "includeAll": False,
         "multi": False, "options": [], "refresh": 2, "sort": 1},
    ]


def dashboard() -> dict[str, Any]:
    """The dashboard, as Grafana's JSON model (``json.dumps`` it to import it)."""
    kinds = sorted({p.kind for p in PANELS})
    requires = [{"type": "grafana", "id": "grafana", "name": "Grafana", "version": "10.4.0"},
                {"type": "datasource", "id": "prometheus", "name": "Prometheus",
                 "version": "1.0.0"}]
    requires += [{"type": "panel", "id": k, "name": k.capitalize(), "version": ""}
                 for k in kinds]
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus",
                      "description": "The Prometheus that scrapes the kspark driver's "
                      "/metrics (metrics.http.port)", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "__requires": requires,
        "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana",
                                                               "uid": "-- Grafana --"},
                                  "enable": True, "hide": True, "iconColor":
                                  "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
                                  "type": "dashboard"}]},
        "description": "A kspark application (Kafka Streams on Spark): throughput, lag, "
                       "latency, dropped records, commits and restores. Made by "
                       "`kspark dashboard`.",
        "editable": True, "graphTooltip": 1, "id": None, "links": [],
        "panels": [_panel_json(p, i, grid) for i, (p, grid)
                   in enumerate(zip(PANELS, _layout(PANELS), strict=True), start=1)],
        "refresh": "30s", "schemaVersion": SCHEMA_VERSION, "tags": ["kspark", "kafka-streams"],
        "templating": {"list": _variables()},
        "time": {"from": "now-1h", "to": "now"}, "timepicker": {}, "timezone": "",
        "title": "kspark: Kafka Streams application", "uid": UID, "version": 1,
    }
