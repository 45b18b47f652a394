"""Config as Kafka Streams users write it: Java's deprecated names mapped to today's, and
for each Java key kspark does not take, an error that says what kspark does instead.

- :data:`DEPRECATED_KEYS`: accepted with a ``DeprecationWarning``, read as today's key; when
  both are given, today's wins (as Java's ``StreamsConfigUtils.getTotalCacheSize``); and
  :data:`DEPRECATED_VALUES`, read as today's value, with a warning too.
- :data:`JAVA_KEYS`: Kafka Streams keys kspark does not accept, and why.
- :data:`CLIENT_KEYS`: consumer keys kspark does not honour under ``consumer.`` or
  ``restore.consumer.`` (nor at top level); the keys kspark's guarantees fix are refused by
  ``kspark._kafka.settings.check_owned``.
- ``main.consumer.*`` and ``global.consumer.*`` (but ``global.consumer.auto.offset.reset``)
  point to the prefixes kspark has.

Example:
    >>> unknown_key("rack.aware.assignment.strategy")[:81]
    "unknown config key 'rack.aware.assignment.strategy' (a Kafka Streams key): kspark"
    >>> refused_client_key("consumer.auto.offset.reset")[:72]
    "config key 'consumer.auto.offset.reset' is not honoured: use auto.offset"
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["DEPRECATED_KEYS", "DEPRECATED_VALUES", "JAVA_KEYS", "CLIENT_KEYS", "renamed",
           "renamed_value", "unknown_key", "refused_client_key", "task_idle_problem"]

log = logging.getLogger("kspark")

DEPRECATED_KEYS = {"cache.max.bytes.buffering": "statestore.cache.max.bytes"}  # KIP-770
# key -> {deprecated value: today's}: the seed's and Kafka 2.5's names of exactly_once_v2
DEPRECATED_VALUES = {"processing.guarantee": {"exactly_once": "exactly_once_v2",
                                              "exactly_once_beta": "exactly_once_v2"}}

_PLACED = ("kspark has no consumer-group rebalances: the Spark driver places each task near "
           "its state (docs/cluster.md, \"Placement\"), not by the brokers' racks; standby "
           "copies are spread over executors' client tags with rack.aware.assignment.tags")
_METRICS = ("kspark reports KafkaStreams.metrics() and progress() (and Spark's UI); it has no "
            "metrics reporters")
JAVA_KEYS: dict[str, str] = {
    "default.deserialization.exception.handler": "use deserialization.exception.handler "
    "(Kafka Streams 4's name; it takes the same values)",
    "default.production.exception.handler": "use production.exception.handler (Kafka "
    "Streams 4's name; it takes the same values)",
    "rack.aware.assignment.strategy": _PLACED,
    "application.server": "not taken: each Spark worker holding tasks serves interactive "
    "queries on a port of its own and announces it (docs/interactive-queries.md); set "
    "query.endpoint.host for the address they bind to",
    "default.dsl.store": "choose per store: Materialized.as_(...).in_memory() or a Stores "
    "supplier; DSL stores are persistent (RocksDB) by default",
    "dsl.store.suppliers.class": "choose per store: Materialized.as_(...).in_memory() or a "
    "Stores supplier; DSL stores are persistent (RocksDB) by default",
    "rocksdb.config.setter": "not supported: kspark's RocksDB stores take no options setter",
    "buffered.records.per.partition": "micro_batch bounds a micro-batch with "
    "max.offsets.per.trigger; a real_time thread takes up to 2000 records a poll",
    "poll.ms": "not configurable: a real_time thread's poll waits at most 50 ms; micro_batch "
    "reads the ranges it planned",
    "retries": "use task.timeout.ms: how long kspark retries a failing Kafka call",
    "metric.reporters": _METRICS,
    "send.buffer.bytes": "use socket.send.buffer.bytes (librdkafka's name, every client)",
    "receive.buffer.bytes": "use socket.receive.buffer.bytes (librdkafka's name, every client)",
}

_NO_GROUP = ("kspark's consumers are assigned their partitions rather than joining a "
             "consumer group (the instance guard's one membership sets its own timeouts), so "
             "it has no effect; a stalled read fails after source.read.timeout.ms or "
             "task.timeout.ms")
CLIENT_KEYS: dict[str, str] = {
    "auto.offset.reset": "use auto.offset.reset (every source's reset policy; a source's "
    "offset_reset overrides it; global tables: global.consumer.auto.offset.reset)",
    "auto.commit.interval.ms": "kspark commits offsets itself, with the output they "
    "produced: use commit.interval.ms",
    "session.timeout.ms": _NO_GROUP, "heartbeat.interval.ms": _NO_GROUP,
    "max.poll.interval.ms": _NO_GROUP, "group.instance.id": _NO_GROUP,
    "partition.assignment.strategy": _NO_GROUP, "group.protocol": _NO_GROUP,
    "max.poll.records": "a Java consumer key (librdkafka has none): micro_batch bounds a "
    "micro-batch with max.offsets.per.trigger; a real_time thread takes up to 2000 records "
    "a poll",
    "fetch.max.wait.ms": "librdkafka's name is fetch.wait.max.ms",
}


def renamed(props: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` with each deprecated key read as today's, warning once per key; when both
    are given, today's wins (and the warning says the old one is ignored).

    >>> import warnings; warnings.simplefilter("ignore")
    >>> renamed({"cache.max.bytes.buffering": 0})
    {'statestore.cache.max.bytes': 0}
    """
    out = dict(props)
    for old, new in DEPRECATED_KEYS.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out:
            why = f"{new} is set too, so {old} is ignored"
        else:
            out[new], why = value, f"it is read as {new}"
        warnings.warn(f"config key {old!r} is deprecated (as in Kafka Streams): {why}; use "
                      f"{new}", DeprecationWarning, stacklevel=3)
        log.warning("config key %r is deprecated: %s; use %s", old, why, new)
    return out


