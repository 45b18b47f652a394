"""The config keys that modules below :mod:`kspark.config` read a default of: the clients'
settings (``_kafka/settings.py``), the Schema Registry serdes and the engine (a task's record
cache and metrics level). Each is declared
here once, ``(name, type, default, doc, validator)``, and :mod:`kspark.config` puts it in its
table; :func:`default_of` reads a default without importing :mod:`kspark.config` (which
imports those modules, so they cannot import it).

Example:
    >>> default_of("retry.backoff.ms")
    100
    >>> KEYS["task.timeout.ms"][:3]
    ('task.timeout.ms', <class 'int'>, 300000)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["KEYS", "default_of", "positive", "non_negative", "one_of", "recording_level"]


def positive(v: Any) -> str | None:
    """A validator: None when ``v`` > 0, else the problem."""
    return None if v > 0 else "must be > 0"


def non_negative(v: Any) -> str | None:
    """A validator: None when ``v`` >= 0, else the problem."""
    return None if v >= 0 else "must be >= 0"


def one_of(*choices: str) -> Callable[[Any], str | None]:
    """A validator taking one of ``choices``."""
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def recording_level(v: Any) -> str | None:
    """A validator of ``metrics.recording.level`` (any case)."""
    return None if str(v).upper() in ("INFO", "DEBUG", "TRACE") else \
        "must be INFO, DEBUG or TRACE"


_DECLARED: list[tuple[str, type, Any, str, Callable[[Any], str | None]]] = [
    ("request.timeout.ms", int, 30000, "How long kspark waits for the brokers to answer "
     "a metadata or admin request before failing with an error naming them.", positive),
    ("task.timeout.ms", int, 300_000, "How long a task (and the driver) keeps "
     "retrying when the Kafka cluster does not answer or a leader or coordinator is "
     "moving (a broker restart) before it fails with an error naming what was "
     "unreachable and for how long (Kafka Streams' key, KIP-572).", non_negative),
    ("retry.backoff.ms", int, 100, "The pause between two tries of a failed client "
     "call (doubling up to a second while a fault lasts); also every client's "
     "retry.backoff.ms.", positive),
    ("async.max.in.flight", int, 64, "KIP-311: the default number of records an async "
     "step (map_values_async, ...) of one task has in flight at once.", positive),
    ("global.consumer.auto.offset.reset", str, "earliest", "Where a global store is "
     "rebuilt from when its offsets are invalid (KIP-406): 'earliest' or 'latest'; a "
     "global table's own offset_reset overrides it.", one_of("earliest", "latest")),
    ("statestore.cache.max.bytes", int, 10 * 1024 * 1024, "Record cache for DSL stores: "
     "above 0, a table emits each key's latest change once per commit (on Spark: per "
     "micro-batch); 0 emits every update. Deprecated alias: cache.max.bytes.buffering.",
     non_negative),
    ("metrics.recording.level", str, "INFO", "Which metrics are recorded, as in Kafka "
     "Streams: INFO (dropped records, end-to-end latency, topic throughput, ...), DEBUG "
     "(adds per-task process, commit and punctuate figures, record lateness, source "
     "nodes' rates) or TRACE. Every metric exists at any level; one below it is not "
     "recorded (a total stays 0, an average NaN).", recording_level),
]
KEYS: dict[str, tuple[str, type, Any, str, Callable[[Any], str | None]]] = {
    k[0]: k for k in _DECLARED}


def default_of(name: str) -> Any:
    """The declared default of ``name``, one of :data:`KEYS` (``kspark.config``'s
    ``declared_default`` reads every key)."""
    return KEYS[name][2]
