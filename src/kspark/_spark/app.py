"""SparkApplication: a topology running as one Spark Structured Streaming query."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from kspark._graph.graph import TopologyGraph
from kspark._kafka.admin import Admin
from kspark._spark.session import build_session, ensure_registered
from kspark._spark.stage import STAGE_SCHEMA, make_stage
from kspark.config import StreamsConfig
from kspark.errors import StreamsError, TopologyError

__all__ = ["SparkApplication"]


class SparkApplication:
    """Checks the cluster, then reads, processes and writes through one streaming query."""

    def __init__(self, graph: TopologyGraph, config: StreamsConfig, spark: SparkSession | None):
        self.graph = graph
        self.config = config
        self._spark = spark
        self._query: Any = None

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.config["state.dir"], self.config["application.id"], "checkpoint")

    def start(self) -> None:
        c = self.config
        if self.graph.internal_topics() or set(self.graph.sink_topics()) & set(self.graph.source_topics()):
            raise TopologyError(
                "this topology repartitions (repartition(), or through() feeding later steps); "
                "running it on Spark needs the stage planner, which is not built yet. It runs "
                "in the TopologyTestDriver today.")
        admin = Admin(c["bootstrap.servers"], c["request.timeout.ms"], c.with_prefix("admin."))
        admin.check_topics(self.graph.source_topics(), self.graph.sink_topics())
        spark = self._spark or build_session({k: v for k, v in c.items() if k.startswith("spark.")})
        ensure_registered(spark)
        df = (spark.readStream.format("kspark_kafka")
              .option("bootstrap", c["bootstrap.servers"])
              .option("topics", json.dumps(self.graph.source_topics()))
              .option("max_offsets", str(c["max.offsets.per.trigger"]))
              .option("timeout_ms", str(c["request.timeout.ms"]))
              .option("read_timeout_ms", str(c["source.read.timeout.ms"]))
              .option("consumer_conf", json.dumps(c.with_prefix("consumer.")))
              .option("admin_conf", json.dumps(c.with_prefix("admin.")))
              .load())
        out = df.mapInArrow(make_stage(self.graph, c.as_dict()), STAGE_SCHEMA)
        writer = (out.writeStream.format("noop").queryName(c["application.id"])
                  .option("checkpointLocation", self.checkpoint_dir))
        if c["autostop.at"] == "eol":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{c['commit.interval.ms']} milliseconds")
        self._query = writer.start()

    def await_termination(self, timeout_s: float | None) -> bool:
        try:
            if timeout_s is None:
                self._query.awaitTermination()
                return True
            return bool(self._query.awaitTermination(timeout_s))
        except StreamingQueryException as e:
            raise StreamsError(_explain(self.config["application.id"], e)) from e

    def stop(self, timeout_s: float | None) -> None:
        if self._query is not None and self._query.isActive:
            self._query.stop()
        if self._query is not None and self._query.exception() is not None:
            raise StreamsError(_explain(self.config["application.id"], self._query.exception()))

    def progress(self) -> dict[str, int]:
        last = self._query.lastProgress if self._query else None
        if not last:
            return {"batches": 0, "position": 0}
        end = last["sources"][0].get("endOffset") or "{}"
        offsets = json.loads(end) if isinstance(end, str) else end
        pos = sum(int(o) for parts in offsets.values() for o in parts.values())
        return {"batches": int(last["batchId"]) + 1, "position": pos}


def _explain(app_id: str, e: BaseException) -> str:
    """The first kspark error named in a failed query's trace, else its first line."""
    text = str(getattr(e, "desc", None) or e)
    m = re.search(r"(kspark\.errors\.\w+: .*?)(?:\n\s*\n|\n\s+at |\n\tat |$)", text, re.S)
    reason = m.group(1).strip() if m else text.strip().splitlines()[0] if text.strip() else repr(e)
    return f"application {app_id!r} failed: {reason}"