def renamed_value(key: str, value: Any) -> Any:
    """Today's name of a deprecated ``value`` of ``key``, with a warning, as in Kafka Streams
    3.x+ (``processing.guarantee=exactly_once`` means ``exactly_once_v2``)."""
    today = DEPRECATED_VALUES.get(key, {}).get(value)
    if today is None:
        return value
    warnings.warn(f"{key}={value!r} is deprecated; it means {today!r}, use that name",
                  DeprecationWarning, stacklevel=5)
    return today


def unknown_key(name: str) -> str:
    """The error for a key kspark does not know: what to do instead where it is a Kafka
    Streams or consumer key, else where the keys are listed."""
    if name in JAVA_KEYS:
        return f"unknown config key {name!r} (a Kafka Streams key): {JAVA_KEYS[name]}"
    if name in CLIENT_KEYS:
        return f"unknown config key {name!r} (a consumer key): {CLIENT_KEYS[name]}"
    return f"unknown config key {name!r}; see docs/config.md for the keys kspark accepts"


def refused_client_key(name: str) -> str | None:
    """The error for a prefixed client key kspark does not honour (None: it does, or it is
    no client key). ``main.consumer.*`` and ``global.consumer.*`` are Java's prefixes."""
    for prefix, ours in _PREFIXES:
        if not name.startswith(prefix):
            continue
        bare, head = name[len(prefix):], f"config key {name!r} is not honoured: "
        if bare in CLIENT_KEYS:
            return head + CLIENT_KEYS[bare]
        return None if ours is None else head + _PREFIX_WHY[prefix] + f": write {ours}{bare}"
    return None


_PREFIXES = (("main.consumer.", "consumer."), ("global.consumer.", "restore.consumer."),
             ("consumer.", None), ("restore.consumer.", None))
_PREFIX_WHY = {"main.consumer.": "kspark's input consumers take the consumer.* keys",
               "global.consumer.": "kspark reads global tables with its restore consumers"}


_IDLE_REASONS = {
    "micro_batch": "a micro-batch reads every partition up to the end it planned and never "
    "holds records back for a later one",
    "real_time": "a stream thread waits only while an empty partition has data on the "
    "broker (0) or not at all (-1), and the TopologyTestDriver processes a piped record at once",
}


def task_idle_problem(value: int, mode: str) -> str | None:
    """What is wrong with ``max.task.idle.ms`` under ``mode`` (None: nothing): 0 (Kafka
    Streams' default) and -1 are honoured; waiting N ms for an idle partition is not.

    >>> task_idle_problem(0, "real_time") is None, task_idle_problem(-1, "micro_batch") is None
    (True, True)
    """
    if value in (0, -1):
        return None
    return (f"max.task.idle.ms={value} is not supported under execution.mode={mode}: "
            f"{_IDLE_REASONS[mode]}; use 0 (Kafka Streams' default: wait only for partitions "
            "with data on the broker) or -1 (never wait)")
