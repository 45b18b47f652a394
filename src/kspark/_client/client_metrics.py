"""Kafka Streams' client-level metrics (group ``stream-metrics``, tag ``client-id``), as
Java's ``ClientMetrics`` names them: ``version``, ``commit-id``, ``application-id``,
``topology-description``, ``state`` and ``alive-stream-threads``.

``state`` is the client's state's name (``RUNNING``, ``REBALANCING``, ...), as in Java.
``alive-stream-threads`` counts the stream threads running or taking part in a rebalance:
in real-time mode the threads that report (``stream-thread-metrics``' ``thread-id`` tags),
in micro-batch mode the driver's one view of the micro-batches; 0 once the client is not
running. Java's ``failed-stream-threads`` is not offered: a real-time thread that fails is
started again or fails the client, so no thread stays failed.

Example:
    >>> m = client_metrics("app", "app", "RUNNING", {"app-StreamThread-1", "app-StreamThread-2"},
    ...                    "Topologies: ...")
    >>> m.value("state"), m.value("alive-stream-threads"), m.value("application-id")
    ('RUNNING', 2, 'app')
    >>> client_metrics("app", "app", "NOT_RUNNING", {"app-micro-batch"}, "").value(
    ...     "alive-stream-threads")
    0
"""

from __future__ import annotations

from collections.abc import Iterable

from kspark._engine.metrics.names import Metric, MetricName, Metrics

__all__ = ["client_metrics", "CLIENT_GROUP", "ALIVE_STATES"]

CLIENT_GROUP = "stream-metrics"
ALIVE_STATES = ("RUNNING", "REBALANCING")  # threads alive: running or in a rebalance

_DESCRIPTIONS = {
    "version": "The version of the Kafka Streams client",
    "commit-id": "The version control commit ID of the Kafka Streams client",
    "application-id": "The application ID of the Kafka Streams client",
    "topology-description": "The description of the topology executed in the Kafka "
                            "Streams client",
    "state": "The state of the Kafka Streams client",
    "alive-stream-threads": "The current number of alive stream threads that are running "
                            "or participating in rebalance",
}


def client_metrics(client_id: str, app_id: str, state: str, threads: Iterable[str],
                   topology: str, version: str = "unknown") -> Metrics:
    """The client's metrics: ``threads`` are the thread ids the run reports, ``topology``
    the topology's description text, ``state`` the client's state's name."""
    alive = len(set(threads)) if state in ALIVE_STATES else 0
    values: dict[str, str | int] = {
        "version": version, "commit-id": "unknown", "application-id": app_id,
        "topology-description": topology, "state": state, "alive-stream-threads": alive}
    out = Metrics()
    for name, value in values.items():
        key = MetricName(name, CLIENT_GROUP, _DESCRIPTIONS[name], {"client-id": client_id})
        out[key] = Metric(key, value)
    return out
