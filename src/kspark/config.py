"""StreamsConfig: every config key declared once, with type, default, validator and doc.

Keys follow Kafka Streams' names. Spark settings ride alongside under ``spark.*``. Kafka
client settings common to every client (``security.protocol``, ``sasl.*``, ``ssl.*``,
``socket.*``, ``client.dns.lookup``, ``client.id`` as a prefix) sit at top level, and
``consumer.*``, ``producer.*``, ``admin.*`` and ``restore.consumer.*`` override them per kind
of client (see kspark._kafka.settings); ``client.tag.*`` are client tags (``racks.py``); keys
kspark's guarantees rely on are refused. A value ``${env:NAME}`` is read from an environment
variable and ``${file:PATH}`` (or ``${file:PATH:KEY}``, a key of a properties file) from a
file, so secrets need not be written in the config. An unknown key or a bad value is
rejected when the config is built; a Kafka Streams key kspark does not take (or a client key
it does not honour) is refused saying what to use instead, and Java's deprecated names are
read as today's (kspark._config_java).

Every key declares the execution modes it applies to (``ConfigKey.modes``): a key for the
other mode alone (``num.stream.threads`` with ``micro_batch``) is refused, never ignored.
Defaults code needs: :func:`declared_default`, :func:`checkpoint_location` and others.

Example:
    >>> from kspark import StreamsConfig
    >>> c = StreamsConfig({"application.id": "app", "bootstrap.servers": "localhost:9092"})
    >>> c["commit.interval.ms"]
    1000
    >>> StreamsConfig({"application.id": "app", "bootstrap.servers": "x", "no.such.key": 1})
    Traceback (most recent call last):
    ...
    kspark.errors.ConfigError: unknown config key 'no.such.key'; see docs/config.md for the keys kspark accepts
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kspark._config_java import (DEPRECATED_VALUES, refused_client_key, renamed, renamed_value,
                                 task_idle_problem, unknown_key)
from kspark._config_defaults import KEYS, non_negative, one_of, positive
from kspark._config_text import parse_properties, resolve_reference
from kspark._engine.handler_config import handler_config
from kspark._engine.offset_reset import reset_policy_problem
from kspark._kafka.settings import check_owned, is_common_key, redacted
from kspark.errors import ConfigError
from kspark.serde import Serde, Serdes
from kspark.serde._registry_keys import registry_config
from kspark._config_ops import client_tag_problem, operations_config, standby_config

__all__ = ["StreamsConfig", "ConfigKey", "CONFIG_KEYS", "MICRO_BATCH", "REAL_TIME", "MODES", "BOTH",
           "declared_default", "checkpoint_location", "commit_interval_ms", "parse_properties"]

GUARANTEE = "processing.guarantee"
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
# execution.mode's values; a ConfigKey's ``modes`` names those it applies to
MICRO_BATCH = "micro_batch"
REAL_TIME = "real_time"
MODES = (MICRO_BATCH, REAL_TIME)
BOTH = MODES
PASS_THROUGH_PREFIXES = ("spark.", "consumer.", "producer.", "admin.", "restore.consumer.",
                         "topic.", "client.tag.")


@dataclass(frozen=True)
class ConfigKey:
    """One declared key: its type, default, validator, documentation and the execution modes
    it applies to (``modes``: a deliberate choice per key, ``BOTH`` or one mode; a key given
    under a mode not among them is refused; None = not classified yet, which
    tests/unit/test_config_modes.py fails on)."""

    name: str
    type: type | tuple[type, ...]
    default: Any
    doc: str
    validator: Callable[[Any], str | None] | None = None
    required: bool = False
    convert: Callable[[Any], Any] | None = None  # e.g. a deprecated alias to today's name
    modes: tuple[str, ...] | None = None


def _lower(name: str) -> ConfigKey:
    """A key declared in ``_config_defaults`` (code below this module reads its default)."""
    return ConfigKey(*KEYS[name], modes=BOTH)


def _user() -> str:
    """The current user's name (for the per-user default state.dir)."""
    try:
        import pwd
        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid()) if hasattr(os, "getuid") else "user"


def _app_id(v: Any) -> str | None:
    ok = re.fullmatch(r"[A-Za-z0-9._-]+", v) is not None
    return None if ok else "may only contain letters, digits, '.', '_' and '-'"


def _serde(v: Any) -> str | None:
    if v is None or isinstance(v, Serde):
        return None
    try:
        Serdes.by_name(v)
    except ConfigError as e:
        return str(e)
    return None


