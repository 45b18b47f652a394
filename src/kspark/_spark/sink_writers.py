"""The ``foreachBatch`` functions of the Spark sinks that are not Spark's own streaming
sinks: Delta (exactly once, ``_interop/delta.py``), JDBC (at least once) and the user's
``foreach_batch`` function. Each is picklable: on Spark Connect it runs in the server's
Python process.

Example (needs Spark, so not run)::

    df.writeStream.foreachBatch(batch_writer(spec, "app", checkpoint)).start()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._interop.sinks import SparkSinkSpec
from kspark.errors import SparkSinkError
from kspark._interop.delta import require_deltalake, write_batch

__all__ = ["batch_writer", "DeltaBatchWriter", "JdbcBatchWriter"]


def batch_writer(spec: SparkSinkSpec, app_id: str, checkpoint: str) -> Callable[[Any, int], Any]:
    """The ``foreachBatch`` function of sink ``spec``."""
    if spec.writer == "delta":
        require_deltalake(spec.name)
        return DeltaBatchWriter(spec, app_id, checkpoint)
    if spec.writer == "jdbc":
        return JdbcBatchWriter(spec)
    assert spec.fn is not None
    return spec.fn


class DeltaBatchWriter:
    """Each micro-batch as one Delta commit, under the transaction id
    ``kspark:<application.id>:<sink>:<Spark query id>`` and the batch id as its version."""

    def __init__(self, spec: SparkSinkSpec, app_id: str, checkpoint: str):
        self.spec, self.app_id, self.checkpoint = spec, app_id, checkpoint
        self._txn_id: str | None = None

    def __call__(self, df: Any, batch_id: int) -> None:
        table = df.toArrow()
        if table.num_rows == 0:
            return
        try:
            write_batch(self.spec.path or "", table, self.txn_id(df.sparkSession), batch_id,
                        self.spec.partition_by, dict(self.spec.options))
        except Exception as e:
            raise SparkSinkError(
                f"Spark sink {self.spec.name!r} could not write batch {batch_id} "
                f"({table.num_rows} rows) to the Delta table at {self.spec.path}: "
                f"{type(e).__name__}: {e}") from e

    def txn_id(self, spark: Any) -> str:
        if self._txn_id is None:
            from kspark._spark.checkpoint import SparkCheckpoint

            query = SparkCheckpoint(spark, self.checkpoint).query_id()
            self._txn_id = f"kspark:{self.app_id}:{self.spec.name}:{query}"
        return self._txn_id


class JdbcBatchWriter:
    """Each micro-batch appended through Spark's JDBC writer (at least once: a batch run
    again after a failure is written again). ``headers`` is left out (no JDBC type)."""

    def __init__(self, spec: SparkSinkSpec):
        self.spec = spec

    def __call__(self, df: Any, batch_id: int) -> None:
        (df.drop("headers").write.format("jdbc").options(**dict(self.spec.options))
         .mode("append").save())
