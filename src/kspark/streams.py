"""KafkaStreams: run a topology as a Spark Structured Streaming query.

pyspark is imported only when an application starts (through :mod:`kspark._spark`), so
building topologies and testing them with the TopologyTestDriver never loads Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._host.runner import Runner
from kspark.config import StreamsConfig
from kspark.errors import StreamsError
from kspark.processor.topology import Topology

__all__ = ["KafkaStreams", "spark_session"]


class KafkaStreams:
    """A running kspark application.

    Example (needs a broker and Spark, so not run as a doctest)::

        streams = KafkaStreams(builder.build(), {"application.id": "app",
                                                  "bootstrap.servers": "localhost:9092",
                                                  "autostop.at": "eol"})
        streams.start()
        streams.await_termination()
        streams.close()
    """

    def __init__(self, topology: Topology, config: Mapping[str, Any] | StreamsConfig,
                 spark: Any = None):
        self.config = config if isinstance(config, StreamsConfig) else StreamsConfig(config)
        self._topology = topology
        self._spark = spark
        self._app: Runner | None = None  # the one protocol of every execution mode
        self._state = "CREATED"

    def start(self) -> None:
        """Check topics and brokers, then start the streaming query (returns at once)."""
        if self._state != "CREATED":
            raise StreamsError(
                f"cannot start a KafkaStreams in state {self._state}; build a new one")
        from kspark._spark.app import SparkApplication

        graph = self._topology._graph  # noqa: SLF001 - kspark's own topology graph
        self._app = SparkApplication(graph, self.config, self._spark)
        self._app.start()
        self._state = "RUNNING"

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
        from kspark._plan.describe import describe_application

        graph = self._topology._graph  # noqa: SLF001 - kspark's own topology graph
        return describe_application(self._topology.describe(), graph, self.config, partitions)

    def await_termination(self, timeout_s: float | None = None) -> bool:
        """Wait until the query stops (``autostop.at=eol``: input consumed); True if it did.

        Raises :class:`~kspark.errors.StreamsError` if the query failed.
        """
        self._require_started()
        done = self._app.await_termination(timeout_s)
        if done:
            self._state = "NOT_RUNNING"
        return done

    def close(self, timeout_s: float | None = None) -> None:
        """Stop the query (after the running micro-batch) and release resources."""
        if self._app is not None:
            self._app.stop(timeout_s)
        self._state = "NOT_RUNNING"

    def state(self) -> str:
        """CREATED, RUNNING or NOT_RUNNING, as Kafka Streams' states."""
        return self._state

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
        (a lost epoch counts what its threads last reported as committed)."""
        self._require_started()
        return self._app.progress()

    def metrics(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{"stream_threads": {...}, "lag": {topic: {partition: n}}, "async": {...}}`` in
        both execution modes. ``async``: each async processor's (KIP-311) ``completed``,
        ``retried``, ``dead_lettered``, ``latency_avg_ms``, ``in_flight_peak`` and
        ``in_flight``. ``stream_threads``: in real-time mode, each thread's
        (``stream-thread-0``, ...) ``records_in``, ``records_out``, ``commits``,
        ``process_rate`` (records/s), ``commit_latency_avg_ms`` and
        ``commit_latency_max_ms``, reported every commit interval (at least every 5 s);
        empty in micro-batch mode, which has no long-running threads."""
        self._require_started()
        return self._app.metrics()

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
    ``config`` may be a StreamsConfig, or a plain dict of ``spark.*`` keys only. kspark's
    Kafka data source is registered with the session in a background thread (Spark starts
    a Python process for it), which ``KafkaStreams.start()`` waits for.
    """
    from kspark._spark.session import build_session

    spark_keys = {k: v for k, v in dict(config or {}).items() if k.startswith("spark.")}
    return build_session(spark_keys)
