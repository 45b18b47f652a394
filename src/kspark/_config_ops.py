"""The config keys of running an application in production: metrics and the metrics
endpoint (``docs/operations.md``), and the interactive-query endpoints of the workers
(``docs/interactive-queries.md``), declared with the others in ``config.py``.

Example:
    >>> [k[0] for k in operations_config()][:3]
    ['metrics.recording.level', 'metrics.http.port', 'metrics.http.host']
    >>> [k[0] for k in operations_config()][3:]
    ['query.endpoint.enabled', 'query.endpoint.host', 'query.timeout.ms']

and those of standby replicas and warm-up (KIP-441: Kafka Streams' names, defaults and
meanings; both modes):

    >>> [(k[0], k[2]) for k in standby_config()][:2]
    [('num.standby.replicas', 0), ('acceptable.recovery.lag', 10000)]
    >>> [(k[0], k[2]) for k in standby_config()][2:]
    [('max.warmup.replicas', 2), ('probing.rebalance.interval.ms', 600000)]
"""

from __future__ import annotations

from typing import Any

__all__ = ["operations_config", "standby_config"]


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


def _at_least(n: int) -> Any:
    def check(v: Any) -> str | None:
        return None if v >= n else f"must be at least {n}"
    return check


def standby_config() -> list[tuple[str, type, Any, str, Any]]:
    """(name, type, default, doc, validator) of each key."""
    return [
        ("num.standby.replicas", int, 0, "How many warm copies of each task's persistent "
         "stores are kept on other executors by tailing its changelogs (Kafka Streams' "
         "standby tasks): by other stream threads in real_time mode, by rounds of updates "
         "beside the micro-batches in micro_batch mode. When an executor is lost, each of "
         "its tasks moves to the holder of its freshest copy and restores only the "
         "changelog records written since that copy's last update. Needs processing.guarantee="
         "exactly_once_v2 (a copy then holds committed state only) and at least two "
         "executors (a copy is never on the active's executor).", _at_least(0)),
        ("acceptable.recovery.lag", int, 10_000, "How far (changelog records) a warm-up copy "
         "may be behind for its task to move back to the thread (real_time) or executor "
         "(micro_batch) it was taken from (Kafka Streams' meaning).", _at_least(0)),
        ("max.warmup.replicas", int, 2, "How many warm-up copies (of tasks waiting to move "
         "back) are kept at once, over the standbys.",
         _at_least(1)),
        ("probing.rebalance.interval.ms", int, 600_000, "real_time mode: how often the "
         "driver checks whether warm-up copies have caught up, to move their tasks back "
         "(Kafka Streams' probing rebalance). micro_batch mode places its tasks anew before "
         "every batch, so a task moves back at the first batch after its copy caught up.",
         _at_least(60_000)),
    ]
