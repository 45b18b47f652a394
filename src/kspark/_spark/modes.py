"""The execution modes, each a driver of the one task runtime (``_host/task.py``).

:class:`~kspark._spark.app.SparkApplication` checks the cluster and takes the instance
guard, then hands the query to the driver of ``execution.mode`` (:data:`DRIVERS`), which
makes its internal topics, starts its query and answers ``progress()``, ``metrics()`` and
the end of a batch run in the one shape both modes share. The application never asks
which mode runs.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pyspark.sql import SparkSession

from kspark._engine.async_.metrics import summarize_metrics
from kspark._engine.metrics.view import MetricsView
from kspark._host.metrics import ReportedTotals, TaskMetrics, application_metrics, thread_id
from kspark._host.progress import progress_of
from kspark._host.supervision import RunHandle
from kspark._kafka.admin import Admin
from kspark._spark.batch_run import BatchRun
from kspark._spark.checkpoint import SparkCheckpoint
from kspark._spark.restarting import RestartingQuery
from kspark._plan.plan import kafka_sources, local_checkpoint, plan
from kspark._spark.session import ensure_registered
from kspark.config import commit_interval_ms
from kspark.errors import KSparkError, TopologyError
from kspark._engine.metrics.names import Metrics
from kspark._control.control_topic import control_end
from kspark._control.reports import ControlReader
from kspark._spark.resume import resume_offsets
from kspark._spark.realtime.layout import repartition_topics
from kspark._plan.internal_topics import repartition_topics_of
from kspark._spark.topic_creation import create_start_topics, ensure_internal_topics
from kspark._host.lags import partition_lags
from kspark._engine.offset_reset import topic_policy
from kspark._host.start_offsets import resolve_start_offsets
from kspark._kafka.clients import committed_offsets

__all__ = ["ModeDriver", "MicroBatchDriver", "RealTimeDriver", "DRIVERS", "IDLE"]

TP = tuple[str, int]
log = logging.getLogger("kspark")


class ModeDriver(Protocol):
    """What an execution mode does for the application (see the module docstring)."""

    def start(self, spark: SparkSession, admin: Admin, counts: dict[str, int]) -> RunHandle:
        """Make the mode's internal topics and start its query, supervised (its restarts
        asking the application's ``on_failure``): the handle the application runs by."""
        ...

    def finish(self, run: BatchRun) -> None:
        """The query ended by itself: mark the batch run ``run`` finished."""
        ...

    def progress(self) -> dict[str, int]: ...

    def metrics(self) -> Any:
        """``KafkaStreams.metrics()``: a :class:`~kspark._engine.metrics.names.Metrics`."""
        ...

    def store_lags(self) -> dict[str, dict[int, Any]]:
        """``KafkaStreams.all_local_store_partition_lags()`` (``_host/lags.py``)."""
        ...

    def close(self) -> None:
        """The query ended: release what the driver holds (its counts stay readable)."""
        ...


class _Idle:
    """Before start(): nothing counted yet (the one shape, zeros)."""

    def start(self, spark: SparkSession, admin: Admin, counts: dict[str, int]) -> RunHandle:
        raise AssertionError("the application starts the driver of its mode, not this one")

    def finish(self, run: BatchRun) -> None:
        pass

    def progress(self) -> dict[str, int]:
        return progress_of(0, 0, 0, TaskMetrics())

    def metrics(self) -> Any:

        return Metrics()

    def store_lags(self) -> dict[str, dict[int, Any]]:
        return {}

    def close(self) -> None:
        pass


IDLE = _Idle()


