"""Plan a topology as one streaming query: fused stages of sub-topologies, shuffles between.

A sub-topology that reads only Kafka is a stage of its own. Sub-topologies fed by others
are grouped so that the readers of one stage's output share a stage: its input is one
Spark exchange in which each member's tasks own a range of partitions. Every stage's
output is then consumed exactly once, so its tasks (their stores and writes) run once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from pyspark import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kspark._engine.async_.metrics import merge_metrics

from kspark._graph.graph import TopologyGraph, topic_name
from kspark._graph.subtopology import SubTopology, sub_topologies
from kspark._spark.globals import local_checkpoint
from kspark._kafka.settings import as_settings
from kspark._spark.source import source_for
from kspark._spark.wire import FED_SCHEMA, MARKER_TOPIC
from kspark._spark.stage import StagePlan, make_stage
from kspark.config import StreamsConfig
from kspark.errors import TopologyError

Offsets = dict[str, dict[str, int]]  # {topic: {partition: offset}}

__all__ = ["plan_query", "QueryPlan", "kafka_sources"]


def _shuffle_keys(spark: SparkSession, n: int) -> list[int]:
    """For each partition p < n, an int whose Spark hash partitioning sends it to p."""
    rows = (spark.range(0, 64 * n).selectExpr("cast(id as int) as k", f"pmod(hash(cast(id as int)), {n}) as p")
            .groupBy("p").agg(F.min("k").alias("k")).collect())
    keys = {r["p"]: r["k"] for r in rows}
    if len(keys) != n:
        raise TopologyError(f"could not find shuffle keys for {n} partitions")
    return [keys[p] for p in range(n)]


def _kafka_df(spark: SparkSession, c: StreamsConfig, topics: list[str],
              resets: dict[str, str], start: Offsets, stop: Offsets | None,
              pin_globals: list[list[str]], delays: bool) -> DataFrame:
    # the first source created pins the global topics' offsets (see _spark/globals.py)
    global_topics = pin_globals.pop() if pin_globals else []
    # the client settings ride in a per-query source class, never in options (see source_for)
    return (spark.readStream.format(source_for(spark, as_settings(c)))
            .option("globals", json.dumps(global_topics))
            .option("stop", "" if stop is None else json.dumps({t: stop[t] for t in topics}))
            .option("resets", json.dumps({t: resets[t] for t in topics if t in resets}))
            .option("start", json.dumps({t: start[t] for t in topics if t in start}))
            .option("bootstrap", c["bootstrap.servers"])
            .option("topics", json.dumps(topics))
            .option("clock_ms", str(c["delayed.records.check.interval.ms"] if delays else 0))
            .option("emit", "ranges")  # the stage reads its records (see source.MARKER_TOPIC)
            .option("max_offsets", str(c["max.offsets.per.trigger"]))
            .option("timeout_ms", str(c["request.timeout.ms"]))
            .option("read_timeout_ms", str(c["source.read.timeout.ms"]))
            .load())


class MetricsParam(AccumulatorParam):
    """A Spark accumulator of async processors' metrics (see async_ops.merge_metrics)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - Spark's name
        return merge_metrics(a, b)


@dataclass
class _Group:
    """Sub-topologies run by one stage. A fed group reads one exchange of ``size``
    partitions in which each member's tasks have a range starting at ``first[member]``;
    a group without ``fed`` is one sub-topology reading Kafka only (no exchange)."""

    members: list[SubTopology]
    fed: bool
    first: dict[int, int] = field(default_factory=dict)
    size: int = 0


