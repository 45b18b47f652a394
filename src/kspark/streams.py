"""KafkaStreams: run a topology as a Spark Structured Streaming query.

pyspark is imported only when an application starts (through :mod:`kspark._spark`), so
building topologies and testing them with the TopologyTestDriver never loads Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.metrics.names import Metrics
from kspark._graph.naming import check_explicit_naming
from kspark._iq.interactive import InteractiveQueries
from kspark._client.states import Lifecycle, State, StreamThreadExceptionResponse
from kspark._host.runner import Runner
from kspark._client.supervisor import Supervisor
from kspark._client.client_metrics import client_metrics
from kspark import __version__
from kspark.config import StreamsConfig
from kspark.errors import StreamsError
from kspark.processor.topology import Topology
from kspark.streams_metadata import LagInfo
from kspark._spark.failures import explain
from kspark._plan.describe import describe_application
from kspark.config import CONFIG_KEYS, MICRO_BATCH, MODE

log = logging.getLogger("kspark")

__all__ = ["KafkaStreams", "StreamThreadExceptionResponse", "spark_session"]


class KafkaStreams(InteractiveQueries):
    """A running kspark application.

    Example (needs a broker and Spark, so not run as a doctest)::

        streams = KafkaStreams(builder.build(), {"application.id": "app",
                                                  "bootstrap.servers": "localhost:9092",
                                                  "autostop.at": "eol"})
        streams.start()
        streams.await_termination()
        streams.close()
    """

    State = State  # KafkaStreams.State.RUNNING, as Java's

    def __init__(self, topology: Topology, config: Mapping[str, Any] | StreamsConfig,
                 spark: Any = None):
        self.config = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
        self._topology = topology
        check_explicit_naming(topology._graph, self.config)  # noqa: SLF001 - kspark's own
        self._spark = spark
        self._app: Runner | None = None  # the one protocol of every execution mode
        self._life = Lifecycle()
        self._supervisor: Supervisor | None = None
        self._handler: Callable[[BaseException], Any] | None = None
        self._endpoint: Any = None
        self._description: str | None = None  # the topology's, for the client's metrics

    def start(self) -> None:
        """Check topics and brokers, then start the streaming query (returns at once; the
        state is REBALANCING until the tasks run, then RUNNING)."""
        if self._life.state is not State.CREATED:
            raise StreamsError(f"cannot start a KafkaStreams in state {self._life.state.name}; "
                               "build a new one")
        from kspark._spark.app import SparkApplication

        graph = self._topology._graph  # noqa: SLF001 - kspark's own topology graph
        self._app = SparkApplication(graph, self.config, self._spark)
        self._app.on_failure = self._replace_after
        self._life.to(State.REBALANCING)
        self._start_endpoint()
        try:
            self._app.start()
        except BaseException:
            self._life.to(State.PENDING_ERROR)
            self._life.to(State.ERROR)
            self._stop_endpoint()
            raise
        self._supervisor = Supervisor(self._app, self._life)
        self._supervisor.start()

    def set_state_listener(self, listener: Callable[[State, State], Any]) -> None:
        """``listener(new_state, old_state)`` after every state change (Java's
        ``StateListener.onChange``), from the thread that changed it; only before
        ``start()``. A listener that raises is logged and ignored."""
        self._require_created("set_state_listener")
        self._life.listener = listener

    def set_uncaught_exception_handler(self, handler: Any) -> None:
        """What the application does when a task fails for good (KIP-671): ``handler`` is a
        function of the exception, or an object with ``handle(exception)``, returning a
        :class:`~kspark.StreamThreadExceptionResponse`. REPLACE_THREAD runs the failed
        micro-batch query or real-time epoch again from the last commit (at most 10 times
        within ``task.timeout.ms``, then the application fails); SHUTDOWN_CLIENT and
        SHUTDOWN_APPLICATION (a kspark application is one client) stop it in ERROR, as
        does the default (no handler), as in Kafka Streams. Only before ``start()``."""
        self._require_created("set_uncaught_exception_handler")
        handle = getattr(handler, "handle", None)
        if not callable(handle) and not callable(handler):
            raise StreamsError("set_uncaught_exception_handler() takes a function of the "
                               "exception or an object with handle(exception), got "
                               f"{type(handler).__name__}")
        self._handler = handle if callable(handle) else handler

    def _replace_after(self, error: BaseException) -> bool:
        """Whether the uncaught exception handler answers REPLACE_THREAD to the failed run's
        ``error`` (the bound on its restarts is the run's: ``_host/supervision.Restarts``)."""
        if self._handler is None:
            return False
        exc = StreamsError(explain(self.config["application.id"], error))
        try:
            answer = self._handler(exc)
        except Exception:  # noqa: BLE001 - a handler that raises: shut the client down
            log.exception("the uncaught exception handler raised; shutting the client down")
            return False
        return answer is StreamThreadExceptionResponse.REPLACE_THREAD

    def describe(self, partitions: Mapping[str, int] | None = None) -> str:
        """The topology as Kafka Streams prints it (``Topology.describe()``), then the Spark
        plan it becomes: stages, exchanges, tasks per sub-topology, stores and their
        changelog topics, internal topics. Starts nothing and imports no pyspark.

        Partition counts: ``partitions`` ({topic: count}) first, then the cluster's at
        ``bootstrap.servers`` (asked briefly); a topic known to neither is assumed to have one
        partition, and the output says so under "Partition counts".

        Example (asks the broker, so not run)::

            print(KafkaStreams(topology, config).describe({"orders": 6}))
        """
        graph = self._topology._graph  # noqa: SLF001 - kspark's own topology graph
        return describe_application(str(self._topology.describe()), graph, self.config,
                                    partitions)

    def await_termination(self, timeout_s: float | None = None) -> bool:
        """Wait until the query stops (``autostop.at=eol``: input consumed); True if it did.

        Raises :class:`~kspark.errors.StreamsError` if the query failed.
        """
        self._require_started()
        ended = self._life.wait_for((State.NOT_RUNNING, State.ERROR), timeout_s)
        if ended and self._supervisor is not None and self._supervisor.error is not None:
            raise self._supervisor.error
        return ended

    def close(self, timeout_s: float | None = None) -> None:
        """Stop the query (after the running micro-batch) and release resources. A client
        in ERROR stays in ERROR, as in Kafka Streams."""
        failed = self._life.state in (State.PENDING_ERROR, State.ERROR)
        self._life.to(State.PENDING_SHUTDOWN)
        try:
            if self._supervisor is not None:
                self._supervisor.stop()
            if self._app is not None:
                self._app.stop(timeout_s)
        finally:
            self._stop_endpoint()
            self._close_queries()
            if not failed:
                self._life.to(State.NOT_RUNNING)

    def state(self) -> State:
        """The client's state, as Kafka Streams' ``KafkaStreams.State``: CREATED,
        REBALANCING, RUNNING, PENDING_SHUTDOWN, NOT_RUNNING, PENDING_ERROR or ERROR (each
        equal to its name; see docs/operations.md for what each means on Spark)."""
        return self._life.state

    def progress(self) -> dict[str, int]:
        """One shape in both execution modes (``PROGRESS_KEYS``): ``batches`` (micro-batches done,
        or finished real-time epochs), ``position`` (the sum of the next offsets of
        every input partition), ``lag`` (input records not processed yet),
        ``records_in`` (read from Kafka: in real-time mode also the records read back
        from repartition topics, which micro-batch mode shuffles through Spark instead),
        ``records_out`` (written to user and repartition topics), ``changelog_records``
        (written to changelogs), ``commits`` (task commits), ``restored_records`` and
        ``task_restores`` (what restoring state cost: on a cluster, mostly tasks that
        moved to another executor), ``task_moves`` (task openings elsewhere than the
        task's last commit: another host or ``state.dir``) and ``tasks_kept`` (openings
        that reused the task the worker kept). Micro-batch mode counts this process's
        committed task batches; real-time mode is live, from the stream threads' reports
        (a lost epoch counts what its threads last reported as committed). With Spark
        sinks (``KStream.to_spark``, ``foreach_batch``), ``sink_batches`` and ``sink_rows``
        count their micro-batches and the rows they wrote (0 without)."""
        self._require_started()
        return self._app.progress()

    def metrics(self) -> Metrics:
        """``{MetricName: Metric}``, as Java's ``KafkaStreams.metrics()``, in both execution
        modes: Kafka Streams' task, processor-node and topic metrics with Java's names,
        groups and tags (``stream-task-metrics``: ``dropped-records-total``,
        ``process-rate``, ``record-lateness-avg``, ...), summed over the executors;
        ``stream-thread-metrics`` per real-time stream thread (``<app>-StreamThread-<n>``)
        or for the driver's view of the micro-batches (``<app>-micro-batch``); the input lag
        (``records-lag`` per partition) and the async processors'
        (``kspark-async-processor-metrics``). ``metrics().total(name)`` sums a metric over
        its tags; ``metrics().value(name, task_id="0_1")`` reads one. Counts are of
        committed work. And the client's own (``stream-metrics``: ``state``,
        ``alive-stream-threads``, ``application-id``, ...). The list, and what each means on
        Spark: docs/operations.md."""
        self._require_started()
        return self._all_metrics()

    def _all_metrics(self) -> Metrics:
        """The run's metrics and the client's (an empty mapping before a run exists)."""
        if self._app is None:
            return Metrics()
        out = self._app.metrics()
        threads = {n.tags.get("thread-id") for n in out if n.group == "stream-thread-metrics"}
        if self._description is None:
            self._description = str(self._topology.describe())
        app_id = self.config["application.id"]
        out.update(client_metrics(self.config.get("client.id") or app_id, app_id,
                                  self._life.state.name, threads - {None}, self._description,
                                  __version__))
        return out

    def all_local_store_partition_lags(self) -> dict[str, dict[int, LagInfo]]:
        """``{store: {partition: LagInfo}}`` for every logged store partition the
        application holds, as Java's ``allLocalStorePartitionLags()``: an active task's
        (stores restored, processing) is at its changelog's end, lag 0, as in Java; a
        standby copy's (real-time mode, ``num.standby.replicas``) is where its last update
        left it, for a partition no thread holds active now. The changelogs' ends are read
        from the brokers; positions are the threads' last reports (docs/interactive-queries.md).

        Example (needs a running application, so not run)::

            lag = streams.all_local_store_partition_lags()["counts"][0]
            lag.current_offset_position, lag.end_offset_position, lag.offset_lag
        """
        self._require_started()
        return self._app.store_lags()

    def stop_offsets(self) -> dict[tuple[str, int], int] | None:
        """An incremental batch run's stop offsets (``autostop.at=eol``), ``{(topic,
        partition): offset}``: read back from the application's metadata topic when the run
        resumes, else the input ends at its first start (KIP-95). None when streaming."""
        self._require_started()
        return self._app.stop_offsets

    def batch_finished(self) -> bool:
        """Whether a batch run ended by reaching its stop offsets (its finished marker is
        written); False while running, when streaming, or after ``close()`` stopped it early."""
        return self._app is not None and self._app.finished

    def metrics_http_port(self) -> int | None:
        """The port the metrics endpoint listens on (``metrics.http.port``; 0 asks for a
        free one), or None when it is off."""
        return None if self._endpoint is None else self._endpoint.port

    def _start_endpoint(self) -> None:
        """``metrics.http.port``: /metrics, /health/live, /health/ready on the driver."""
        if self.config["metrics.http.port"] is None:
            return
        from kspark._client.metrics_endpoint import MetricsEndpoint

        self._endpoint = MetricsEndpoint(
            self._all_metrics,
            live=lambda: self._life.state not in (State.PENDING_ERROR, State.ERROR),
            ready=lambda: self._life.state is State.RUNNING,
            host=self.config["metrics.http.host"], port=int(self.config["metrics.http.port"]))
        self._endpoint.start()

    def _stop_endpoint(self) -> None:
        if self._endpoint is not None:
            self._endpoint.stop()

    def _require_created(self, what: str) -> None:
        if self._life.state is not State.CREATED:
            raise StreamsError(f"{what}() only before start(); the client is "
                               f"{self._life.state.name}")

    def _require_started(self) -> None:
        if self._app is None:
            raise StreamsError("the application has not been started; call start() first")

    def __enter__(self) -> "KafkaStreams":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def spark_session(config: Mapping[str, Any] | StreamsConfig | None = None) -> Any:
    """The SparkSession kspark uses, built from the ``spark.*`` keys of ``config``.

    ``spark.master`` defaults to ``local[*]``; ``PYSPARK_PYTHON`` is set to this interpreter.
    ``config`` may be a StreamsConfig, or a plain dict of ``spark.*`` keys (and
    ``execution.mode``). When ``config``'s ``execution.mode`` is ``micro_batch``, kspark's
    Kafka data source is registered with the session in a background thread (Spark starts
    a Python process for it), which ``KafkaStreams.start()`` waits for; real-time mode reads
    no data source, so it is left to the first use (a Spark sink, ``read_topic``).
    """
    from kspark._spark.session import build_session

    given = dict(config or {})
    spark_keys = {k: v for k, v in given.items() if k.startswith("spark.")}
    mode = given.get(MODE, CONFIG_KEYS[MODE].default)
    return build_session(spark_keys, prepare_source=mode == MICRO_BATCH)
