"""SparkApplication: a topology running as one Spark Structured Streaming query."""

from __future__ import annotations

import logging
import time
from typing import Any, NoReturn

from pyspark.sql import SparkSession

from kspark._graph.graph import TopologyGraph
from kspark._kafka.admin import Admin
from kspark._kafka.clients import check_client_configs
from kspark._kafka.settings import ClientSettings
from kspark._engine.state.build import private_state_dir
from kspark._spark.connect import abandon, bound_retries, is_connect
from kspark._spark.failures import connect_lost, explain
from kspark._spark.session import build_session, prepare
from kspark._spark.modes import DRIVERS, IDLE, ModeDriver
from kspark._spark.batch_run import BatchRun
from kspark._spark.spark_sinks import SparkSinks
from kspark._graph.resources import instance_group
from kspark._plan.internal_topics import kspark_topics_at
from kspark._spark.topic_creation import ensure_internal_topics
from kspark._control.instance_guard import InstanceGuard
from kspark.config import EXACTLY_ONCE_V2, MICRO_BATCH, StreamsConfig, checkpoint_location
from kspark._host.supervision import FailureHandler, RunHandle
from kspark.errors import MissingSourceTopicError, RunFailedError, StreamsError

__all__ = ["SparkApplication", "explain"]

log = logging.getLogger("kspark")


class StartTimings(dict):
    """Seconds each step of ``start()`` took, in order (``SparkApplication.start_timings``);
    each step is also logged at DEBUG to the ``kspark`` logger.

    >>> t = StartTimings("app")
    >>> t.step("checks")
    >>> list(t), t["checks"] >= 0
    (['checks'], True)
    """

    def __init__(self, app_id: str):
        super().__init__()
        self._app_id = app_id
        self._last = time.perf_counter()

    def step(self, name: str) -> None:
        """The step ``name`` ended now (it began where the previous one ended)."""
        now = time.perf_counter()
        self[name] = self.get(name, 0.0) + now - self._last
        self._last = now
        log.debug("application %r start: %s took %.3f s", self._app_id, name, self[name])