def _groups(subs: list[SubTopology], tasks: dict[int, int]) -> list[_Group]:
    """Stages, upstream first. The sub-topologies that read what one stage writes share a
    stage (and its exchange), so that every stage's output is consumed exactly once."""
    readers = {t: st for st in subs for t in st.fed_topics}
    root = {st.id: st.id for st in subs}

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    changed = True
    while changed:  # merge the readers of each group's output, until nothing changes
        changed = False
        outputs: dict[int, set[int]] = {}
        for st in subs:
            outputs.setdefault(find(st.id), set()).update(find(readers[t].id) for t in st.feeds)
        for consumers in outputs.values():
            first, *rest = sorted(consumers) or [None]
            for other in rest:
                if find(other) != find(first):
                    root[find(other)] = find(first)
                    changed = True
    by_root: dict[int, list[SubTopology]] = {}
    for st in subs:
        by_root.setdefault(find(st.id), []).append(st)
    groups = {r: _Group(members, fed=bool(members[0].fed_topics)) for r, members in by_root.items()}
    for g in groups.values():
        pos = 0
        for m in g.members:
            g.first[m.id] = pos
            pos += tasks[m.id]
        g.size = pos
    order: list[_Group] = []
    seen: set[int] = set()

    def visit(r: int) -> None:  # upstream groups first
        if r in seen:
            return
        seen.add(r)
        for m in by_root[r]:
            for up in subs:
                if set(up.feeds) & set(m.fed_topics):
                    visit(find(up.id))
        order.append(groups[r])

    for r in by_root:
        visit(r)
    return order


@dataclass
class QueryPlan:
    """The DataFrame whose execution runs the whole topology for one micro-batch; the number
    of tasks of each state store (its changelog's partition count); and the number of tasks
    in all (the progress topic's partition count: one marker partition per task); the
    accumulators of records read and records written by committed task batches."""

    df: DataFrame
    store_tasks: dict[str, int]
    tasks: int
    counters: tuple[Any, ...]


def kafka_sources(graph: TopologyGraph) -> tuple[list[str], dict[str, str]]:
    """The topics the query reads from Kafka, and the offset reset policy of those that have one."""
    topics = sorted({t for st in sub_topologies(graph) for t in st.user_topics})
    resets = {t: s.offset_reset for s in graph.sources() if s.offset_reset for t in s.topics}
    return topics, resets


def plan_query(spark: SparkSession, graph: TopologyGraph, c: StreamsConfig,
               partition_counts: dict[str, int], start: dict[str, dict[str, int]] | None = None,
               stop: dict[str, dict[str, int]] | None = None) -> QueryPlan:
    """Plan the topology as one streaming query (see :class:`QueryPlan`).

    ``partition_counts`` holds every user topic the topology reads or writes by name;
    ``start``: where the query's first batch starts, per topic and partition (see
    ``_spark/resume.py``); ``stop``: an incremental batch run's stop offsets (see
    ``_kafka/stopoffsets.py``), None to stop at the ends found at start (AvailableNow) or
    never (streaming).
    """
    app_id = c["application.id"]
    checkpoint = c["checkpoint.location"] or os.path.join(c["state.dir"], app_id, "checkpoint")
    internal = set(graph.internal_topics())
    _, resets = kafka_sources(graph)
    subs = sub_topologies(graph)
    tasks, fed_count = _task_counts(graph, subs, partition_counts, internal)
    groups = _groups(subs, tasks)
    global_topics = graph.global_topics()
    begin = (resets, start or {}, stop, [global_topics] if global_topics else [],
             bool(graph.delayed_stores()))
    kafka_stages = sum(1 for g in groups for st in g.members if st.user_topics)
    if global_topics and kafka_stages > 1 and local_checkpoint(checkpoint) is None:
        raise TopologyError(
            f"this topology reads Kafka in {kafka_stages} sub-topologies and has global stores "
            f"({', '.join(map(repr, graph.global_stores))}): one source pins the global "
            "offsets of each micro-batch, and the tasks of the others read them from Spark's "
            f"offset log, which must then be on local disk, but checkpoint.location is "
            f"{checkpoint!r}. Use a local checkpoint.location, or merge the input streams into "
            "one sub-topology (one stream of several topics, or merge())")
    group_of = {m.id: g for g in groups for m in g.members}
    readers = {t: st for st in subs for t in st.fed_topics}
    keys = {n: _shuffle_keys(spark, n) for n in {g.size for g in groups if g.fed}}
    name = lambda t: topic_name(t, t in internal, app_id)  # noqa: E731
    routes = {name(t): (group_of[r.id].size, group_of[r.id].first[r.id]) for t, r in readers.items()}

    first_marker, total = {}, 0
    for st in sorted(subs, key=lambda st: st.id):
        first_marker[st.id], total = total, total + tasks[st.id]
    outputs: dict[int, DataFrame] = {}  # by id(group)
    sc = spark.sparkContext  # records in, records out, async metrics, restored, restores
    counters = (sc.accumulator(0), sc.accumulator(0), sc.accumulator({}, MetricsParam()),
                sc.accumulator(0), sc.accumulator(0))
    for g in groups:
        members = []
        for st in g.members:
            fed = {name(t): (fed_count[t], t not in internal) for t in st.feeds}
            counts = dict(partition_counts)
            counts.update({n: p for n, (p, _) in fed.items()})
            streaming = len(st.user_topics) == 1 and not st.fed_topics
            plan = StagePlan(st.id, st.nodes, fed, routes, keys, counts, streaming,
                             first_marker[st.id])
            members.append((g.first[st.id], tasks[st.id], plan))
        df = _group_input(spark, c, g, groups, begin, outputs, keys, name)
        stage = make_stage(graph, c.as_dict(), members, keys[g.size] if g.fed else None, counters)
        outputs[id(g)] = df.mapInArrow(stage, FED_SCHEMA)
    terminal = [outputs[id(g)] for g in groups if not _downstream(g, groups)]
    result = terminal[0]
    for df in terminal[1:]:
        result = result.unionByName(df)
    store_tasks = {store: tasks[st.id] for st in subs for store, (_, procs) in graph.stores.items()
                   if procs & set(st.nodes)}
    return QueryPlan(result, store_tasks, total, counters)


