"""The conformance scenario language, and kspark's interpreter of it.

A scenario is a list of lines; ``Reference.java`` interprets the same lines with Java Kafka
Streams. Keys are strings, values longs; ``~`` stands for null.

    cache <bytes>                      statestore.cache.max.bytes
    op <var> <operation> <args...>     one DSL step, e.g. ``op g group_by_key s0``
    to <var> <topic>                   write a stream to an output topic
    input <topic> <key> <value> <ts>   pipe one record
    store <name> kv|window             dump a materialized store at the end
    handler continue|fail              processing.exception.handler (KIP-1033): Java's
                                       LogAndContinue/LogAndFailProcessingExceptionHandler
    dropped                            answer the tasks' dropped-records-total too
    changelog <store>                  answer the store's changelog records too, as bytes:
                                       ``changelog <store> <key hex> <value hex> <ts>``
    describe                           answer the topology's description first, one
                                       ``describe <line>`` per line of Java's text
    optimize                           topology.optimization=all
    explicit                           ensure.explicit.internal.resource.naming=true
    metrics INFO|DEBUG|TRACE [stores]  metrics.recording.level; answer the names, groups and
                                       tag keys of the task, node and topic metrics too (with
                                       ``stores``: the state-store and record-cache metrics too;
                                       kspark names some internal join stores otherwise)

The answer is one line per output record, ``record <topic> <key> <value> <ts>``, per topic
in read order, then ``row <store> <key> <value>`` per store entry, then (with a ``dropped``
line) ``dropped <n>``, then (with a ``metrics`` line) ``metric <group> <name> <tag keys>
<node> <topic>`` per metric, sorted; or ``error <message>``.

Example:
    >>> run(["op s0 stream in", "op s1 map_values s0 inc", "to s1 out", "input in a 1 5"])
    ['record out a 2 5']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kspark import (Joined, JoinWindows, Materialized, Serdes, SessionWindows, SlidingWindows,
                    StreamsBuilder, Suppressed, BufferConfig, TableJoined, TimeWindows)
from kspark.dsl import KTable
from kspark.errors import KSparkError
from kspark.testing import TopologyTestDriver
from tests.conformance import extras

__all__ = ["run", "build", "Built", "S", "L"]

S, L = Serdes.String(), Serdes.Long()

PREDICATES = {
    "even": lambda k, v: v is not None and v % 2 == 0,
    "big": lambda k, v: v is not None and v > 4,
    "ka": lambda k, v: k == "a",
}
MAPPERS = {
    "inc": lambda v: None if v is None else v + 1,
    "dbl": lambda v: None if v is None else v * 2,
    "nul": lambda v: None if v is None or v % 3 == 0 else v,
    "boom": lambda v: _boom(v),
}
JAVA_HANDLERS = {"continue": "org.apache.kafka.streams.errors."
                 "LogAndContinueProcessingExceptionHandler",
                 "fail": "org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler"}


def _boom(v: Any) -> Any:
    """Raises on a multiple of 5 (user code failing: the processing handler decides)."""
    if v is not None and v % 5 == 0:
        raise ArithmeticError(f"boom {v}")
    return v


def _key_of(name: str, k: Any, v: Any) -> Any:
    if name == "mod":
        return None if v is None else "abc"[v % 3]
    if name == "key":
        return k
    if name == "flip":
        return "a" if k is None else "b" if k == "a" else None if k == "b" else "a"
    raise ValueError(f"key mapper {name}")


def _plus(a: Any, b: Any) -> int:
    return (a or 0) + (b or 0)


def _joiner(left: Any, right: Any) -> int:
    return (-1 if left is None else left) * 100 + (-1 if right is None else right)


def _mat(t: list[str], i: int, p: str) -> Materialized:
    if len(t) <= i or t[i] == "-":
        return Materialized.with_(S, L)
    return Materialized.as_(p + t[i]).with_key_serde(S).with_value_serde(L)


def _op(b: StreamsBuilder, v: dict[str, Any], t: list[str], p: str = "") -> Any:
    """One ``op`` line's DSL step; topic and store names get the prefix ``p``."""
    x = v.get(t[3]) if len(t) > 3 else None
    kind = t[2]
    if kind == "stream":
        return b.stream(p + t[3], key_serde=S, value_serde=L)
    if kind == "table":
        return b.table(p + t[3], key_serde=S, value_serde=L, materialized=_mat(t, 4, p))
    if kind in ("filter", "filter_not", "tfilter", "tfilter_not"):
        method = getattr(x, kind.lstrip("t"))
        extra = {"materialized": _mat(t, 5, p)} if len(t) > 5 else {}
        return method(PREDICATES[t[4]], **extra)
    if kind in ("map_values", "tmap_values"):
        extra = {"materialized": _mat(t, 5, p)} if len(t) > 5 else {}
        return x.map_values(MAPPERS[t[4]], **extra)
    if kind == "select_key":
        return x.select_key(lambda k, w: _key_of(t[4], k, w))
    if kind == "flat_map_values":
        return x.flat_map_values(lambda w: [] if w is None else [w, w * 10])
    if kind == "merge":
        return x.merge(v[t[4]])
    if kind == "repartition":
        return x.repartition(key_serde=S, value_serde=L)
    if kind == "to_table":
        return x.to_table(_mat(t, 4, p))
    if kind == "group_by_key":
        return x.group_by_key(key_serde=S, value_serde=L)
    if kind == "group_by":
        return x.group_by(lambda k, w: _key_of(t[4], k, w), key_serde=S, value_serde=L)
    if kind == "time_windows":
        w = TimeWindows.of_size_and_grace(int(t[4]), int(t[6]))
        return x.windowed_by(w if t[5] == t[4] else w.advance_by(int(t[5])))
    if kind == "session_windows":
        return x.windowed_by(SessionWindows.of_inactivity_gap_and_grace(int(t[4]), int(t[5])))
    if kind == "sliding_windows":
        return x.windowed_by(SlidingWindows.of_time_difference_and_grace(int(t[4]), int(t[5])))
    if kind == "count":
        return x.count(_mat(t, 4, p))
    if kind == "reduce":
        if _is_grouped_table(x):
            return x.reduce(_plus, lambda a, c: a - (c or 0), _mat(t, 4, p))
        return x.reduce(_plus, _mat(t, 4, p))
    if kind == "aggregate":
        cogrouped = extras.aggregate(x, _mat(t, 4, p), _plus)
        if cogrouped is not None:
            return cogrouped
        add = lambda k, w, agg: _plus(agg, w)  # noqa: E731
        if _is_grouped_table(x):
            return x.aggregate(lambda: 0, add, lambda k, w, agg: agg - (w or 0), _mat(t, 4, p))
        if _is_session(x):
            return x.aggregate(lambda: 0, add, lambda k, a, c: _plus(a, c), _mat(t, 4, p))
        return x.aggregate(lambda: 0, add, _mat(t, 4, p))
    if kind == "suppress":
        return x.suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
    if kind == "suppress_limit":  # ms, then max records and max bytes ("-": no bound)
        c = BufferConfig.unbounded()
        c = c if t[5] == "-" else c.with_max_records(int(t[5]))
        c = c if t[6] == "-" else c.with_max_bytes(int(t[6]))
        return x.suppress(Suppressed.until_time_limit(int(t[4]), c))
    if kind in ("tjoin", "tleft_join", "touter_join"):
        extra = {"materialized": _mat(t, 5, p)} if len(t) > 5 else {}
        return getattr(x, kind[1:])(v[t[4]], _joiner, **extra)
    if kind in ("fk_join", "fk_left_join"):
        method = x.join if kind == "fk_join" else x.left_join
        named = {"table_joined": TableJoined.as_(p + t[6])} if len(t) > 6 else {}
        return method(v[t[4]], lambda w: _key_of(t[5], None, w), _joiner, **named)
    if kind == "tgroup_by":
        return x.group_by(lambda k, w: (_key_of(t[4], k, w), w), key_serde=S, value_serde=L)
    if kind == "to_stream":
        return x.to_stream()
    if kind == "unwindow":
        return x.map(lambda k, w: (f"{k.key}@{k.window.start}/{k.window.end}", w))
    if kind in ("join", "left_join", "outer_join"):
        other = v[t[4]]
        if isinstance(other, KTable):
            grace = Joined.with_(S, L, L).with_grace_period(int(t[5])) if len(t) > 5 else None
            return getattr(x, kind)(other, _joiner, joined=grace)
        g = int(t[6])
        w = (JoinWindows.of_time_difference_without_grace(int(t[5])) if g < 0
             else JoinWindows.of_time_difference_and_grace(int(t[5]), g))
        return getattr(x, kind)(other, _joiner, w)
    return extras.op(b, v, t, p, _key_of, _mat, _plus)


