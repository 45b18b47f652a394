"""Plan a topology as one streaming query: a fused stage per sub-topology, shuffles between."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kspark._graph.graph import TopologyGraph, topic_name
from kspark._graph.subtopology import SubTopology, sub_topologies
from kspark._spark.stage import FED_SCHEMA, StagePlan, make_stage
from kspark.config import StreamsConfig
from kspark.errors import TopologyError

__all__ = ["plan_query"]


def _shuffle_keys(spark: SparkSession, n: int) -> list[int]:
    """For each partition p < n, an int whose Spark hash partitioning sends it to p."""
    rows = (spark.range(0, 64 * n).selectExpr("cast(id as int) as k", f"pmod(hash(cast(id as int)), {n}) as p")
            .groupBy("p").agg(F.min("k").alias("k")).collect())
    keys = {r["p"]: r["k"] for r in rows}
    if len(keys) != n:
        raise TopologyError(f"could not find shuffle keys for {n} partitions")
    return [keys[p] for p in range(n)]


def _kafka_df(spark: SparkSession, c: StreamsConfig, topics: list[str],
              resets: dict[str, str]) -> DataFrame:
    return (spark.readStream.format("kspark_kafka")
            .option("resets", json.dumps({t: resets[t] for t in topics if t in resets}))
            .option("bootstrap", c["bootstrap.servers"])
            .option("topics", json.dumps(topics))
            .option("max_offsets", str(c["max.offsets.per.trigger"]))
            .option("timeout_ms", str(c["request.timeout.ms"]))
            .option("read_timeout_ms", str(c["source.read.timeout.ms"]))
            .option("consumer_conf", json.dumps(c.with_prefix("consumer.")))
            .option("admin_conf", json.dumps(c.with_prefix("admin.")))
            .load())


def plan_query(spark: SparkSession, graph: TopologyGraph, c: StreamsConfig,
               partition_counts: dict[str, int]) -> tuple[DataFrame, dict[str, int]]:
    """The DataFrame whose execution runs the whole topology for one micro-batch, and the
    number of tasks of each state store (its changelog's partition count).

    ``partition_counts`` holds every user topic the topology reads or writes by name.
    """
    app_id = c["application.id"]
    internal = set(graph.internal_topics())
    resets = {t: s.offset_reset for s in graph.sources() if s.offset_reset for t in s.topics}
    subs = sub_topologies(graph)
    tasks: dict[int, int] = {}
    fed_count: dict[str, int] = {}  # spec topic name -> partitions
    for st in subs:
        counts = [partition_counts[t] for t in st.user_topics] + [fed_count[t] for t in st.fed_topics]
        tasks[st.id] = max(counts)
        for t in st.feeds:
            like = graph.partitions_like.get(t)
            if like is not None:
                fed_count[t] = partition_counts[like] if like in partition_counts else fed_count[like]
            else:
                fed_count[t] = tasks[st.id] if t in internal else partition_counts[t]
    readers = {t: st for st in subs for t in st.fed_topics}
    shuffled = [tasks[st.id] for st in subs if st.fed_topics]
    keys = {n: _shuffle_keys(spark, n) for n in set(fed_count.values()) | set(shuffled)}
    offsets = _partition_offsets(subs, tasks, partition_counts)

    outputs: dict[int, DataFrame] = {}
    terminal: list[DataFrame] = []
    for st in subs:
        downstream = {readers[t].id for t in st.feeds}
        if len(downstream) > 1:
            raise TopologyError(
                f"sub-topology {st.id} feeds sub-topologies {sorted(downstream)}; on Spark a "
                "sub-topology may feed at most one other for now. Merge the branches before "
                "repartitioning, or run it in the TopologyTestDriver.")
        fed_names = [topic_name(t, t in internal, app_id) for t in st.fed_topics]
        df = _stage_input(spark, c, st, fed_names, resets, outputs, subs, tasks[st.id], keys)
        fed = {topic_name(t, t in internal, app_id): (fed_count[t], t not in internal)
               for t in st.feeds}
        counts = dict(partition_counts)
        counts.update({name: n for name, (n, _) in fed.items()})
        streaming = len(st.user_topics) == 1 and not st.fed_topics
        plan = StagePlan(st.id, st.nodes, fed, keys, counts, streaming, offsets[st.id])
        out = df.mapInArrow(make_stage(graph, c.as_dict(), plan), FED_SCHEMA)
        outputs[st.id] = out
        if not st.feeds:
            terminal.append(out)
    result = terminal[0]
    for df in terminal[1:]:
        result = result.unionByName(df)
    store_tasks = {name: tasks[st.id] for st in subs for name, (_, procs) in graph.stores.items()
                   if procs & set(st.nodes)}
    return result, store_tasks


def _partition_offsets(subs: list[SubTopology], tasks: dict[int, int],
                       partition_counts: dict[str, int]) -> dict[int, int]:
    """Where each stage's tasks start among the partitions of the union its output joins.

    A stage runs in the same Spark stage as the union after it (a union is a narrow
    dependency), so Spark numbers its tasks after those of the union's earlier inputs:
    a stage's task is ``TaskContext.partitionId() - offset``. Unions come from
    ``_stage_input`` (Kafka first, then upstream stages in order) and from the final union
    of terminal stages.
    """
    offsets: dict[int, int] = {st.id: 0 for st in subs}
    for st in subs:
        if not st.fed_topics:
            continue
        pos = max((partition_counts[t] for t in st.user_topics), default=0)
        for up in subs:
            if set(up.feeds) & set(st.fed_topics):
                offsets[up.id] = pos
                pos += tasks[up.id]
    pos = 0
    for st in subs:
        if not st.feeds:
            offsets[st.id] = pos
            pos += tasks[st.id]
    return offsets


def _stage_input(spark: SparkSession, c: StreamsConfig, st: SubTopology, fed_names: list[str],
                 resets: dict[str, str],
                 outputs: dict[int, DataFrame], subs: list[SubTopology], n: int,
                 keys: dict[int, list[int]]) -> DataFrame:
    parts: list[DataFrame] = []
    if st.user_topics:
        kafka = _kafka_df(spark, c, list(st.user_topics), resets)
        if not st.fed_topics:
            return kafka  # one input partition per task already: no shuffle
        mapping = F.create_map(*[x for p, k in enumerate(keys[n]) for x in (F.lit(p), F.lit(k))])
        parts.append(kafka.withColumn("src_task", F.lit(-1))
                     .withColumn("shuffle_key", mapping[F.col("partition")]))
    for up in subs:
        if set(up.feeds) & set(st.fed_topics):
            parts.append(outputs[up.id].where(F.col("topic").isin(*fed_names)))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.repartition(n, "shuffle_key")