class MicroBatchDriver:
    """``execution.mode=micro_batch``: one Structured Streaming query whose micro-batches
    run every task once each (``micro_batch.py``, ``task_batch.py``)."""

    def __init__(self, app: Any):
        self.app = app
        self.query: RestartingQuery | None = None
        self.host: Any = None  # the query's MicroBatchHost
        self.totals: ReportedTotals | None = None  # the committed task batches' reports
        self.admin: Admin | None = None
        self.session: SparkSession | None = None
        self._last_lag: dict[TP, int] = {}
        self._view = MetricsView()
        self._logged: dict[str, int] = {}  # logged store -> its changelog's partitions

    def start(self, spark: SparkSession, admin: Admin, counts: dict[str, int]) -> RunHandle:
        from kspark._spark.micro_batch import MicroBatchHost
        from kspark._spark.planner import build

        app, c = self.app, self.app.config
        self.admin, self.session, timings = admin, spark, app.start_timings
        looped = plan(app.graph, counts, c).looped  # made first: the query resumes them too
        counts = _create_looped(admin, counts, c, looped)
        topics, resets = kafka_sources(app.graph, looped)
        start = resume_offsets(spark, c, topics, resets, app.checkpoint_dir)
        timings.step("resume offsets")
        run = app.begin_batch_run(admin, kafka_sources(app.graph)[0], counts,
                                  [(t, p) for t, n in looped.items() for p in range(n)])
        timings.step("stop offsets (metadata topic)")
        stop = run.stop_offsets() if run else None
        ensure_registered(spark)
        built = build(spark, plan(app.graph, counts, c, start, stop), app.graph, c)
        timings.step("planning (with the data source's load())")
        _check_repartitions_drained(admin, c, built.plan, counts)
        # changelogs, Spark sinks' topics, then every task's progress marker (both
        # guarantees: offset metadata of the progress topic) and the control topic
        create_start_topics(admin, counts, c, app.graph, built.plan)
        self._logged = _logged(app, built.store_tasks)
        app_id = c["application.id"]
        self.totals = ReportedTotals(ControlReader(
            admin.settings, app_id, control_end(admin.settings, app_id)))
        timings.step("changelog, progress and control topics")
        host = self.host = MicroBatchHost(spark, built, c, self.totals)
        timings.step("placement shim")
        writer = (built.df.writeStream.foreachBatch(host).queryName(c["application.id"])
                  .option("checkpointLocation", app.checkpoint_dir))
        if c["autostop.at"] == "eol":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{c['commit.interval.ms']} milliseconds")
        self.query = RestartingQuery(writer.start, c["application.id"],
                                     int(c["task.timeout.ms"]), int(c["retry.backoff.ms"]),
                                     app.on_failure)
        timings.step("query start")
        return self.query

    def finish(self, run: BatchRun) -> None:
        if self.session is not None:
            run.finish(SparkCheckpoint(self.session, self.app.checkpoint_dir))

    def progress(self) -> dict[str, int]:
        last = self.query.last_progress() if self.query else None
        batches = int(last["batchId"]) + 1 if last else 0
        return progress_of(batches, sum(self._positions().values()), sum(self._lag().values()),
                           self._task_metrics())

    def metrics(self) -> Any:
        """``KafkaStreams.metrics()`` from the committed task batches of this process; one
        "thread", the driver's view of the micro-batches' tasks (docs/operations.md)."""
        app = self.app.config["application.id"]
        done = self._task_metrics()
        rates = self._view
        me = thread_id(app, "micro-batch")
        with rates.lock:
            threads = {me: {"process-total": done.records_in, "commit-total": done.commits,
                            "process-rate": rates.rate("thread|process", done.records_in),
                            "commit-rate": rates.rate("thread|commit", done.commits)}}
        streams = {**done.streams, **(self.host.standby_stats() if self.host else {})}
        return application_metrics(rates, streams, lambda task: me, self._lag(), app,
                                   summarize_metrics(done.async_), threads)

    def store_lags(self) -> dict[str, dict[int, Any]]:
        """Every task runs in each micro-batch and ends it with its stores written down:
        every store partition is active, at its changelog's end."""
        return _store_lags(self.app, self.admin, self._logged, None, {})

    def close(self) -> None:
        if self.totals is not None:
            self.totals.close()

    def _task_metrics(self) -> TaskMetrics:
        """What the committed task batches of this process counted."""
        return self.totals.value() if self.totals is not None else TaskMetrics()

    def _positions(self) -> dict[TP, int]:
        """The next offset of every input partition, as the last micro-batch ended."""
        import json

        from kspark._spark.source import CLOCK

        last = self.query.last_progress() if self.query else None
        out: dict[TP, int] = {}
        global_topics = set(self.app.graph.global_topics())
        for source in (last or {}).get("sources", []):
            end = source.get("endOffset") or "{}"
            offsets = json.loads(end) if isinstance(end, str) else end
            out.update(((t, int(p)), int(o)) for t, parts in offsets.items()
                       if t not in global_topics and t != CLOCK for p, o in parts.items())
        return out

    def _lag(self) -> dict[TP, int]:
        """Per input partition, the records after the last micro-batch's end."""
        positions = self._positions()
        if not positions or self.admin is None:
            return {}
        try:  # a second at most: progress() answers while a broker restarts
            ends = self.admin.end_offsets(list(positions), patience_s=1.0)
        except KSparkError as e:
            log.info("progress(): the lag is not known now (%s); showing the last known", e)
            return self._last_lag
        self._last_lag = {tp: max(0, ends.get(tp, o) - o) for tp, o in positions.items()}
        return self._last_lag