def _is_grouped_table(x: Any) -> bool:
    return type(x).__name__ == "KGroupedTable"


def _is_session(x: Any) -> bool:
    return "Session" in type(x).__name__


def _show(x: Any) -> str:
    return "~" if x is None else str(x)


def _arg(s: str, cast: Any = str) -> Any:
    return None if s == "~" else cast(s)


@dataclass
class Built:
    """A scenario's topology and what drives it: the builder holding its steps, the driver
    config, its ``input`` and ``store`` lines split into tokens, and its output topics."""

    builder: StreamsBuilder
    config: dict[str, Any]
    inputs: list[list[str]] = field(default_factory=list)
    outs: list[str] = field(default_factory=list)
    stores: list[list[str]] = field(default_factory=list)
    dropped: bool = False  # a ``dropped`` line: answer the dropped-records count too
    metrics: bool = False  # a ``metrics LEVEL`` line: answer the metrics' names too
    store_metrics: bool = False  # ``metrics LEVEL stores``: the stores' and caches' too
    describe: bool = False  # a ``describe`` line: answer the description first
    changelogs: list[str] = field(default_factory=list)  # stores whose changelog is answered


def build(lines: list[str], builder: StreamsBuilder | None = None, prefix: str = "") -> Built:
    """Add the scenario's steps to ``builder`` (a new one by default), with ``prefix`` before
    every topic and store name (several scenarios can then share one builder)."""
    b = builder if builder is not None else StreamsBuilder()
    built = Built(b, {"default.key.serde": "String", "default.value.serde": "Long"})
    v: dict[str, Any] = {}
    for line in lines:
        t = line.split(" ")
        if t[0] == "cache":
            built.config["statestore.cache.max.bytes"] = int(t[1])
        elif t[0] == "op":
            v[t[1]] = _op(b, v, t, prefix)
        elif t[0] == "to":
            v[t[1]].to(prefix + t[2], key_serde=S, value_serde=L)
            built.outs.append(prefix + t[2])
        elif t[0] == "input":
            built.inputs.append([t[0], prefix + t[1], *t[2:]])
        elif t[0] == "store":
            built.stores.append([t[0], prefix + t[1], *t[2:]])
        elif t[0] == "handler":
            built.config["processing.exception.handler"] = JAVA_HANDLERS[t[1]]
        elif t[0] == "dropped":
            built.dropped = True
        elif t[0] == "describe":
            built.describe = True
        elif t[0] == "changelog":
            built.changelogs.append(prefix + t[1])
        elif t[0] == "optimize":
            built.config["topology.optimization"] = "all"
        elif t[0] == "explicit":
            built.config["ensure.explicit.internal.resource.naming"] = True
        elif t[0] == "metrics":
            built.metrics = True
            built.store_metrics = t[2:] == ["stores"]
            built.config["metrics.recording.level"] = t[1]
    return built