_KEYS = [
    ConfigKey("application.id", str, None, "Identifies the application: prefixes its state "
              "directory, Spark checkpoint and Kafka client ids.", _app_id, required=True,
              modes=BOTH),
    ConfigKey("bootstrap.servers", str, None, "Kafka brokers to connect to, host:port[,host:port].",
              lambda v: None if v.strip() else "must not be empty", required=True, modes=BOTH),
    ConfigKey("state.dir", str, os.path.join(tempfile.gettempdir(), f"kspark-{_user()}"),
              "Directory for task state and the Spark checkpoint (under "
              "<state.dir>/<application.id>); default <tmp>/kspark-<user>, created 0700. A "
              "directory owned by another user is refused.", modes=BOTH),
    ConfigKey("commit.interval.ms", int, 1000, "How often progress is committed. real_time "
              "mode, when not set: Kafka Streams' defaults (30000 under at_least_once, 100 "
              "under exactly_once_v2); micro_batch mode: each micro-batch is one commit, so "
              "this is also the trigger interval (1000 when not set).", non_negative, modes=BOTH),
    ConfigKey("processing.guarantee", str, AT_LEAST_ONCE, "at_least_once, or exactly_once_v2 "
              "(KIP-129: each task's output, changelog records, progress and input offsets "
              "commit in one Kafka transaction per micro-batch; 'exactly_once' and "
              "'exactly_once_beta' are deprecated aliases).",
              one_of(AT_LEAST_ONCE, EXACTLY_ONCE_V2, *DEPRECATED_VALUES[GUARANTEE]),
              convert=lambda v: renamed_value(GUARANTEE, v), modes=BOTH),
    ConfigKey("default.key.serde", object, None, "Serde for keys where none is given: a Serde or "
              "a built-in name such as 'String'.", _serde, modes=BOTH),
    ConfigKey("default.value.serde", object, None, "Serde for values where none is given.", _serde,
              modes=BOTH),
    ConfigKey("default.timestamp.extractor", object, None, "A TimestampExtractor (instance or "
              "class) for sources without their own; default FailOnInvalidTimestamp.",
              lambda v: None if callable(v) or hasattr(v, "extract") else
              "must be a TimestampExtractor or a function (record, partition_time) -> int",
              modes=BOTH),
    ConfigKey("errors.dead.letter.queue.topic.name", str, None, "If set, the built-in "
              "exception handlers also write the input record of each error (deserialization, "
              "processing, production), unchanged, to this topic, with Kafka Streams' "
              "__streams.errors.* headers (KIP-1034). The topic must exist at start.",
              lambda v: None if v.strip() else "must not be empty (leave the key out to "
              "turn dead-lettering off)", modes=BOTH),
    _lower("statestore.cache.max.bytes"),
    ConfigKey("replication.factor", int, -1, "Replication factor of the internal topics kspark "
              "creates (changelogs, the progress, metadata and instance topics); -1 takes the "
              "brokers' default.replication.factor, as Kafka Streams does.",
              lambda v: None if v == -1 or v > 0 else "must be -1 or > 0", modes=BOTH),
    _lower("request.timeout.ms"),
    _lower("task.timeout.ms"),
    _lower("retry.backoff.ms"),
    ConfigKey("max.offsets.per.trigger", int, 200_000, "kspark: upper bound on the records one "
              "micro-batch reads, over all partitions of one source (each sub-topology that "
              "reads Kafka is one; bounds memory).", positive, modes=(MICRO_BATCH,)),
    ConfigKey("sink.trigger.interval.ms", int, 1000, "kspark: how often each Spark sink "
              "(KStream.to_spark, foreach_batch) starts a micro-batch writing what its topic "
              "holds (one Delta commit or set of files per micro-batch at most).", positive,
              modes=BOTH),
    _lower("async.max.in.flight"),
    ConfigKey("delayed.records.check.interval.ms", int, 1000, "KIP-311: on Spark, how often a "
              "topology with delayed records (KStream.delay, context.schedule_record) runs a "
              "micro-batch to fire those that are due, also when no input arrives.", positive,
              modes=(MICRO_BATCH,)),
    ConfigKey("auto.offset.reset", str, "earliest", "Where a source partition without a "
              "(valid) committed offset starts: earliest, latest, none (the start fails, naming "
              "those partitions) or by_duration:<ISO-8601 duration> (the first record at or "
              "after now - duration); a source's offset_reset overrides it; internal topics "
              "start at earliest.", reset_policy_problem, modes=BOTH),
    ConfigKey("max.task.idle.ms", int, 0, "How long a task waits for an empty input partition "
              "before processing its others: 0 (Kafka Streams' default) only while the "
              "partition has data on the broker; -1 never; more is refused.",
              lambda v: None if v >= -1 else "must be >= -1", modes=BOTH),
    _lower("global.consumer.auto.offset.reset"),
    ConfigKey("autostop.at", str, "none", "KIP-95: 'eol' is an incremental batch run: it processes "
              "the input up to its stop offsets (the ends at the run's first start, kept in the "
              "metadata topic across restarts) and stops; 'none' runs until closed (and deletes "
              "the stop offsets). See docs/incremental-batch.md.",
              one_of("none", "eol"), modes=BOTH),
    ConfigKey("checkpoint.location", str, None, "kspark: where the Spark checkpoint lives: "
              "a local path or any Hadoop-compatible URI (hdfs://, s3a://, ...); default "
              "<state.dir>/<application.id>/checkpoint. Without one, the query resumes from the "
              "offsets the application's consumer group committed.",
              lambda v: None if v.strip() else "must not be empty (leave the key out for "
              "the default)", modes=(MICRO_BATCH,)),
    ConfigKey("execution.mode", str, REAL_TIME, "How the Spark host runs the topology: "
              "'real_time' (the default: long-running Spark tasks, one per stream thread, "
              "each running Kafka Streams' poll-process-commit loop; see docs/real-time.md) "
              "or 'micro_batch' (a Spark micro-batch per commit.interval.ms: for "
              "throughput-bound batch runs and clusters with fewer free task slots than "
              "stream threads).",
              one_of(*MODES), modes=BOTH),
    ConfigKey("placement.replacement.wait.ms", int, 15_000, "kspark, micro_batch mode: after "
              "executors are lost, how long the next micro-batch waits for the cluster manager "
              "to start as many again before their tasks move to the executors left (so they "
              "move once, to the replacement).", non_negative, modes=(MICRO_BATCH,)),
    ConfigKey("real_time.epoch.ms", int, 0, "kspark, real_time mode: how long a thread's "
              "Spark job (epoch) lasts before the next starts; 0: no scheduled end.",
              non_negative, modes=(REAL_TIME,)),
    ConfigKey("num.stream.threads", int, None, "real_time mode: how many stream threads (one "
              "long-running Spark task each) share the application's tasks; default the "
              "smaller of the task count and the task slots Spark offers. More threads than "
              "free task slots is refused at start.", positive, modes=(REAL_TIME,)),
    ConfigKey("repartition.purge.interval.ms", int, 30000, "real_time mode: how often a "
              "stream thread deletes the records of repartition topics that its tasks have "
              "committed (Kafka Streams' purge, after a commit).", positive, modes=(REAL_TIME,)),
    ConfigKey("source.read.timeout.ms", int, 60000, "kspark: a task that cannot read up to its "
              "planned offset within this time fails, naming topic and partition.", positive,
              modes=BOTH),
] + [ConfigKey(*k, modes=BOTH) for k in (*standby_config(), *registry_config(),
                                          *operations_config(), *handler_config())]
CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}
MODE = "execution.mode"
# real_time's commit.interval.ms if not set: Kafka Streams' (micro_batch: the declared one)
REAL_TIME_COMMIT_INTERVAL_MS = {AT_LEAST_ONCE: 30_000, EXACTLY_ONCE_V2: 100}


def declared_default(name: str) -> Any:
    """The default ``name`` is declared with (code that reads a key from a plain mapping, or
    takes a default argument, reads it here rather than writing the value again).

    >>> declared_default("request.timeout.ms")
    30000
    """
    return CONFIG_KEYS[name].default


def _check_modes(given: Mapping[str, Any], mode: str) -> None:
    """Refuse a key the user gave that applies to another execution mode only (it would be
    ignored): a ConfigError naming the key, the mode it belongs to and ``mode``."""
    for name in given:
        key = CONFIG_KEYS.get(name)
        if key is None or key.modes is None or mode in key.modes:
            continue
        theirs = " or ".join(key.modes)
        raise ConfigError(f"{name} applies to {MODE}={theirs} only; this application runs "
                          f"{mode}: remove it or set {MODE}={theirs}")


def checkpoint_location(config: Mapping[str, Any]) -> str:
    """``checkpoint.location``, or by default ``<state.dir>/<application.id>/checkpoint``.

    >>> checkpoint_location({"checkpoint.location": None, "state.dir": "/s",
    ...                      "application.id": "app"})
    '/s/app/checkpoint'
    """
    return config.get("checkpoint.location") or os.path.join(
        config["state.dir"], config["application.id"], "checkpoint")


