"""The application's Spark sinks: one Structured Streaming query per sink, run beside the
topology's own in both execution modes (``docs/spark-interop.md``).

Each reads its sink topic (``topic_source.py``: read_committed, purged after each
committed micro-batch) and writes with its writer: Spark's file sink or ``toTable``,
kspark's Delta writer (``_interop/delta.py``), JDBC, or the user's ``foreach_batch``
function. :class:`SparkSinks` starts them with the application, tells it when one failed,
drains them at the end of a batch run (``autostop.at=eol``: every record the topology
committed is written before the application finishes) and stops them with it.

Example (needs Spark and a broker, so not run)::

    sinks = SparkSinks(graph, config)
    sinks.start(spark)
    ...
    sinks.drain(admin)   # a batch run ended: write what is left, then stop
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kspark._interop.sinks import SparkSinkSpec
from kspark._spark.failures import explain
from kspark._spark.read_topic import topic_read
from kspark.config import checkpoint_location
from kspark.errors import SparkSinkError, StreamsError
from kspark._plan.internal_topics import spark_sink_topic
from kspark._spark.sink_writers import batch_writer
from kspark._spark.checkpoint import SparkCheckpoint
from kspark._engine.metrics.names import Metric, MetricName
from kspark._spark.session import ensure_registered
from kspark._spark.topic_source import topic_source_for

__all__ = ["SparkSinks", "sink_checkpoint"]

log = logging.getLogger("kspark")
POLL_S = 1.0


def sink_checkpoint(config: Any, name: str) -> str:
    """Spark's checkpoint of sink ``name``: beside the application's own (which real-time
    mode deletes), ``<checkpoint.location>-spark-sinks/<name>``."""
    return f"{checkpoint_location(config).rstrip('/')}-spark-sinks/{name}"


class SparkSinks:
    """The Spark sinks of one application run (none: every call does nothing)."""

    def __init__(self, graph: Any, config: Any):
        self.graph, self.config = graph, config
        self.app_id = config["application.id"]
        self.specs: dict[str, SparkSinkSpec] = dict(graph.spark_sinks)
        self.queries: dict[str, Any] = {}
        self.rows: dict[str, int] = dict.fromkeys(self.specs, 0)
        self._seen: dict[str, set[str]] = {n: set() for n in self.specs}
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def topic(self, name: str) -> str:
        """Sink ``name``'s topic (created at start with the application's internal topics:
        ``_plan/internal_topics.spark_sink_topics``)."""
        return spark_sink_topic(self.app_id, self.specs[name])

    def start(self, spark: Any) -> None:
        """Start every sink's query, then a thread keeping their counts."""
        for name in self.specs:
            try:
                self.queries[name] = self._start(spark, name)
            except Exception as e:
                self.stop()
                spec = self.specs[name]
                raise SparkSinkError(
                    f"Spark sink {name!r} of application {self.app_id!r} could not start its "
                    f"{spec.format or 'foreach_batch'} writer ({spec.path or spec.table or ''}): "
                    f"{str(e).strip().splitlines()[0] if str(e).strip() else repr(e)}; check the "
                    "format, its options and that the session has its data source (Iceberg "
                    "needs its runtime jar and catalog)") from e
        if self.specs:
            threading.Thread(target=self._watch, name="kspark-spark-sinks", daemon=True).start()

    def _start(self, spark: Any, name: str) -> Any:
        spec, c = self.specs[name], self.config
        node = self.graph.nodes[name]
        read = topic_read(self.topic(name), node.key_serde, node.value_serde, c, purge=True,
                          what=f"Spark sink {name!r}")
        fmt = _register(spark, read)
        df = spark.readStream.format(fmt).load()
        writer = (df.writeStream.queryName(f"{self.app_id}-{name}")
                  .option("checkpointLocation", sink_checkpoint(c, name))
                  .trigger(processingTime=f"{int(c['sink.trigger.interval.ms'])} "
                                          "milliseconds"))
        if spec.writer in ("file", "table"):
            writer = writer.format(spec.format).options(**dict(spec.options))
            if spec.partition_by:
                writer = writer.partitionBy(*spec.partition_by)
            return writer.toTable(spec.table) if spec.writer == "table" else \
                writer.start(spec.path)

        return writer.foreachBatch(batch_writer(spec, self.app_id, sink_checkpoint(c, name))
                                   ).start()

    def _watch(self) -> None:
        while not self._stopped.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        """Count the rows of the sinks' micro-batches since the last poll."""
        for name, q in list(self.queries.items()):
            try:
                recent = q.recentProgress
            except Exception:  # noqa: BLE001 - a stopped or lost query: nothing new
                continue
            with self._lock:
                for p in recent:  # attributes: a Connect client's progress has no items
                    batch = f"{p.id}:{p.batchId}"  # a replayed batch counts once
                    if batch not in self._seen[name]:
                        self._seen[name].add(batch)
                        self.rows[name] += int(p.numInputRows or 0)

    def failure(self) -> str | None:
        """The error of the first sink whose query failed, naming it (None: all run)."""
        for name, q in self.queries.items():
            if not q.isActive and q.exception() is not None:
                spec = self.specs[name]
                where = spec.path or spec.table or spec.format or "foreach_batch"
                reason = explain(self.app_id, q.exception()).split(" failed: ", 1)[-1]
                return (f"Spark sink {name!r} ({spec.writer} {where}) failed: {reason}; the "
                        "topology's output waits in its topic, and a restart resumes the sink "
                        "from its last committed batch")
        return None

    def drain(self, spark: Any, admin: Any) -> None:
        """A batch run ended: wait until every sink has committed all its topic holds (a
        sink that commits nothing new for ``task.timeout.ms`` fails it), logging what is
        left every 10 s, then stop the sinks."""
        if not self.specs:
            return
        counts = admin.partition_counts()
        tps = {name: [(self.topic(name), p) for p in range(counts[self.topic(name)])]
               for name in self.specs}
        every = [tp for v in tps.values() for tp in v]
        ends, starts = admin.settled_end_offsets(every), admin.end_offsets(every, earliest=True)
        left = {name: {tp: ends[tp] for tp in v if ends[tp] > starts[tp]}
                for name, v in tps.items()}
        timeout_s = int(self.config["task.timeout.ms"]) / 1000
        moved_at = shown_at = time.monotonic()
        last = -1
        while True:
            done = {n: self._committed(spark, n) for n in left}
            left = {n: e for n, e in left.items() if not _reached(done[n], e)}
            failed = self.failure()
            if failed is not None:
                self.stop()
                raise StreamsError(f"application {self.app_id!r} failed: {failed}")
            if not left:
                break
            behind = sum(max(0, e - done[n].get(tp, 0)) for n, ends_ in left.items()
                         for tp, e in ends_.items())
            now = time.monotonic()
            if behind != last:
                last, moved_at = behind, now
            if now - moved_at > timeout_s:
                self.stop()
                raise SparkSinkError(
                    f"application {self.app_id!r}: Spark sink(s) {sorted(left)} wrote nothing "
                    f"for task.timeout.ms ({self.config['task.timeout.ms']} ms) after the batch "
                    f"run ended, {behind} records short; the records stay in the topics, and "
                    "a restart writes them")
            if now - shown_at >= 10:
                shown_at = now
                log.info("application %r: the batch run is done; Spark sink(s) %s have %d "
                         "records left to write", self.app_id, sorted(left), behind)
            time.sleep(0.3)
        self.poll()
        self.stop()
        # what the last micro-batches wrote (their purge comes with the next batch's start)
        admin.delete_records({tp: e for tp, e in ends.items() if e > starts[tp]})

    def _committed(self, spark: Any, name: str) -> dict[tuple[str, int], int]:
        """Where sink ``name``'s last committed micro-batch ended, per topic-partition."""
        checkpoint = SparkCheckpoint(spark, sink_checkpoint(self.config, name))
        batch = checkpoint.last_committed()
        done = checkpoint.offsets(batch) if batch is not None else {}
        return {(t, int(p)): int(o) for t, parts in done.items() for p, o in parts.items()}

    def stop(self) -> None:
        self._stopped.set()
        for q in self.queries.values():
            try:
                if q.isActive:
                    q.stop()
            except Exception as e:  # noqa: BLE001 - a lost Connect server: nothing to stop
                log.info("application %r: stopping a Spark sink: %s", self.app_id, e)

    def metrics(self) -> dict[Any, Any]:
        """Per sink, in the group ``spark-sink-metrics`` (tags ``thread-id``: the
        application, ``sink``): ``batches-total`` and ``rows-total``."""
        self.poll()
        out: dict[Any, Any] = {}
        for name, q in self.queries.items():
            last = _last(q)
            tags = {"thread-id": self.app_id, "sink": name}
            with self._lock:
                values = {"batches-total": int(last.batchId) + 1 if last else 0,
                          "rows-total": self.rows[name]}
            for metric, value in values.items():
                n = MetricName(metric, "spark-sink-metrics", f"The {metric.split('-')[0]} "
                               "the Spark sink has written", tags)
                out[n] = Metric(n, value)
        return out

    def progress(self) -> dict[str, int]:
        """``sink_batches``, ``sink_rows`` and ``sink_lag`` summed over the sinks."""
        self.poll()
        batches = 0
        for q in self.queries.values():
            last = _last(q)
            batches += int(last.batchId) + 1 if last else 0
        with self._lock:
            rows = sum(self.rows.values())
        return {"sink_batches": batches, "sink_rows": rows}


def _register(spark: Any, read: Any) -> str:
    ensure_registered(spark)
    return topic_source_for(spark, read)


def _last(q: Any) -> Any:
    try:
        return q.lastProgress
    except Exception:  # noqa: BLE001 - a lost Connect server
        return None


def _reached(done: dict[tuple[str, int], int], ends: dict[tuple[str, int], int]) -> bool:
    """Whether a sink that committed up to ``done`` has written everything before ``ends``.

    >>> _reached({("t", 0): 5}, {("t", 0): 5, ("t", 1): 0}), _reached({}, {("t", 0): 1})
    (True, False)
    """
    return all(done.get(tp, 0) >= e for tp, e in ends.items())
