"""The config keys of running an application in production: metrics and the metrics
endpoint (``docs/operations.md``), and the interactive-query endpoints of the workers
(``docs/interactive-queries.md``), declared with the others in ``config.py``.

Example:
    >>> [k[0] for k in operations_config()][:3]
    ['metrics.recording.level', 'metrics.http.port', 'metrics.http.host']
    >>> [k[0] for k in operations_config()][3:]
    ['query.endpoint.enabled', 'query.endpoint.host', 'query.timeout.ms']
"""

from __future__ import annotations

from typing import Any

__all__ = ["operations_config"]


def _level(v: Any) -> str | None:
    return None if str(v).upper() in ("INFO", "DEBUG", "TRACE") else "must be INFO, DEBUG or TRACE"


def _port(v: Any) -> str | None:
    return None if 0 <= v <= 65535 else "must be a port number (0 picks a free port)"


def _host(v: Any) -> str | None:
    return None if v.strip() else "must not be empty (leave it out for 127.0.0.1)"


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be positive"


def operations_config() -> list[tuple[str, type, Any, str, Any]]:
    """(name, type, default, doc, validator) of each key."""
    return [
        ("metrics.recording.level", str, "INFO", "Which metrics are recorded, as in Kafka "
         "Streams: INFO (dropped records, end-to-end latency, topic throughput, ...), DEBUG "
         "(adds per-task process, commit and punctuate figures, record lateness, source "
         "nodes' rates) or TRACE. Every metric exists at any level; one below it is not "
         "recorded (a total stays 0, an average NaN).", _level),
        ("metrics.http.port", int, None, "If set, the driver serves /metrics (Prometheus), "
         "/health/live and /health/ready on this port (0 picks a free one; "
         "KafkaStreams.metrics_http_port() tells which). Off by default.", _port),
        ("metrics.http.host", str, "127.0.0.1", "The address the metrics endpoint binds to "
         "(0.0.0.0: every interface, say for a Kubernetes probe).", _host),
        ("query.endpoint.enabled", bool, True, "kspark: each Python worker that holds tasks "
         "with state stores serves interactive queries (KafkaStreams.store and query, "
         "kspark store) on a port of its own; false: none is opened and queries fail.", None),
        ("query.endpoint.host", str, "127.0.0.1", "kspark: the address the workers' "
         "interactive-query endpoints bind to and announce (loopback by default: queries "
         "then reach only workers on the querying machine). 0.0.0.0 binds every interface "
         "and announces the worker's host name. A query must carry the endpoint's token, "
         "announced in the application's control topic.", _host),
        ("query.timeout.ms", int, 10000, "kspark: how long an interactive query waits for a "
         "partition's task to become queryable (restoring, moving, a worker starting) "
         "before it fails with StateStoreNotAvailableError.", _positive),
    ]
