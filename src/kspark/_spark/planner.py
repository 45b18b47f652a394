"""Build the DataFrames of a :class:`~kspark._plan.plan.QueryPlan`: one streaming query.

The plan (``plan.py``) decides the stages, their exchanges and each Kafka source's options;
:func:`build` turns it into Spark: a Kafka data source per source, whose rows (one task
marker per task) are the streaming query's; :func:`batch_frames` makes, for one
micro-batch, a ``mapInArrow`` per stage over its sources' markers or its exchange (a
``repartition``), each stage's partitions placed by the caller (``micro_batch.py``), and
the union of the terminal stages, whose execution runs the topology for that batch.

Example (needs Spark, so not run)::

    built = build(spark, plan(graph, partition_counts, config, start, stop), graph, config)
    built.df.writeStream.foreachBatch(MicroBatchHost(spark, built, config)).start()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, create_map, lit

from kspark._graph.graph import TopologyGraph
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._plan.options import OPTION, SourceOptions
from kspark._plan.plan import QueryPlan, Stage
from kspark._spark.source import source_for
from kspark._spark.stage import for_batch, make_stage
from kspark._spark.wire import FED_SCHEMA, MARKER_TOPIC, SOURCE_SCHEMA
from kspark.config import StreamsConfig

__all__ = ["build", "batch_frames", "source_tasks", "BuiltQuery", "SOURCE_TAG"]

SOURCE_TAG = "kspark_source"  # the streaming rows' column naming their sub-topology

@dataclass(frozen=True)
class BuiltQuery:
    """The streaming DataFrame of the topology's Kafka sources (one task marker per task and
    micro-batch, tagged with its sub-topology in :data:`SOURCE_TAG`), the plan it was built
    from, and each stage's function (:func:`~kspark._spark.stage.make_stage`; its committed
    task batches report their ``TaskMetrics`` to the control topic)."""

    df: DataFrame
    plan: QueryPlan
    functions: dict[int, Callable[..., Any]]
    graph: TopologyGraph | None = None

    @property
    def store_tasks(self) -> dict[str, int]:
        """Tasks (changelog partitions) of each state store."""
        return self.plan.store_tasks

    @property
    def tasks(self) -> int:
        """Tasks in all: the progress topic's partition count (one marker partition each)."""
        return self.plan.tasks


def build(spark: SparkSession, plan: QueryPlan, graph: TopologyGraph,
          config: StreamsConfig) -> BuiltQuery:
    """The streaming DataFrame and stage functions of ``plan``. ``graph`` makes the tasks'
    processors and ``config`` gives their settings and the sources' client settings;
    neither goes into the plan, which is data only (and printable: the client settings may
    hold secrets)."""
    settings = as_settings(config)
    functions = {}
    for stage in plan.stages:
        members = [(m.first, m.tasks, m.stage_plan) for m in stage.members]
        keys = plan.shuffle_keys[stage.exchange.size] if stage.exchange else None
        functions[stage.index] = make_stage(graph, config.as_dict(), members, keys, report=True)
    sources = [_kafka_df(spark, settings, m.source).withColumn(SOURCE_TAG, lit(m.sub_topology))
               for m in plan.members() if m.source is not None]
    df = sources[0]
    for other in sources[1:]:
        df = df.unionByName(other)
    return BuiltQuery(df, plan, functions, graph)


def batch_frames(query: QueryPlan, functions: dict[int, Callable[..., Any]],
                 markers: Callable[[int], DataFrame],
                 place: Callable[[Stage, DataFrame], DataFrame],
                 batch: tuple[str, int]) -> DataFrame:
    """The DataFrame running the whole topology of ``query`` (its stages' ``functions``) for
    micro-batch ``batch`` (streaming query id, batch id): each stage's input
    (``markers(sub_topology)``: that Kafka source's task markers of the batch, one
    partition per task, without :data:`SOURCE_TAG`), handed to ``place`` (which chooses
    where each of its partitions runs), then its ``mapInArrow``; the union of the terminal
    stages."""
    outputs: dict[int, DataFrame] = {}  # by stage index
    for stage in query.stages:
        df = place(stage, _stage_input(markers, stage, outputs))
        outputs[stage.index] = df.mapInArrow(for_batch(functions[stage.index], batch),
                                             FED_SCHEMA)
    terminal = [outputs[s.index] for s in query.stages if s.terminal]
    result = terminal[0]
    for df in terminal[1:]:
        result = result.unionByName(df)
    return result


def source_tasks(plan: QueryPlan) -> dict[int, int]:
    """Per Kafka-reading sub-topology, in the order of the streaming query's union of the
    sources (:meth:`QueryPlan.members` order), its tasks (one partition each).

    >>> from types import SimpleNamespace as N
    >>> p = N(members=lambda: [N(sub_topology=0, tasks=2, source=1),
    ...                        N(sub_topology=1, tasks=3, source=None),
    ...                        N(sub_topology=2, tasks=1, source=1)])
    >>> source_tasks(p)
    {0: 2, 2: 1}
    """
    return {m.sub_topology: m.tasks for m in plan.members() if m.source is not None}


def _kafka_df(spark: SparkSession, settings: ClientSettings, options: SourceOptions) -> DataFrame:
    # the client settings ride in a per-query source class, never in options (see source_for);
    # the schema given up front spares load() a Python process that would only infer it
    return (spark.readStream.format(source_for(spark, settings)).schema(SOURCE_SCHEMA)
            .option(OPTION, options.to_json()).load())


def _stage_input(markers: Callable[[int], DataFrame], stage: Stage,
                 outputs: dict[int, DataFrame]) -> DataFrame:
    """A stage's input: its Kafka source's markers (one partition per task), or its exchange
    of its members' markers and its upstream stages' fed rows."""
    if stage.exchange is None:
        (m,) = stage.members
        assert m.source is not None, "a stage without an exchange reads Kafka"
        return markers(m.sub_topology)
    ex = stage.exchange
    parts: list[DataFrame] = []
    for m in stage.members:
        if m.source is not None:
            lookup = ex.shuffle_keys[m.first:]
            mapping = create_map(*[x for p, k in enumerate(lookup) for x in (lit(p), lit(k))])
            parts.append(markers(m.sub_topology).withColumn("src_task", lit(-1))
                         .withColumn("shuffle_key", mapping[col("partition")]))
    fed_names = [*ex.topics, MARKER_TOPIC]
    for up in ex.upstream:
        parts.append(outputs[up].where(col("topic").isin(*fed_names)))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.repartition(ex.size, "shuffle_key")