TASK = "stream-task-metrics"


def _metric_names(metrics: Any, stores: bool = False) -> list[str]:
    """``metric <group> <name> <tag keys> <node> <topic>`` of each task, node and topic
    metric (``stores``: and state-store and record-cache metric), sorted (as
    ``Reference.java`` prints Java's)."""
    groups = (TASK, "stream-processor-node-metrics", "stream-topic-metrics") + (
        ("stream-state-metrics", "stream-record-cache-metrics") if stores else ())
    return sorted(f"metric {n.group} {n.name} {','.join(sorted(n.tags))} {_where(n.tags)} "
                  f"{n.tags.get('topic', '-')}" for n in metrics if n.group in groups)


def _where(tags: dict[str, str]) -> str:
    """A metric's node, store or cache (``Reference.java`` prints the same)."""
    store = [v for k, v in tags.items() if k.endswith("-state-id")]
    return store[0] if store else tags.get("processor-node-id", tags.get("record-cache-id", "-"))


def normal_metrics(answer: list[str]) -> list[str]:
    """An answer's metric lines with each node's number and each internal topic's name left
    out: kspark and Java number some nodes of a topology differently (docs/conformance.md),
    and the metrics are compared by name, group, tag keys and kind of node."""
    import re

    out = []
    for line in answer:
        if line.startswith("metric "):
            *head, node, topic = line.split(" ")
            node = re.sub(r"-\d{10}(?=$|-store$|-STATE-STORE)", "", node)
            # Java names a cogroup's repartition nodes after its store, kspark as any other
            node = re.sub(r"^.*-repartition-(source|sink)$",
                          lambda m: f"KSTREAM-{m.group(1).upper()}", node)
            internal = topic.startswith(("ref-", "topology-test-driver-"))
            topic = "(internal)" if internal else topic
            line = " ".join([*head, node, topic])
        out.append(line)
    return out


