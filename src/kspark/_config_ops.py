"""The config keys of running an application in production: metrics and the metrics
endpoint (``docs/operations.md``), and the interactive-query endpoints of the workers
(``docs/interactive-queries.md``), declared with the others in ``config.py``.

Example:
    >>> [k[0] for k in operations_config()][:3]
    ['metrics.recording.level', 'metrics.http.port', 'metrics.http.host']
    >>> [k[0] for k in operations_config()][3:6]
    ['query.endpoint.enabled', 'query.endpoint.host', 'query.timeout.ms']
    >>> [k[0] for k in operations_config()][6:8]
    ['query.endpoint.ssl.certfile', 'query.endpoint.ssl.keyfile']
    >>> [k[0] for k in operations_config()][8:10]
    ['query.endpoint.ssl.keyfile.password', 'query.endpoint.ssl.cafile']
    >>> [k[0] for k in operations_config()][10:12]
    ['ensure.explicit.internal.resource.naming', 'topology.optimization']
    >>> [k[0] for k in operations_config()][12:]
    ['batch.aggregation.enabled']

and those of standby replicas and warm-up (KIP-441: Kafka Streams' names, defaults and
meanings; both modes):

    >>> [(k[0], k[2]) for k in standby_config()][:2]
    [('num.standby.replicas', 0), ('acceptable.recovery.lag', 10000)]
    >>> [(k[0], k[2]) for k in standby_config()][2:4]
    [('max.warmup.replicas', 2), ('probing.rebalance.interval.ms', 600000)]
    >>> [(k[0], k[2]) for k in standby_config()][4:]
    [('rack.aware.assignment.tags', ())]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from kspark._config_defaults import KEYS
from kspark._graph.optimize import optimization_problem

__all__ = ["operations_config", "standby_config", "client_tag_problem"]

# Kafka Streams' limits on client tags (StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_*)
_MAX_TAGS, _MAX_KEY, _MAX_VALUE = 5, 20, 30


def _optimization(v: Any) -> str | None:
    return optimization_problem(v)


def _port(v: Any) -> str | None:
    return None if 0 <= v <= 65535 else "must be a port number (0 picks a free port)"


def _host(v: Any) -> str | None:
    return None if v.strip() else "must not be empty (leave it out for 127.0.0.1)"


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be positive"


def _path(v: Any) -> str | None:
    return None if v.strip() else "must be a file's path (leave the key out for none)"


def operations_config() -> list[tuple[str, type, Any, str, Any]]:
    """(name, type, default, doc, validator) of each key."""
    return [
        KEYS["metrics.recording.level"],
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
        ("query.endpoint.ssl.certfile", str, None, "kspark: a PEM file with the certificate "
         "chain the workers' interactive-query endpoints serve HTTPS with (and its key, unless "
         "query.endpoint.ssl.keyfile is set); it must name the host each endpoint announces "
         "(query.endpoint.host, or the worker's fully qualified host name for 0.0.0.0) and be "
         "readable on every executor. The querying side then speaks TLS too. Unset: plain "
         "HTTP.", _path),
        ("query.endpoint.ssl.keyfile", str, None, "kspark: a PEM file with the private key of "
         "query.endpoint.ssl.certfile, if that file does not hold it.", _path),
        ("query.endpoint.ssl.keyfile.password", str, None, "kspark: the password of an "
         "encrypted query.endpoint.ssl.keyfile (a secret: never shown).", None),
        ("query.endpoint.ssl.cafile", str, None, "kspark: a PEM file with the CA certificates "
         "the querying side (KafkaStreams.store and query) verifies the endpoints' "
         "certificates against, host names checked; unset: the system's CAs. Setting it alone "
         "(a client that does not serve, say) also makes queries speak TLS.", _path),
        ("ensure.explicit.internal.resource.naming", bool, False, "Refuse a topology whose "
         "changelog topics, stores or repartition topics have generated names (KIP-1111, as "
         "Kafka Streams 4.1): their names then change with the topology, and so does where "
         "its state is. The error lists them; name them with Materialized.as_, Grouped.as_, "
         "Repartitioned.as_, Joined.as_, StreamJoined.as_ or Suppressed.with_name.", None),
        ("topology.optimization", str, "none", "Kafka Streams' graph rewrites, applied by "
         "StreamsBuilder.build(props) (as Java's build(props)): 'all', 'none', or a comma "
         "list of reuse.ktable.source.topics (a source KTable's topic is its store's "
         "changelog), merge.repartition.topics (the repartitions after one key change "
         "become one) and single.store.self.join (a stream joined with itself keeps one "
         "store).",
         _optimization),
        ("batch.aggregation.enabled", bool, True, "kspark: a task whose sources feed only a "
         "group_by_key().count() with a caching store counts each batch of records per key "
         "at once (the same store, changelog and output as record by record; see "
         "docs/performance.md); false: record by record.", None),
    ]


def _at_least(n: int) -> Any:
    def check(v: Any) -> str | None:
        return None if v >= n else f"must be at least {n}"
    return check


def standby_config() -> list[tuple[Any, ...]]:
    """(name, type, default, doc, validator[, required, convert]) of each key."""
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
        ("rack.aware.assignment.tags", (list, tuple, str), (), "Client tag keys (a list, "
         "or comma-separated) over which standby copies are spread, best effort: each copy "
         "on an executor whose values of these tags differ from the active's and the other "
         "copies' (Kafka Streams' client-tag-aware standby assignment). An executor's value "
         "of tag 'zone' is its environment variable KSPARK_CLIENT_TAG_ZONE, else "
         "client.tag.zone. At most 5 keys of at most 20 characters.", _tag_keys_problem,
         False, _tag_keys),
    ]


def _tag_keys(v: Any) -> tuple[str, ...]:
    """``rack.aware.assignment.tags`` as a tuple of keys.

    >>> _tag_keys("zone, rack"), _tag_keys(["zone"])
    (('zone', 'rack'), ('zone',))
    """
    items = v.split(",") if isinstance(v, str) else v
    return tuple(str(k).strip() for k in items if str(k).strip())


def _tag_keys_problem(v: Any) -> str | None:
    keys = _tag_keys(v)
    if len(keys) > _MAX_TAGS:
        return f"at most {_MAX_TAGS} tag keys"
    long = [k for k in keys if len(k) > _MAX_KEY]
    return f"tag keys are at most {_MAX_KEY} characters: {long}" if long else None


def client_tag_problem(values: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``client.tag.*`` keys of ``values`` (None: nothing), as Kafka
    Streams checks them.

    >>> client_tag_problem({"client.tag.zone": "eu-1a"}) is None
    True
    >>> client_tag_problem({"client.tag.zone": "x" * 31})[:46]
    "invalid value for config key 'client.tag.zone'"
    """
    tags = {k: v for k, v in values.items() if k.startswith("client.tag.")}
    for name, value in tags.items():
        if not 0 < len(name) - len("client.tag.") <= _MAX_KEY:
            return f"invalid config key {name!r}: a client tag key has 1 to {_MAX_KEY} characters"
        if not isinstance(value, str) or not 0 < len(value) <= _MAX_VALUE:
            return (f"invalid value for config key {name!r}: a client tag value is a string "
                    f"of 1 to {_MAX_VALUE} characters, got {value!r}")
    return None