class RealTimeDriver:
    """``execution.mode=real_time``: epochs of long-running stream threads
    (``realtime/``); Kafka alone holds the progress, no Spark checkpoint."""

    def __init__(self, app: Any):
        self.app = app
        self.query: Any = None
        self.admin: Admin | None = None
        self._logged: dict[str, int] = {}  # logged store -> its changelog's partitions

    def start(self, spark: SparkSession, admin: Admin, counts: dict[str, int]) -> RunHandle:
        from kspark._spark.realtime.query import real_time_query

        app = self.app
        c, app_id, timings = app.config, app.config["application.id"], app.start_timings
        _discard_micro_batch_checkpoint(app_id, app.checkpoint_dir)
        query_plan = plan(app.graph, counts, c)
        app.begin_batch_run(admin, kafka_sources(app.graph)[0], counts)
        timings.step("stop offsets (metadata topic)")
        create_start_topics(admin, counts, c, app.graph, query_plan, repartition_topics_of(
            repartition_topics(query_plan, app.graph), "its readers' tasks", c.topic_overrides()))
        self.admin, self._logged = admin, _logged(app, query_plan.store_tasks)
        timings.step("changelog, repartition, progress and control topics")
        starts = _real_time_starts(admin, app, counts)
        timings.step("start offsets (the group's, reset policies)")
        self.query = real_time_query(spark, app.graph, c, query_plan, commit_interval_ms(c),
                                     app.stop_offsets, starts, app.on_failure).start()
        timings.step("real-time start")
        return self.query

    def finish(self, run: BatchRun) -> None:
        if self.query.batch_end is not None:
            run.finish_at(self.query.batch_end.committed())

    def progress(self) -> dict[str, int]:
        return self.query.progress(kafka_sources(self.app.graph)[0])

    def metrics(self) -> Any:
        return self.query.metrics()

    def store_lags(self) -> dict[str, dict[int, Any]]:
        """As the live threads last reported: their active tasks' and standby copies'
        changelog partitions (``thread_metrics.changelog_positions``)."""
        q = self.query
        with q._metrics_lock:  # noqa: SLF001 - the query's reader of the threads' reports
            q._read_reports()  # noqa: SLF001
            active, standby = q.live.changelogs()
        return _store_lags(self.app, self.admin, self._logged, active, standby)

    def close(self) -> None:
        pass  # the query closes its reader of the threads' reports when it stops


def _logged(app: Any, store_tasks: dict[str, int]) -> dict[str, int]:
    """Of ``store_tasks`` (store -> its tasks), the stores with a changelog."""
    return {name: n for name, n in store_tasks.items()
            if app.graph.stores[name][0].logging_enabled}


def _store_lags(app: Any, admin: Admin | None, logged: dict[str, int],
                active: set[TP] | None, standby: dict[TP, int]) -> dict[str, dict[int, Any]]:
    """``_host/lags.partition_lags`` with the changelogs' ends read by the driver's admin
    (a second at most: a broker restarting leaves the partitions it cannot tell out)."""

    if admin is None or not logged:
        return {}

    def ends(tps: list[TP]) -> dict[TP, int]:
        try:
            return admin.end_offsets(tps, patience_s=1.0)
        except KSparkError as e:
            log.info("all_local_store_partition_lags(): changelog ends not known now (%s)", e)
            return {}

    return partition_lags(app.config["application.id"], logged, active, standby, ends)