def _changelog_lines(d: Any, stores: list[str]) -> list[str]:
    """Each store's changelog records as ``Reference.java`` prints Java's."""
    from kspark import Serdes

    raw, out = Serdes.ByteArray(), []
    for store in stores:
        topic = d.create_output_topic(f"topology-test-driver-{store}-changelog", raw, raw)
        for r in topic.read_records_to_list():
            value = "~" if r.value is None else r.value.hex()
            ts = "null" if r.timestamp is None else r.timestamp  # as Java prints it
            out.append(f"changelog {store} {r.key.hex()} {value} {ts}")
    return out


def described(topology: Any) -> list[str]:
    """The lines of ``str(topology.describe())``, as Java's ``split("\\n")`` gives them (no
    trailing empty ones)."""
    lines = str(topology.describe()).split("\n")
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run(lines: list[str]) -> list[str]:
    """Build and drive the scenario on kspark's TopologyTestDriver; the answer's lines."""
    try:
        built = build(lines)
        topology = built.builder.build(built.config)
        answer = [f"describe {line}" for line in described(topology)] if built.describe else []
        with TopologyTestDriver(topology, built.config) as d:
            topics = {}
            for t in built.inputs:
                if t[1] not in topics:
                    topics[t[1]] = d.create_input_topic(t[1], S, L)
                topics[t[1]].pipe_input(_arg(t[2]), _arg(t[3], int), int(t[4]))
            for o in built.outs:
                for r in d.create_output_topic(o, S, L).read_records_to_list():
                    answer.append(f"record {o} {_show(r.key)} {_show(r.value)} {r.timestamp}")
            for _, name, kind in built.stores:
                if kind == "kv":
                    for kv in d.get_key_value_store(name).all():
                        answer.append(f"row {name} {kv.key} {_show(kv.value)}")
                else:
                    for kv in d.get_window_store(name).all():
                        answer.append(f"row {name} {kv.key.key}@{kv.key.window.start} "
                                      f"{_show(kv.value)}")
            answer += _changelog_lines(d, built.changelogs)
            metrics = d.metrics()
            if built.dropped:  # the driver's one task counts them (dropped-records-total)
                answer.append(f"dropped {metrics.total('dropped-records-total', TASK)}")
            if built.metrics:
                answer += _metric_names(metrics, built.store_metrics)
        return answer
    except (KSparkError, ValueError, TypeError) as e:  # Java answers these with an error too
        return [f"error {type(e).__name__}: {e}"]
