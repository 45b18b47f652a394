"""TopologyTestDriver: run a topology in-process on the real engine, without Kafka or Spark."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from kspark._engine.api import Headers
from kspark._engine.collector import MemoryCollector
from kspark._engine.nodes import RawRecord
from kspark._engine.partition_group import PartitionGroup
from kspark._engine.async_.metrics import async_metrics, summarize_metrics
from kspark._engine.async_.runtime import InlineRuntime
from kspark._engine.metrics.names import Metrics
from kspark._engine.metrics.view import MetricsView, async_processor_metrics
from kspark._graph.instantiate import build_global_task, build_task
from kspark._graph.naming import check_explicit_naming
from kspark.config import StreamsConfig
from kspark.errors import TopologyError
from kspark.processor.topology import Topology
from kspark.testing.interactive import processed_position, query_stores, read_only_store
from kspark.testing.records import to_millis, to_timestamp
from kspark.testing.topics import TestInputTopic, TestOutputTopic
from kspark._graph.instantiate import resolve_serde
from kspark._engine.state.timestamped import ValueAndTimestamp, ValueAndTimestampSerde
from kspark._engine.state.kv import KeyValueStore
from kspark._engine.state.session import SessionStore
from kspark._engine.state.versioned import VersionedKeyValueStore
from kspark._engine.state.window import WindowStore

__all__ = ["TopologyTestDriver", "store_kind"]

_GETTERS = {"key-value": "key_value", "versioned key-value": "versioned_key_value",
            "window": "window", "session": "session"}  # store kind: its getter's name
_DRIVER_DEFAULTS = {"application.id": "topology-test-driver", "bootstrap.servers": "dummy:1234"}


class TopologyTestDriver:
    """Drives a topology's real engine task in-process; records are processed synchronously.

    A piped record is processed at once. What the topology writes to topics it reads
    (repartition topics, ``through()``) is read back one record at a time from the partition
    whose head has the lowest timestamp, as Java's TopologyTestDriver does.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.Integer()) \\
        ...  .filter(lambda k, v: v > 1).to("out")
        >>> with TopologyTestDriver(b.build()) as d:
        ...     i = d.create_input_topic("in", Serdes.String(), Serdes.Integer())
        ...     o = d.create_output_topic("out", Serdes.String(), Serdes.Integer())
        ...     i.pipe_input("a", 1); i.pipe_input("b", 2)
        ...     o.read_key_values_to_list()
        [('b', 2)]
    """

    __test__ = False

    def __init__(self, topology: Topology, config: Mapping[str, Any] | None = None,
                 initial_wall_clock_time: Any = 0, *,
                 initial_wall_clock_time_ms: int | None = None):
        props = dict(_DRIVER_DEFAULTS)
        self._tmp_state = None
        if "state.dir" not in (config or {}):
            self._tmp_state = tempfile.mkdtemp(prefix="kspark-driver-")
            props["state.dir"] = self._tmp_state
        props.update(config or {})
        self.config = StreamsConfig(props)
        # As Java's driver reads Topology's internal builder through package access
        self._graph = topology._graph  # noqa: SLF001 - the driver runs the topology's own graph
        check_explicit_naming(self._graph, self.config)
        self._wall_clock_ms = to_timestamp(  # ms or a datetime (Java's Instant)
            initial_wall_clock_time if initial_wall_clock_time_ms is None
            else initial_wall_clock_time_ms, "initial_wall_clock_time") or 0
        self._collector = MemoryCollector()
        self._metrics_view = MetricsView()
        # Global stores are updated at once when their topic is piped into, as in Java.
        self._global = build_global_task(self._graph, self.config)
        # Async steps run their calls only when completed: at each commit, in issue order, or
        # in any order through complete_async() (deterministic tests of KIP-311 steps).
        self._async = InlineRuntime(clock=lambda: self._wall_clock_ms)
        self.auto_complete_async = True
        # A commit after every record: nothing reads the stores' files while the driver
        # runs, so a commit does not force RocksDB to write them; close() does (docs/testing.md)
        self._task = build_task(self._graph, "0_0", self.config, self._collector,
                                clock=lambda: self._wall_clock_ms,
                                global_stores=self._global.read_only(), async_runtime=self._async,
                                durable_commits=False)
        self._offsets: dict[str, int] = {}
        # One queue per input partition, the task's next record taken from the one with the
        # lowest head timestamp (Java's PartitionGroup): a piped record is processed at once;
        # records read back from repartition topics (and through()) interleave by timestamp.
        self._queues = PartitionGroup()
        self._read_topics = set(self._graph.source_topics(self.config["application.id"])) | \
            set(self._global.topics)  # written records on these are read back
        self._looped = 0  # records written to topics the topology also reads, fed back so far
        self._by_topic: dict[str, list] = {}  # records written, by topic (see _records_for)
        self._indexed = 0  # how many of the collector's records _by_topic holds

    def create_input_topic(self, name: str, key_serde: Any, value_serde: Any,
                           start_timestamp: Any = 0, auto_advance: Any = 0, *,
                           start_timestamp_ms: int | None = None,
                           auto_advance_ms: int | None = None) -> TestInputTopic:
        """An input topic to pipe records into; ``name`` must be a source topic.

        As Java's ``createInputTopic(name, keySerde, valueSerde, startTimestamp,
        autoAdvance)``: a record piped without a timestamp gets the topic's current time
        (``start_timestamp`` at first: ms or a ``datetime``; 0 by default, where Java's
        takes the wall clock's now), which then moves on by ``auto_advance`` (ms or a
        ``timedelta``). ``start_timestamp_ms`` and ``auto_advance_ms`` are the old names."""
        if name not in self._graph.source_topics(self.config["application.id"]) + \
                self._graph.global_topics():
            raise TopologyError(f"topic {name!r} is not a source topic of the topology; "
                                f"its source topics are {self._graph.user_source_topics()}")
        start = start_timestamp if start_timestamp_ms is None else start_timestamp_ms
        advance = auto_advance if auto_advance_ms is None else auto_advance_ms
        return TestInputTopic(self._pipe, name, key_serde, value_serde, start, advance)

    def create_output_topic(self, name: str, key_serde: Any,
                            value_serde: Any) -> TestOutputTopic:
        """An output topic to read what the topology wrote to ``name``."""
        return TestOutputTopic(self._records_for, name, key_serde, value_serde)

    def advance_wall_clock_time(self, advance: Any) -> None:
        """Move the mocked wall clock forward by ``advance`` (ms or a ``timedelta``): async
        retries whose backoff has passed run, then wall-clock punctuations and delayed
        records that are due fire."""
        self._wall_clock_ms += to_millis(advance, "advance")
        if self._async.run_due():
            self._retire_async()
        self._task.maybe_punctuate_wall_clock()
        self._task.flush(complete_async=self.auto_complete_async)
        self._process_queued()

    def pending_async(self) -> int:
        """How many async calls (KIP-311 steps) are issued and not yet completed."""
        return len(self._async.pending)

    def complete_async(self, order: list[int] | None = None) -> None:
        """Run pending async calls now, ``order`` giving their positions among the pending
        ones (oldest first; default: all, oldest first); results then go downstream in input
        order. With ``auto_complete_async = False`` calls complete only here, so a test
        decides the completion order (each commit completes them all otherwise). A call
        that fails with retries left stays pending until ``advance_wall_clock_time`` passes
        its backoff (a fake clock: nothing sleeps)."""
        pending = list(self._async.pending)
        for i in (range(len(pending)) if order is None else order):
            self._async.complete(pending[i], wait=False)
        self._retire_async()
        self._task.flush(complete_async=self.auto_complete_async)
        self._process_queued()

    def metrics(self) -> Metrics:
        """``{MetricName: Metric}`` as Java's ``TopologyTestDriver.metrics()``: the task's,
        its nodes' and its topics' metrics with Kafka Streams' names, groups and tags
        (``thread-id`` is ``main``, as Java's), recorded as ``metrics.recording.level``
        says, and each async processor's figures (``kspark-async-processor-metrics``: on
        the fake clock, ``latency-avg`` is the backoffs waited). See docs/operations.md.

        Example:
            >>> from kspark import Serdes, StreamsBuilder
            >>> b = StreamsBuilder()
            >>> s = Serdes.String()
            >>> b.stream("in", key_serde=s, value_serde=s).to("out")
            >>> with TopologyTestDriver(b.build()) as d:
            ...     d.create_input_topic("in", s, s).pipe_input("k", "v")
            ...     m = d.metrics()
            >>> m.total("records-consumed-total"), m.total("records-produced-total")
            (1, 1)
        """
        self._metrics_view.add(self._task.take_stats())
        out = Metrics(self._metrics_view.metrics(lambda task: "main"))
        out.update(async_processor_metrics(summarize_metrics(async_metrics(self._task))))
        return out

    def _retire_async(self) -> None:
        for node in self._task.async_nodes:
            node.processor.retire_finished()

    def scheduled_records(self, store_name: str) -> list[tuple[int, Any]]:
        """The records waiting in delayed-records store ``store_name`` (``KStream.delay``'s
        is ``<name>-store``), as (due time on the wall clock, Record), in due order."""
        return self.get_state_store(store_name).scheduled()

    def producer_records(self) -> list:
        """Every serialized record the topology has written, in order, for any topic."""
        return list(self._collector.records)

    def _pipe(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
              headers: Headers) -> None:
        """Java's pipeRecord: the record is queued on its topic's partition, then the task
        processes everything queued (the record, then what it wrote back to its inputs)."""
        self._enqueue(topic, key, value, timestamp, headers)
        self._process_queued()

    def _enqueue(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int,
                 headers: Headers) -> None:
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        raw = RawRecord(topic, 0, offset, timestamp, key, value, headers)
        if topic in self._global.topics:  # a global store is updated at once, as in Java
            self._global.update(raw)
        else:
            self._queues.add([raw])

    def _process_queued(self) -> None:
        """Java's completeAllProcessableWork: one record at a time, lowest head timestamp
        first; a commit after each (cached tables emit, maybe into looped-back topics), then
        the records written to topics the topology reads are queued too."""
        self._read_back()
        while (raw := self._queues.next_record()) is not None:
            self._task.process(raw)
            self._task.flush(complete_async=self.auto_complete_async)
            self._read_back()

    def _read_back(self) -> None:
        """Java's captureOutputsAndReEnqueueInternalResults: records written since last time
        to topics the topology reads (repartition topics, through()) are queued on their
        partition in write order; a global topic's update its store at once."""
        produced = self._collector.records
        new = [r for r in produced[self._looped:] if r.topic in self._read_topics]
        self._looped = len(produced)
        for r in new:
            self._enqueue(r.topic, r.key, r.value, r.timestamp, r.headers)

    def _records_for(self, topic: str) -> list:
        """What the topology wrote to ``topic``, in order: indexed by topic as it comes, so
        reading N outputs one at a time does not scan everything written N times."""
        produced = self._collector.records
        if len(produced) < self._indexed:  # a collector emptied: index it again
            self._by_topic, self._indexed = {}, 0
        for r in produced[self._indexed:]:
            self._by_topic.setdefault(r.topic, []).append(r)
        self._indexed = len(produced)
        return self._by_topic.get(topic, [])

    def get_state_store(self, name: str) -> Any:
        """The task's state store ``name``, or a global store (to read or seed it in a test)."""
        if name in self._global.stores:
            return self._global.stores[name]
        if name not in self._task.stores:
            raise TopologyError(f"the topology has no state store named {name!r}; it has "
                                f"{sorted(self._task.stores)}")
        return self._task.stores[name]

    def get_all_state_stores(self) -> dict[str, Any]:
        """Every state store by name, the task's and the global ones."""
        return {**self._task.stores, **self._global.stores}

    def _typed_store(self, name: str, kind: str, timestamped: bool | None = None) -> Any:
        """Store ``name`` if it is of ``kind`` (see ``store_kind``). A store keeping values
        with their timestamps (the DSL's) is read with plain values unless ``timestamped``;
        ``timestamped=True`` refuses a store that keeps none."""
        store = self.get_state_store(name)
        actual, stamped = store_kind(store)
        if actual != kind or (timestamped and not stamped):
            what = f"{actual} store{' with timestamps' if stamped else ''}"
            getter = (f"get_{'timestamped_' if stamped else ''}{_GETTERS[actual]}_store"
                      if actual in _GETTERS else "get_state_store")
            raise TopologyError(f"state store {name!r} is a {what}, not a "
                                f"{'timestamped ' if timestamped else ''}{kind} store: read "
                                f"it with driver.{getter}({name!r})")
        if stamped and not timestamped:
            view = copy.copy(store)  # shares the bytes below; only the value serde differs
            view.value_serde = _PlainValues(store.value_serde)
            return view
        return store

    def get_key_value_store(self, name: str) -> Any:
        """The key-value store ``name``; a DSL (timestamped) store's values are read
        without their timestamps, as Java's facade reads them."""
        return self._typed_store(name, "key-value")

    def get_timestamped_key_value_store(self, name: str) -> Any:
        """The timestamped key-value store ``name`` (a DSL store): ValueAndTimestamp values."""
        return self._typed_store(name, "key-value", timestamped=True)

    def get_versioned_key_value_store(self, name: str) -> Any:
        """The versioned key-value store ``name``: ``get(key)`` and ``get(key, as_of)``."""
        return self._typed_store(name, "versioned key-value")

    def get_window_store(self, name: str) -> Any:
        """The window store ``name`` (a DSL store's values without their timestamps)."""
        return self._typed_store(name, "window")

    def get_timestamped_window_store(self, name: str) -> Any:
        """The timestamped window store ``name``: ValueAndTimestamp values."""
        return self._typed_store(name, "window", timestamped=True)

    def get_session_store(self, name: str) -> Any:
        """The session store ``name``."""
        return self._typed_store(name, "session")

    def query(self, request: Any) -> Any:
        """The StateQueryResult of ``request`` (IQv2, ``kspark.query``): the driver's one
        task answers as partition 0, at the position of the records it has processed (each
        input topic's last offset); see ``kspark.testing.interactive``."""
        return query_stores(request, self._task.stores, self._global.stores,
                            self._position(False))

    def store(self, params: Any) -> Any:
        """The read-only store (IQv1) ``params`` (StoreQueryParameters) names, as Java's
        ``KafkaStreams.store``: an UnknownStateStoreError for a name the topology lacks,
        an InvalidStateStoreError for a store of another type."""
        return read_only_store(params, self._task.stores, self._global.stores, self._position)

    def _position(self, global_store: bool) -> Any:
        topics = set(self._global.topics)
        return processed_position(self._offsets, topics if global_store else None,
                                  frozenset() if global_store else topics)

    def get_spark_sink_rows(self, name: str) -> list[dict[str, Any]]:
        """The rows Spark sink ``name`` (``KStream.to_spark`` or ``foreach_batch``) gets, in
        order, as dicts of its columns (``key``, ``value``, ``topic``, ``partition``,
        ``offset``, ``timestamp``, ``headers``; ``window_start``/``window_end`` for windowed
        keys), decoded as the sink decodes them. A record the sink could not decode raises.

        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> b.stream("in", key_serde=Serdes.String(),
        ...          value_serde=Serdes.Long()).to_spark("parquet", path="/tmp/x", name="s")
        >>> with TopologyTestDriver(b.build()) as d:
        ...     d.create_input_topic("in", Serdes.String(), Serdes.Long()).pipe_input("a", 1)
        ...     [(r["key"], r["value"]) for r in d.get_spark_sink_rows("s")]
        [('a', 1)]
        """
        from kspark._interop.rows import TopicRows, Written

        spec = self._graph.nodes.get(name)
        if name not in self._graph.spark_sinks or spec is None:
            raise TopologyError(f"no Spark sink named {name!r}; the topology's Spark sinks "
                                f"are {sorted(self._graph.spark_sinks)}")
        rows = TopicRows(resolve_serde(spec.key_serde, self.config, "key", name),
                         resolve_serde(spec.value_serde, self.config, "value", name))
        topic = f"{self.config['application.id']}-{spec.topic}"
        written = [Written(r, i) for i, r in enumerate(self._records_for(topic))]
        batch, rejected = rows.batch(written)
        if rejected:
            m, e = rejected[0]
            raise TopologyError(f"Spark sink {name!r} cannot read the record at offset "
                                f"{m.offset()} of its topic: {e}") from e
        return batch.to_pylist()

    def close(self) -> None:
        """Close the task's processors and stores (and remove the driver's own state dir)."""
        self._task.close()
        self._global.close()
        if self._tmp_state:
            shutil.rmtree(self._tmp_state, ignore_errors=True)

    def __enter__(self) -> "TopologyTestDriver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _PlainValues:
    """Reads a timestamped store's values without their timestamps."""

    def __init__(self, timestamped: Any):
        self.timestamped = timestamped

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        vt = self.timestamped.deserialize(topic, data)
        return None if vt is None else vt.value

    def serialize(self, topic: str, data: Any) -> bytes | None:
        return self.timestamped.serialize(topic,
                                          None if data is None else ValueAndTimestamp(data, 0))


def store_kind(store: Any) -> tuple[str, bool]:
    """(kind, whether its values carry timestamps) of an engine store: kind is
    ``key-value``, ``versioned key-value``, ``window``, ``session`` or its class name."""
    kinds = ((VersionedKeyValueStore, "versioned key-value"), (WindowStore, "window"),
             (SessionStore, "session"), (KeyValueStore, "key-value"))
    kind = next((k for cls, k in kinds if isinstance(store, cls)), type(store).__name__)
    return kind, isinstance(getattr(store, "value_serde", None), ValueAndTimestampSerde)
