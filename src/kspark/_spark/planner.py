"""Build the DataFrames of a :class:`~kspark._spark.plan.QueryPlan`: one streaming query.

The plan (``plan.py``) decides the stages, their exchanges and each Kafka source's options;
:func:`build` only turns it into Spark: a Kafka data source per source, a ``mapInArrow``
per stage, a ``repartition`` per exchange, and the union of the terminal stages.

Example (needs Spark, so not run)::

    query_plan = plan(graph, partition_counts, config, start, stop)
    built = build(spark, query_plan, graph, config)
    built.df.writeStream.format("noop").start()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, create_map, lit

from kspark._engine.async_.metrics import merge_metrics
from kspark._graph.graph import TopologyGraph
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._spark.options import OPTION, SourceOptions
from kspark._spark.plan import QueryPlan, Stage
from kspark._spark.source import source_for
from kspark._spark.stage import make_stage
from kspark._spark.wire import FED_SCHEMA, MARKER_TOPIC, SOURCE_SCHEMA
from kspark.config import StreamsConfig

__all__ = ["build", "BuiltQuery", "MetricsParam"]


class MetricsParam(AccumulatorParam):
    """A Spark accumulator of async processors' metrics (see async_.metrics.merge_metrics)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - Spark's name
        return merge_metrics(a, b)


@dataclass(frozen=True)
class BuiltQuery:
    """The DataFrame whose execution runs the whole topology for one micro-batch, the plan it
    was built from, and the accumulators of committed task batches: records read, records
    written, async metrics, records restored, restores, moves (a task batch whose task's
    last commit was made on another host or state directory)."""

    df: DataFrame
    plan: QueryPlan
    counters: tuple[Any, ...]

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
    """The DataFrames of ``plan``. ``graph`` makes the tasks' processors and ``config``
    gives their settings and the sources' client settings; neither goes into the plan,
    which is data only (and printable: the client settings may hold secrets)."""
    sc = spark.sparkContext  # records in, records out, async metrics, restored, restores
    counters = (sc.accumulator(0), sc.accumulator(0), sc.accumulator({}, MetricsParam()),
                sc.accumulator(0), sc.accumulator(0), sc.accumulator(0))
    settings = as_settings(config)
    outputs: dict[int, DataFrame] = {}  # by stage index
    for stage in plan.stages:
        df = _stage_input(spark, settings, stage, outputs)
        members = [(m.first, m.tasks, m.stage_plan) for m in stage.members]
        keys = plan.shuffle_keys[stage.exchange.size] if stage.exchange else None
        run = make_stage(graph, config.as_dict(), members, keys, counters)
        outputs[stage.index] = df.mapInArrow(run, FED_SCHEMA)
    terminal = [outputs[s.index] for s in plan.stages if s.terminal]
    result = terminal[0]
    for df in terminal[1:]:
        result = result.unionByName(df)
    return BuiltQuery(result, plan, counters)


def _kafka_df(spark: SparkSession, settings: ClientSettings, options: SourceOptions) -> DataFrame:
    # the client settings ride in a per-query source class, never in options (see source_for);
    # the schema given up front spares load() a Python process that would only infer it
    return (spark.readStream.format(source_for(spark, settings)).schema(SOURCE_SCHEMA)
            .option(OPTION, options.to_json()).load())


def _stage_input(spark: SparkSession, settings: ClientSettings, stage: Stage,
                 outputs: dict[int, DataFrame]) -> DataFrame:
    """A stage's input: its Kafka source (one input partition per task), or its exchange of
    its members' Kafka sources and its upstream stages' fed rows."""
    if stage.exchange is None:
        (m,) = stage.members
        assert m.source is not None, "a stage without an exchange reads Kafka"
        return _kafka_df(spark, settings, m.source)
    ex = stage.exchange
    parts: list[DataFrame] = []
    for m in stage.members:
        if m.source is not None:
            kafka = _kafka_df(spark, settings, m.source)
            lookup = ex.shuffle_keys[m.first:]
            mapping = create_map(*[x for p, k in enumerate(lookup) for x in (lit(p), lit(k))])
            parts.append(kafka.withColumn("src_task", lit(-1))
                         .withColumn("shuffle_key", mapping[col("partition")]))
    fed_names = [*ex.topics, MARKER_TOPIC]
    for up in ex.upstream:
        parts.append(outputs[up].where(col("topic").isin(*fed_names)))
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.repartition(ex.size, "shuffle_key")
