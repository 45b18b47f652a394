"""The counters of async processors (in flight, completed, retried, dead-lettered, latency):
read from a task, summarized for users, and added up across batches and hosts."""

from __future__ import annotations

from typing import Any

__all__ = ["new_metrics", "async_metrics", "summarize_metrics", "merge_metrics"]


def new_metrics() -> dict[str, float]:
    """An async processor's counters, all zero."""
    return {"in_flight": 0, "in_flight_peak": 0, "completed": 0, "retried": 0,
            "dead_lettered": 0, "finished": 0, "total_latency_s": 0.0}


def async_metrics(task: Any, take: bool = False) -> dict[str, dict[str, float]]:
    """The counters of ``task``'s async processors, by processor name; ``take`` resets them
    (a host adds each committed batch's share to its totals)."""
    out = {}
    for node in task.async_nodes:
        m = node.processor.metrics
        out[node.name] = dict(m)
        if take:
            node.processor.metrics = {**new_metrics(), "in_flight": m["in_flight"]}
    return out


def summarize_metrics(raw: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per async processor: ``in_flight`` (now), ``in_flight_peak``, ``completed``,
    ``retried`` (attempts after the first), ``dead_lettered`` and ``latency_avg_ms`` (per
    call, retries and backoffs included).

    Example:
        >>> raw = {"p": {**new_metrics(), "finished": 2, "total_latency_s": 0.1}}
        >>> summarize_metrics(raw)  # doctest: +NORMALIZE_WHITESPACE
        {'p': {'in_flight': 0, 'in_flight_peak': 0, 'completed': 0, 'retried': 0,
               'dead_lettered': 0, 'latency_avg_ms': 50.0}}
    """
    return {name: {"in_flight": m["in_flight"], "in_flight_peak": m["in_flight_peak"],
                   "completed": m["completed"], "retried": m["retried"],
                   "dead_lettered": m["dead_lettered"],
                   "latency_avg_ms": round(1000 * m["total_latency_s"] / m["finished"], 3)
                   if m["finished"] else 0.0}
            for name, m in raw.items()}


def merge_metrics(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]
                  ) -> dict[str, dict[str, float]]:
    """Counters of two hosts or batches added up (peaks: the larger; ``a`` is updated)."""
    for name, m in b.items():
        into = a.setdefault(name, new_metrics())
        for k, v in m.items():
            into[k] = max(into[k], v) if k in ("in_flight_peak", "in_flight") else into[k] + v
    return a
