"""Which Kafka Streams metric each recorded count becomes, and the driver's
``{MetricName: Metric}`` (:func:`build_metrics`).

The names, groups, tags, descriptions and recording levels are Java Kafka Streams 4.1's, as
its TopologyTestDriver registers them (``tests/conformance/MetricNames.java`` prints Java's;
``test_metric_names`` compares). As in Java every metric of a task exists whatever
``metrics.recording.level`` is; below its level a metric is not recorded (a total stays 0,
an average or maximum NaN).

Example:
    >>> from kspark._engine.metrics.stats import TaskStats
    >>> s = TaskStats("0_0", level=1)
    >>> s.shape("task"); s.shape("source", "KSTREAM-SOURCE-0000000000")
    >>> s.record("process", 1500); s.record("dropped-records")
    >>> m = build_metrics(s.take(), thread_of=lambda task: "main", rate=lambda key, n: 0.0)
    >>> by = {(k.group, k.name, k.tags.get("processor-node-id")): v.metric_value()
    ...       for k, v in m.items()}
    >>> by[("stream-task-metrics", "process-total", None)]
    1
    >>> by[("stream-task-metrics", "dropped-records-total", None)]
    1
    >>> by[("stream-processor-node-metrics", "process-total", "KSTREAM-SOURCE-0000000000")]
    0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from kspark._engine.metrics.names import Metric, MetricName
from kspark._engine.metrics.stats import Stat, split_key

__all__ = ["build_metrics", "TASK_GROUP", "NODE_GROUP", "TOPIC_GROUP", "THREAD_GROUP",
           "STATE_GROUP", "CACHE_GROUP", "DESCRIPTIONS"]

TASK_GROUP, NODE_GROUP = "stream-task-metrics", "stream-processor-node-metrics"
TOPIC_GROUP, THREAD_GROUP = "stream-topic-metrics", "stream-thread-metrics"
STATE_GROUP, CACHE_GROUP = "stream-state-metrics", "stream-record-cache-metrics"

_CALLS = {"rate": "The average number of calls to {} per second",
          "total": "The total number of calls to {}",
          "avg": "The average latency of calls to {}", "max": "The maximum latency of calls to {}"}
_E2E = ("The {} end-to-end latency of a record, measuring by comparing the record timestamp "
        "with the system time when it has been fully processed by the node")
_LATE = ("The observed {} lateness of records in milliseconds, measured by comparing the "
         "record timestamp with the current stream time")

# (metric name, the stat it reads, how: total/rate/avg/max/min/gauge, description)
_TASK = [
    ("active-buffer-count", "=buffered", "gauge", "The count of buffered records that are "
     "polled from consumer and not yet processed for this active task"),
    ("active-process-ratio", "=process-ratio", "gauge", "The fraction of time the thread spent "
     "on processing this task among all assigned active tasks"),
    ("dropped-records-rate", "dropped-records", "rate",
     "The average number of dropped records per second"),
    ("dropped-records-total", "dropped-records", "total", "The total number of dropped records"),
    ("enforced-processing-rate", "enforced-processing", "rate", "The average number of "
     "occurrences of enforced-processing operations per second"),
    ("enforced-processing-total", "enforced-processing", "total", "The total number of "
     "occurrences of enforced-processing operations"),
    ("process-latency-avg", "process", "avg", _CALLS["avg"].format("process")),
    ("process-latency-max", "process", "max", _CALLS["max"].format("process")),
    ("process-rate", "process", "rate", _CALLS["rate"].format("process")),
    ("process-total", "process", "total", _CALLS["total"].format("process")),
    ("punctuate-latency-avg", "punctuate", "avg", _CALLS["avg"].format("punctuate")),
    ("punctuate-latency-max", "punctuate", "max", _CALLS["max"].format("punctuate")),
    ("punctuate-rate", "punctuate", "rate", _CALLS["rate"].format("punctuate")),
    ("punctuate-total", "punctuate", "total", _CALLS["total"].format("punctuate")),
    ("record-lateness-avg", "record-lateness", "avg", _LATE.format("average")),
    ("record-lateness-max", "record-lateness", "max", _LATE.format("maximum")),
    ("restore-rate", "restore", "rate", "The average number of records restored per second"),
    ("restore-remaining-records-total", "=restore-remaining", "gauge",
     "The total number of records remaining to be restored"),
    ("restore-total", "restore", "total", "The total number of records restored"),
]
_CACHE = [("cache-size-bytes-total", "=cache-size", "gauge",
           "The total size in bytes of this task's cache.")]
# a task with standby copies (KIP-869): the records its copies applied
_STANDBY = [("update-rate", "update", "rate",
             "The average number of records updated per second"),
            ("update-total", "update", "total", "The total number of records updated")]
_NODE = {
    "source": [("process-rate", "node-process", "rate", _CALLS["rate"].format("process")),
               ("process-total", "node-process", "total", _CALLS["total"].format("process"))],
    "e2e": [(f"record-e2e-latency-{k}", "e2e", k, _E2E.format(w))
            for k, w in (("avg", "average"), ("max", "maximum"), ("min", "minimum"))],
    "suppress": [("suppression-emit-rate", "suppression-emit", "rate", "The average number of "
                  "emitted records from the suppression buffer per second"),
                 ("suppression-emit-total", "suppression-emit", "total", "The total number of "
                  "emitted records from the suppression buffer")],
    "window-agg": [
        ("window-aggregate-final-emit-latency-avg", "final-emit-latency", "avg",
         "The average latency of calls to emit final in milliseconds"),
        ("window-aggregate-final-emit-latency-max", "final-emit-latency", "max",
         "The maximum latency of calls to emit final in milliseconds"),
        ("window-aggregate-final-emit-rate", "final-emit", "rate",
         "The average number of emit final records per second"),
        ("window-aggregate-final-emit-total", "final-emit", "total",
         "The total number of emit final records")],
}
_TOPIC = {
    "consumed": [("bytes-consumed-total", "bytes-consumed", "sum",
                  "The total number of bytes consumed from this topic"),
                 ("records-consumed-total", "bytes-consumed", "total",
                  "The total number of records consumed from this topic")],
    "produced": [("bytes-produced-total", "bytes-produced", "sum",
                  "The total number of bytes produced to this topic"),
                 ("records-produced-total", "bytes-produced", "total",
                  "The total number of records produced to this topic")],
}

def _store_calls(op: str, what: str) -> list[tuple[str, str, str, str]]:
    """A store operation's rate and latency (avg, max), as Java's StateStoreMetrics."""
    return [(f"{op}-latency-avg", f"store-{op}", "avg", f"The average latency of {what}"),
            (f"{op}-latency-max", f"store-{op}", "max", f"The maximum latency of {what}"),
            (f"{op}-rate", f"store-{op}", "rate", f"The average number of {what} per second")]


def _store(*ops: str) -> list[tuple[str, str, str, str]]:
    out = [m for op in (*ops, "flush", "put") for m in _store_calls(op, f"calls to {op}")]
    out += _store_calls("restore", "restorations")
    return out + [(f"record-e2e-latency-{k}", "store-e2e", k, _E2E.format(w))
                  for k, w in (("avg", "average"), ("max", "maximum"), ("min", "minimum"))]


# per store type (the ``<type>-state-id`` tag's type): what Java's metered store records
_KV_STORE = _store("all", "delete", "get", "prefix-scan", "put-all", "put-if-absent", "range")
_STORE = {"rocksdb": _KV_STORE, "in-memory": _KV_STORE,
          "rocksdb-window": _store("fetch"), "in-memory-window": _store("fetch"),
          "rocksdb-session": _store("fetch", "remove"),
          "in-memory-session": _store("fetch", "remove")}
_RECORD_CACHE = [(f"hit-ratio-{k}", "cache-hit-ratio", k, f"The {w} cache hit ratio")
                 for k, w in (("avg", "average"), ("max", "maximum"), ("min", "minimum"))]
DESCRIPTIONS = {name: d for group in (_TASK, _CACHE, _STANDBY, *_NODE.values(), *_TOPIC.values())
                for name, _, _, d in group}


# a topic written or read that no shape declared (a sink's topic chosen per record)
_IMPLIED = {"bytes-produced": "produced", "bytes-consumed": "consumed"}


def _value(stats: Mapping[str, Stat], key: str, how: str,
           rate: Callable[[str, float], float]) -> float | int:
    s = stats.get(key)
    count, total = (s[0], s[1]) if s else (0, 0)
    if how == "total":
        return count
    if how == "sum":
        return total
    if how == "rate":
        return rate(key, count)
    if how == "gauge":
        return total if s else 0.0
    if not count:
        return math.nan
    return {"avg": total / count, "max": s[2], "min": s[3]}[how] if s else math.nan


def build_metrics(stats: Mapping[str, Stat], thread_of: Callable[[str], str],
                  rate: Callable[[str, float], float]) -> dict[MetricName, Metric]:
    """Every task's and node's metrics from ``stats`` (summed :class:`TaskStats` counts,
    with their shape entries); ``thread_of(task id)``: the thread-id tag; ``rate(key,
    count)``: the per-second rate of a stat's count."""
    out: dict[MetricName, Metric] = {}

    def add(defs: list, group: str, tags: dict[str, str], task: str, where: str) -> None:
        for name, stat, how, desc in defs:
            key = f"{stat}|{task}|{where}"
            out_name = MetricName(name, group, desc, tags)
            out[out_name] = Metric(out_name, _value(stats, key, how, rate))

    for key in sorted(stats):
        stat, task, where = split_key(key)
        kind = _IMPLIED.get(stat) or (stat[len("=shape-"):] if stat.startswith("=shape-")
                                      else None)
        if kind is None:
            continue
        tags = {"thread-id": thread_of(task), "task-id": task}
        if kind == "task":
            add(_TASK, TASK_GROUP, tags, task, "")
        elif kind == "cache":
            add(_CACHE, TASK_GROUP, tags, task, "")
        elif kind == "standby":
            add(_STANDBY, TASK_GROUP, tags, task, "")
        elif kind in _NODE:
            add(_NODE[kind], NODE_GROUP, {**tags, "processor-node-id": where}, task, where)
        elif kind == "store":
            store, _, scope = where.partition("|")
            add(_STORE.get(scope, []), STATE_GROUP, {**tags, f"{scope}-state-id": store}, task,
                store)
        elif kind == "record-cache":
            add(_RECORD_CACHE, CACHE_GROUP, {**tags, "record-cache-id": where}, task, where)
        elif kind in _TOPIC:
            node, _, topic = where.partition("|")
            add(_TOPIC[kind], TOPIC_GROUP, {**tags, "processor-node-id": node,
                                            "topic": topic}, task, where)
    return out