def commit_interval_ms(config: StreamsConfig) -> int:
    """How often the application commits: ``commit.interval.ms`` if set; else in real_time
    mode Kafka Streams' defaults (30000 under at_least_once, 100 under exactly_once_v2), in
    micro_batch mode the declared default.

    >>> c = StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1",
    ...                    "execution.mode": "real_time",
    ...                    "processing.guarantee": "exactly_once_v2"})
    >>> commit_interval_ms(c), commit_interval_ms(c.with_values({"commit.interval.ms": 50}))
    (100, 50)
    """
    if config.is_set("commit.interval.ms") or config[MODE] != REAL_TIME:
        return int(config["commit.interval.ms"])
    return REAL_TIME_COMMIT_INTERVAL_MS[config["processing.guarantee"]]


class StreamsConfig(Mapping[str, Any]):
    """Validated, read-only application config.

    Unknown keys, wrong types and invalid values raise :class:`~kspark.errors.ConfigError`
    naming the key. Secrets (passwords, keys, tokens, JAAS configs) are masked in ``repr``.
    """

    def __init__(self, props: Mapping[str, Any] | None = None):
        props = renamed(props or {})  # Kafka Streams' deprecated names (_config_java.py)
        values: dict[str, Any] = {}
        for name, value in props.items():
            if not isinstance(name, str):
                raise ConfigError(f"config keys must be strings, got {name!r}")
            value, key = resolve_reference(name, value), CONFIG_KEYS.get(name)
            if key is not None:
                values[name] = _check(key, value)
            elif refused_client_key(name):
                raise ConfigError(refused_client_key(name))
            elif name.startswith(PASS_THROUGH_PREFIXES) or is_common_key(name):
                values[name] = value
            else:
                raise ConfigError(unknown_key(name))
        for key in _KEYS:
            if key.name not in values:
                if key.required:
                    raise ConfigError(f"missing required config key {key.name!r}: {key.doc}")
                values[key.name] = key.default
        check_owned(values)
        _check_modes(props, values[MODE])
        problem = task_idle_problem(values["max.task.idle.ms"], values[MODE])
        if problem or client_tag_problem(values):
            raise ConfigError(problem or client_tag_problem(values))
        self._values = values
        self._given = frozenset(props)

    def with_values(self, changes: Mapping[str, Any]) -> StreamsConfig:
        """A copy with ``changes`` given as well (what the user gave stays given, defaults
        stay defaults: see :meth:`is_set`).

        >>> c = StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1"})
        >>> c2 = c.with_values({"commit.interval.ms": 50})
        >>> c2["commit.interval.ms"], c2.is_set("commit.interval.ms"), c2.is_set("state.dir")
        (50, True, False)
        """
        return StreamsConfig({**{k: self._values[k] for k in self._given}, **changes})

    def is_set(self, name: str) -> bool:
        """Whether the user gave ``name`` (rather than its default).

        >>> StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1"}).is_set("state.dir")
        False
        """
        return name in self._given

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """The pass-through keys under ``prefix`` (e.g. ``"producer."``), prefix removed."""
        return {k[len(prefix):]: v for k, v in self._values.items() if k.startswith(prefix)}

    def topic_overrides(self) -> dict[str, str]:
        """The ``topic.*`` keys, prefix removed: topic configs of every internal topic kspark
        creates (changelogs and repartition topics), over its defaults, as Kafka Streams'
        ``topic.`` prefix; librdkafka's ``topic.metadata.*`` client keys are not among them.

        >>> StreamsConfig({"application.id": "a", "bootstrap.servers": "k:9092",
        ...                "topic.segment.bytes": 1048576,
        ...                "topic.metadata.refresh.interval.ms": 1000}).topic_overrides()
        {'segment.bytes': '1048576'}
        """
        return {k[len("topic."):]: str(v) for k, v in self._values.items()
                if k.startswith("topic.") and not is_common_key(k)}

    def as_dict(self) -> dict[str, Any]:
        """A plain copy of every key and value (defaults included)."""
        return dict(self._values)

    def __repr__(self) -> str:
        shown = redacted(self._values)
        return "StreamsConfig(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def _check(key: ConfigKey, value: Any) -> Any:
    if key.type is int and isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        value = int(value)
    if key.type is bool and str(value).strip().lower() in ("true", "false"):  # properties text
        value = str(value).strip().lower() == "true"
    if key.type is not object and (not isinstance(value, key.type) or isinstance(value, bool)
                                   is not (key.type is bool)):
        raise ConfigError(
            f"config key {key.name!r} expects {getattr(key.type, '__name__', key.type)}, "
            f"got {value!r}"
        )
    problem = key.validator(value) if key.validator and value is not None else None
    if problem:
        raise ConfigError(f"invalid value {value!r} for config key {key.name!r}: {problem}")
    return key.convert(value) if key.convert and value is not None else value