def _task_counts(graph: TopologyGraph, subs: list[SubTopology], partition_counts: dict[str, int],
                 internal: set[str]) -> tuple[dict[int, int], dict[str, int]]:
    """Tasks per sub-topology and partitions per fed topic (spec name), upstream first: a
    sub-topology's ids do not follow the data (a table's source may come before the stream
    whose repartition it joins)."""
    tasks: dict[int, int] = {}
    fed_count: dict[str, int] = {}
    pending = list(subs)
    while pending:
        ready = [st for st in pending if all(t in fed_count for t in st.fed_topics)
                 and all(graph.partitions_like.get(t) in (None, *partition_counts, *fed_count)
                         for t in st.feeds)]
        if not ready:
            raise TopologyError("the sub-topologies' repartition topics form a cycle: "
                                f"{sorted(t for st in pending for t in st.fed_topics)}")
        for st in ready:
            counts = ([partition_counts[t] for t in st.user_topics]
                      + [fed_count[t] for t in st.fed_topics])
            tasks[st.id] = max(counts)
            for t in st.feeds:
                like = graph.partitions_like.get(t)
                if like is not None:
                    fed_count[t] = partition_counts.get(like, fed_count.get(like))
                else:
                    fed_count[t] = tasks[st.id] if t in internal else partition_counts[t]
            pending.remove(st)
    return tasks, fed_count


def _downstream(g: _Group, groups: list[_Group]) -> _Group | None:
    """The one group that reads what ``g`` writes, if any."""
    fed = {t for m in g.members for t in m.feeds}
    for other in groups:
        if any(set(m.fed_topics) & fed for m in other.members):
            return other
    return None


def _upstream(g: _Group, groups: list[_Group]) -> list[_Group]:
    fed = {t for m in g.members for t in m.fed_topics}
    return [up for up in groups if any(set(m.feeds) & fed for m in up.members)]


def _group_input(spark: SparkSession, c: StreamsConfig, g: _Group, groups: list[_Group],
                 begin: tuple[dict[str, str], Offsets, Offsets | None, list[list[str]], bool],
                 outputs: dict[int, DataFrame], keys: dict[int, list[int]], name) -> DataFrame:
    if not g.fed:
        (st,) = g.members
        return _kafka_df(spark, c, list(st.user_topics), *begin)  # one input partition per task
    parts: list[DataFrame] = []
    for st in g.members:
        if st.user_topics:
            kafka = _kafka_df(spark, c, list(st.user_topics), *begin)
            lookup = keys[g.size][g.first[st.id]:]
            mapping = F.create_map(*[x for p, k in enumerate(lookup) for x in (F.lit(p), F.lit(k))])
            parts.append(kafka.withColumn("src_task", F.lit(-1))
                         .withColumn("shuffle_key", mapping[F.col("partition")]))
    fed_names = [name(t) for m in g.members for t in m.fed_topics] + [MARKER_TOPIC]
    for up in _upstream(g, groups):
        parts.append(outputs[id(up)].where(F.col("topic").isin(*fed_names)))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.repartition(g.size, "shuffle_key")