class SparkApplication:
    """Checks the cluster, then reads, processes and writes through one streaming query,
    run by the execution mode's driver (``modes.py``: the same calls in every mode, the
    :class:`~kspark._host.runner.Runner` protocol)."""

    def __init__(self, graph: TopologyGraph, config: StreamsConfig, spark: SparkSession | None):
        self.graph = graph
        self.config = config
        self._spark = spark
        self._query: RunHandle | None = None
        self._guard: InstanceGuard | None = None
        self._reported = False  # await_termination() raised the query's failure
        self._session: SparkSession | None = None
        self._batch_run: BatchRun | None = None  # autostop.at=eol: the run's stop offsets
        self._driver: ModeDriver = IDLE  # the execution mode's, from start()
        self._sinks = SparkSinks(graph, config)  # KStream.to_spark/foreach_batch's queries
        self.stop_offsets: dict[tuple[str, int], int] | None = None
        self.finished = False  # a batch run reached its stop offsets
        self.start_timings = StartTimings(config["application.id"])
        # the uncaught exception handler's say on a failed run (KafkaStreams sets it; the
        # mode's driver hands it to the run's restarts, _host/supervision.py)
        self.on_failure: FailureHandler | None = None

    @property
    def checkpoint_dir(self) -> str:
        """``checkpoint.location``, or by default ``<state.dir>/<application.id>/checkpoint``."""
        return checkpoint_location(self.config)

    def start(self) -> None:
        c = self.config
        timings = self.start_timings = StartTimings(c["application.id"])
        check_client_configs(c)  # first: a bad admin.* key would fail the next line unnamed
        private_state_dir(c["state.dir"])
        settings = ClientSettings.from_config(c)
        admin = Admin(settings, c["request.timeout.ms"])
        micro_batch = c["execution.mode"] == MICRO_BATCH
        if self._spark is not None and micro_batch:
            # Spark's planning processes start while Kafka is checked (real-time mode reads no
            # data source: not started, they would compete with its threads' start-up)
            prepare(self._spark)
        user_sources = [t for t in self.graph.user_source_topics()
                        if t not in self.graph.sink_topics()]
        dead_letters = [c["errors.dead.letter.queue.topic.name"]] if c[
            "errors.dead.letter.queue.topic.name"] else []
        admin.check_topics(user_sources, self.graph.sink_topics() + dead_letters)
        self._check_global_topics(admin)
        if "producer.message.max.bytes" not in c:  # records as large as the sink topics take
            largest = admin.max_message_bytes(self.graph.sink_topics() + dead_letters)
            if largest is not None and largest > 1_000_000:
                self.config = c = c.with_values(
                    {"producer.message.max.bytes": largest + 1024})
        counts = admin.partition_counts()
        self.graph.check_copartitioning(counts)
        if c["processing.guarantee"] == EXACTLY_ONCE_V2:
            admin.check_transactions()
        timings.step("topic checks")
        lock = instance_group(c["application.id"])
        ensure_internal_topics(admin, counts, kspark_topics_at(c["application.id"], 1, "guard"),
                               c["replication.factor"])
        timings.step("instance lock topic")
        self._guard = InstanceGuard(settings, c["application.id"], lock,
                                    c["request.timeout.ms"] / 1000)
        self._guard.acquire()
        timings.step("instance guard")
        try:
            self._start_query(admin, counts)
        except BaseException:
            self._guard.release()
            raise

    def _check_global_topics(self, admin: Admin) -> None:
        """Global topics must exist; they should be compacted (a warning if not)."""
        counts = admin.partition_counts()
        for store, g in self.graph.global_stores.items():
            topic = g.source.topics[0]
            if topic not in counts:
                raise MissingSourceTopicError(
                    f"global topic {topic!r} of global store {store!r} not found at "
                    f"{admin.bootstrap}; create it (compacted) before starting the application")
            policy = admin.topic_config(topic, "cleanup.policy")
            if policy is not None and "compact" not in policy:
                log.warning("global topic %r of global store %r has cleanup.policy=%s: records "
                            "deleted by retention are missing from the store when it is rebuilt; "
                            "make it compacted (cleanup.policy=compact)", topic, store, policy)

    def _start_query(self, admin: Admin, counts: dict[str, int]) -> None:
        c = self.config
        micro_batch = c["execution.mode"] == MICRO_BATCH
        spark = self._spark or build_session(
            {k: v for k, v in c.items() if k.startswith("spark.")}, prepare_source=micro_batch)
        self._session = spark
        if micro_batch:
            prepare(spark)
        if is_connect(spark):
            bound_retries(spark)
        # One Spark task per kspark task: Spark must not merge partitions of like inputs.
        spark.conf.set("spark.sql.unionOutputPartitioning", "false")
        timings = self.start_timings
        timings.step("session")
        self._driver = DRIVERS[c["execution.mode"]](self)
        self._sinks = SparkSinks(self.graph, c)
        query = self._query = self._driver.start(spark, admin, counts)
        try:
            self._sinks.start(spark)
        except BaseException:
            query.stop()
            self._driver.close()
            raise
        timings.step("Spark sinks")

    def begin_batch_run(self, admin: Admin, topics: list[str], counts: dict[str, int],
                        drained: list[tuple[str, int]] | None = None) -> BatchRun | None:
        """``autostop.at=eol``: the run, with its stop offsets (read back when it resumes,
        else the input ends now: KIP-95), and the partitions of topics the application
        reads back (``drained``: a cycle's, in micro-batch mode) that it must leave read to
        their end; None when streaming."""
        self._batch_run = BatchRun.at_start(self.config, admin, topics, counts, drained or [])
        self.stop_offsets = None if self._batch_run is None else dict(self._batch_run.stop)
        return self._batch_run

    def await_termination(self, timeout_s: float | None) -> bool:
        if not self._sinks.specs:
            return self._await_query(timeout_s)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:  # in slices: a failed Spark sink fails the application
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done = self._await_query(1.0 if left is None else min(1.0, left))
            if done:
                return True
            failed = self._sinks.failure()
            if failed is not None:
                self._handle().stop()
                self._batch_run = None
                self._release()
                self._reported = True
                raise StreamsError(f"application {self.config['application.id']!r} failed: "
                                   f"{failed}")
            if left is not None and left <= 0:
                return False

    def _handle(self) -> RunHandle:
        """The running query's handle (``start()`` made it)."""
        if self._query is None:
            raise AssertionError("the application's query is asked for before start()")
        return self._query

    def _await_query(self, timeout_s: float | None) -> bool:
        try:
            done = self._handle().await_termination(timeout_s)
        except RunFailedError as e:  # the one error of every mode's handle
            if e.lost:  # its Spark Connect server stopped answering
                self._lost_server(e.cause)
            self._release()
            self._reported = True
            raise StreamsError(explain(self.config["application.id"], e)) from e
        if done:
            self._finish_run()
            self._release()
        return done

    def _lost_server(self, e: BaseException) -> NoReturn:
        """The Spark Connect server stopped answering: the query is lost with it."""
        if self._session is not None:
            abandon(self._session)
        self._release()
        self._reported = True
        raise StreamsError(connect_lost(self.config["application.id"], e)) from e

    def _finish_run(self) -> None:
        """The query ended by itself (not stopped, not failed): a batch run is finished."""
        if (self._batch_run is not None and self._session is not None
                and self._handle().exception() is None):
            run, self._batch_run = self._batch_run, None
            try:  # every record the run committed is in the Spark sinks before it finishes
                self._sinks.drain(self._session, Admin(ClientSettings.from_config(
                    self.config), self.config["request.timeout.ms"]))
            except BaseException:
                self._release()
                self._reported = True
                raise
            self._driver.finish(run)
            self.finished = True

    def _release(self) -> None:
        """The query has stopped: another instance of the application may start."""
        self._sinks.stop()
        self._driver.close()
        if self._guard is not None:
            self._guard.release()
            self._guard = None

    def stop(self, timeout_s: float | None) -> None:
        query = self._query
        if query is not None and query.is_active():
            query.stop()  # a batch run stopped by the user stays unfinished
            self._batch_run = None
        elif query is not None:
            self._finish_run()
        self._release()
        failure = None if query is None else query.exception()
        if failure is not None and not self._reported:  # await_termination() raised it: not again
            raise StreamsError(explain(self.config["application.id"], failure)) from failure

    def metrics(self) -> Any:
        out = self._driver.metrics()
        out.update(self._sinks.metrics())
        return out

    def progress(self) -> dict[str, int]:
        return {**self._driver.progress(), **self._sinks.progress()}  # PROGRESS_KEYS' order

    def store_lags(self) -> dict[str, dict[int, Any]]:
        return self._driver.store_lags()

    def ready(self) -> bool:
        """Whether the tasks run (the client is RUNNING, not REBALANCING)."""
        return self._query is not None and self._query.ready()