def _real_time_starts(admin: Admin, app: Any, counts: dict[str, int]
                      ) -> tuple[tuple[TP, int, int], ...]:
    """Where each source partition without a valid committed offset starts (its reset
    policy, resolved once per start: every epoch of the run starts there until a task
    commits), with the group's offset seen (-1: none), as ``Epoch.starts``; under
    ``earliest`` the start is OFFSET_BEGINNING, which records deleted meanwhile cannot
    put out of range. Partitions under ``none`` fail the start here, on the driver."""
    from confluent_kafka import OFFSET_BEGINNING


    c = app.config
    topics, resets = kafka_sources(app.graph)
    tps = [(t, p) for t in topics for p in range(counts[t])]
    if not tps:
        return ()
    # the last completed commit (as micro_batch's resume): an open transaction of a run
    # that died is not waited for; a thread reads the group again once its tasks opened
    group = committed_offsets(admin.settings, c["application.id"], tps, stable=False)
    starts = resolve_start_offsets(admin, c["application.id"], tps, group, resets,
                                   c["auto.offset.reset"])
    earliest = {t for t in topics
                if topic_policy(False, resets.get(t), c["auto.offset.reset"]).name == "earliest"}
    return tuple((tp, group.get(tp, -1), OFFSET_BEGINNING if tp[0] in earliest else at)
                 for tp, at in sorted(starts.items()) if group.get(tp) != at)


def _discard_micro_batch_checkpoint(app_id: str, location: str) -> None:
    """Switching an application to real_time: the micro-batch mode's Spark checkpoint would
    be stale after the first real-time commit (Kafka alone holds real-time progress), and a
    later micro_batch run would refuse it; it is deleted, so that run starts from the
    consumer group's offsets, where this one leaves them (both modes commit there)."""
    import shutil

    directory = local_checkpoint(location)
    if directory is not None and (directory / "offsets").is_dir():
        log.info("application %r: execution.mode=real_time keeps its progress in Kafka alone; "
                 "deleting the micro-batch mode's Spark checkpoint at %s (a later micro_batch "
                 "run resumes from the consumer group's offsets)", app_id, directory)
        shutil.rmtree(directory)


def _create_looped(admin: Admin, counts: dict[str, int], config: Any,
                   looped: dict[str, int]) -> dict[str, int]:
    """Create the topics closing a cycle of sub-topologies (``QueryPlan.looped``: a
    foreign-key join's), configured as Kafka Streams' repartition topics (purged after each
    micro-batch, see ``source.py``); ``counts`` with theirs."""
    ensure_internal_topics(admin, counts, repartition_topics_of(
        looped, "its reader's tasks", config.topic_overrides()), config["replication.factor"])
    return {**counts, **looped}


DRIVERS: dict[str, type] = {"micro_batch": MicroBatchDriver, "real_time": RealTimeDriver}


def _check_repartitions_drained(admin: Admin, config: Any, query: Any,
                                counts: dict[str, int]) -> None:
    """Micro-batch mode carries repartitioned records in Spark exchanges and never reads the
    application's repartition topics in Kafka: refuse to start over one that holds records
    the group has not consumed (a Java application or a real-time run stopped before it
    processed them: they would be lost), naming it and what to do."""

    internal = sorted({t for m in query.members() for t, (_, to_kafka) in m.stage_plan.fed.items()
                       if not to_kafka and t in counts})
    tps = [(t, p) for t in internal for p in range(counts[t])]
    if not tps:
        return
    ends, starts = admin.end_offsets(tps), admin.end_offsets(tps, earliest=True)
    if all(ends[tp] <= starts[tp] for tp in tps):
        return
    done = committed_offsets(admin.settings, config["application.id"], tps)
    left = {tp: ends[tp] - max(done.get(tp, starts[tp]), starts[tp]) for tp in tps}
    left = {tp: n for tp, n in left.items() if n > 0}
    if left:
        (topic, partition), n = next(iter(sorted(left.items())))
        raise TopologyError(
            f"repartition topic {topic!r} partition {partition} holds {n} record(s) the "
            f"application {config['application.id']!r} has not processed ({len(left)} "
            "partition(s) in all): micro_batch mode carries repartitioned records in Spark "
            "exchanges and would never read them. Let the application that wrote them (Java, "
            "or kspark's real_time mode) process them first, or run in real_time mode")
