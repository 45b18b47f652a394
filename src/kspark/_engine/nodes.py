"""Processor nodes: a source, user or operator processors, and sinks, wired as a DAG."""

from __future__ import annotations

import os
import traceback
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, cast

from kspark._engine.api import Processor, Record
from kspark._engine.operators import InlinedOperator
from kspark._error_handlers import ProducerRecord, SerializationExceptionOrigin
from kspark._engine.metrics.stats import headers_size, topic_overhead
from kspark.errors import (
    KSparkError,
    ProcessorError,
    SerializationError,
    SinkWriteError,
    TransientKafkaError,
    TopologyError,
)
from kspark._engine.context import NodeContext

if TYPE_CHECKING:
    from kspark._engine.task import StreamTask

__all__ = ["RawRecord", "ProcessorNode", "SourceNode", "SinkNode", "deserialize_record"]


class RawRecord(NamedTuple):
    """A record as read from Kafka: serialized key and value plus metadata."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


def deserialize_record(raw: RawRecord, key_serde: Any, value_serde: Any,
                       source: str = "the source") -> tuple[Any, Any]:
    """``raw``'s key and value; a SerializationError names the topic, partition, offset and
    which of KEY or VALUE failed (whatever the serde raised is chained to it).

    Example:
        >>> from kspark import Serdes
        >>> raw = RawRecord("t", 0, 7, 0, b"k", b"\\xff")
        >>> s = Serdes.String()
        >>> deserialize_record(raw, s, s)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        kspark.errors.SerializationError: cannot deserialize the VALUE of the record at topic
        't', partition 0, offset 7 ...
    """
    is_key = True
    try:
        key = key_serde.deserialize(raw.topic, raw.key)
        is_key = False
        return key, value_serde.deserialize(raw.topic, raw.value)
    except TransientKafkaError:  # a schema registry away: replayed, never a skipped record
        raise
    except Exception as e:
        raise _cannot_deserialize(raw, is_key, key_serde if is_key else value_serde, source,
                                  e) from e


def _cannot_deserialize(raw: RawRecord, is_key: bool, serde: Any, source: str,
                        e: Exception) -> SerializationError:
    part, data = ("KEY", raw.key) if is_key else ("VALUE", raw.value)
    return SerializationError(
        f"cannot deserialize the {part} of the record at topic {raw.topic!r}, partition "
        f"{raw.partition}, offset {raw.offset} ({len(data or b'')} bytes) with {source}'s "
        f"{part.lower()} serde {serde!r}: {e}; check {source}'s {part.lower()} serde, or "
        f"set deserialization.exception.handler=log_and_continue to skip such records")


_new_tuple = tuple.__new__  # Record(...) without namedtuple's Python-level __new__
_FAILED = object()  # SinkNode._serialize: the record could not be serialized (handled)


def bytes_identity(serde: Any, method: str) -> bool:
    """Whether ``serde``'s ``method`` (``"serialize"`` or ``"deserialize"``) returns
    ``bytes`` and None unchanged (marked ``bytes_identity``: ``Serdes.ByteArray()``), so the
    per-record path may skip calling it for them.

    >>> from kspark import Serdes
    >>> bytes_identity(Serdes.ByteArray(), "deserialize")
    True
    >>> bytes_identity(Serdes.String(), "serialize")
    False
    """
    return bool(getattr(getattr(type(serde), method, None), "bytes_identity", False))


class ProcessorNode:
    """Runs one processor and forwards what it emits to its children."""

    terminal = False  # no children: Kafka Streams measures its end-to-end latency (INFO)

    def __init__(self, name: str, processor: Processor):
        self.name = name
        self.processor = processor
        self.children: list[ProcessorNode] = []
        self.store_names: set[str] = set()

    def init(self, task: "StreamTask") -> None:
        self.task = task
        self.terminal = not self.children
        self.e2e_key = task.stats.key("e2e", self.name)  # built once, not per record
        self.e2e = task.stats.sampler(self.e2e_key)
        self.processor.init(NodeContext(task, self))
        if isinstance(self.processor, InlinedOperator) and not self.terminal:
            # a built-in stateless operator runs in this node's call (operators.py)
            self.process = self.processor.inline(  # type: ignore[method-assign,assignment]
                self.children, self.failed)

    def process(self, record: Record) -> None:
        try:
            self.processor.process(record)
        except KSparkError:
            raise
        except Exception as e:  # noqa: BLE001 - user code: the processing handler decides
            self.failed(record, e)
            return  # continue: dropped at this node (counted, logged)
        if self.terminal:
            now = self.task.stats.now
            self.e2e((self.task.clock() if now is None else now) - record.timestamp)

    def failed(self, record: Record, error: Exception) -> None:
        """User code raised ``error`` processing ``record`` at this node: the
        processing.exception.handler drops the record (counted, logged) or the task fails
        with a ProcessorError naming the node, the record and the user's line."""
        if not self.task.continue_after(self, record, error):
            raise ProcessorError(_describe_failure(self, error)) from error

    def close(self) -> None:
        self.processor.close()

    def child(self, name: str) -> "ProcessorNode":
        for c in self.children:
            if c.name == name:
                return c
        raise TopologyError(
            f"processor {self.name!r} has no child named {name!r}; "
            f"its children are {[c.name for c in self.children]}"
        )


class SourceNode(ProcessorNode):
    """Deserializes raw records of its topics and forwards them."""

    _bytes_in = False  # both serdes pass bytes through (set by init)
    plain_timestamps = False  # a valid timestamp is the record's own (set by its task)

    def __init__(self, name: str, topics: list[str], key_serde: Any, value_serde: Any,
                 timestamp_extractor: Any = None):
        super().__init__(name, Processor())
        self.topics = topics
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.timestamp_extractor = timestamp_extractor

    def init(self, task: "StreamTask") -> None:
        self.task = task
        self.e2e_key = task.stats.key("e2e", self.name)
        self.e2e = task.stats.sampler(self.e2e_key)
        self._bytes_in = (bytes_identity(self.key_serde, "deserialize")
                          and bytes_identity(self.value_serde, "deserialize"))
        # per topic: its bytes-consumed metric's sampler, and the bytes counted for each of
        # its records besides key, value and headers (``metrics.stats.record_size``)
        self.consumed: dict[str, tuple[Callable[[int], None], int]] = {}
        for topic in self.topics:
            self.consumed_of(topic)

    def consumed_of(self, topic: str) -> tuple[Callable[[int], None], int]:
        """``topic``'s entry of :attr:`consumed`, added if missing."""
        found = self.consumed.get(topic)
        if found is None:
            stats = self.task.stats
            found = self.consumed[topic] = (
                stats.sampler(stats.key("bytes-consumed", f"{self.name}|{topic}")),
                topic_overhead(topic))
        return found

    def deserialize(self, raw: RawRecord) -> Record:
        """The record with key and value deserialized (timestamp as stored); raises
        SerializationError (as :func:`deserialize_record`, inlined: it runs per record)."""
        if self._bytes_in:
            key, value = raw.key, raw.value
            if (key is None or type(key) is bytes) and (value is None or type(value) is bytes):
                return _new_tuple(Record, (key, value, raw.timestamp, raw.headers))
        topic = raw.topic
        is_key = True
        try:
            key = self.key_serde.deserialize(topic, raw.key)
            is_key = False
            value = self.value_serde.deserialize(topic, raw.value)
        except TransientKafkaError:  # a schema registry away: replayed, never skipped
            raise
        except Exception as e:
            raise _cannot_deserialize(raw, is_key, self.key_serde if is_key else
                                      self.value_serde, "the source", e) from e
        return _new_tuple(Record, (key, value, raw.timestamp, raw.headers))

    def process(self, record: Record) -> None:
        for child in self.children:
            child.process(record)


class SinkNode(ProcessorNode):
    """Serializes records and hands them to the task's record collector."""

    _bytes_out = False  # both serdes pass bytes through (set by init)

    def __init__(self, name: str, topic: str | Callable[..., str], key_serde: Any,
                 value_serde: Any, partitioner: Callable[..., int | None] | None = None):
        super().__init__(name, Processor())
        self.topic = topic
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.partitioner = partitioner

    def init(self, task: "StreamTask") -> None:
        self.task = task
        self.e2e_key = task.stats.key("e2e", self.name)
        self.e2e = task.stats.sampler(self.e2e_key)
        # per topic: as SourceNode.consumed
        self._produced: dict[str, tuple[Callable[[int], None], int]] = {}
        self._bytes_out = (bytes_identity(self.key_serde, "serialize")
                           and bytes_identity(self.value_serde, "serialize"))

    def process(self, record: Record) -> None:
        task = self.task
        topic = self.topic
        if type(topic) is not str:
            topic = cast(Callable[..., str], topic)(record.key, record.value,
                                                   task.record_metadata)
        key, value = record.key, record.value
        if not (self._bytes_out and (key is None or type(key) is bytes)
                and (value is None or type(value) is bytes)):
            key, value = self._serialize(topic, record)
            if key is _FAILED:
                return
        partition = None if self.partitioner is None else self._partition(topic, record)
        headers, ts = record.headers, record.timestamp
        try:
            task.collector.send(topic, key, value, ts, headers, partition)
        except SinkWriteError as e:  # refused at once (say, too large): the handler decides
            if e.fatal:
                raise
            # its class kept: a retriable one stays so (the handler may answer RETRY)
            named = type(e)(f"sink {self.name!r} in task {task.task_id}: {e}")
            if not task.write_failed(self.name, named, ProducerRecord(
                    topic, key, value, headers, ts, partition)):
                return  # dropped; True: written after all, on a retry
        produced = self._produced.get(topic) or self._produced_to(topic)
        produced[0](produced[1] + len(key or b"") + len(value or b"")
                    + (headers_size(headers) if headers else 0))
        now = task.stats.now
        self.e2e((task.clock() if now is None else now) - ts)

    def _produced_to(self, topic: str) -> tuple[Callable[[int], None], int]:
        """``topic``'s bytes-produced sampler and per-record overhead, made once."""
        stats = self.task.stats
        found = self._produced[topic] = (
            stats.sampler(stats.key("bytes-produced", f"{self.name}|{topic}")),
            topic_overhead(topic))
        return found

    def _serialize(self, topic: str, record: Record) -> tuple[Any, Any]:
        """The record's key and value serialized for ``topic``; ``(_FAILED, None)`` when a
        serde failed and the production exception handler dropped the record."""
        origin = SerializationExceptionOrigin.KEY
        try:
            key = self.key_serde.serialize(topic, record.key)
            origin = SerializationExceptionOrigin.VALUE
            return key, self.value_serde.serialize(topic, record.value)
        except TransientKafkaError:  # a schema registry away: replayed, never skipped
            raise
        except Exception as e:  # noqa: BLE001 - serdes are user code: any error is theirs
            error = SerializationError(
                f"sink {self.name!r} cannot serialize a record for topic {topic!r} in task "
                f"{self.task.task_id} with key serde {self.key_serde!r} and value serde "
                f"{self.value_serde!r}: {e}")
            error.__cause__ = e
            self.task.write_failed(self.name, error, ProducerRecord(
                topic, record.key, record.value, record.headers, record.timestamp), origin)
            return _FAILED, None

    def _partition(self, topic: str, record: Record) -> int | None:
        """The user partitioner's choice for ``record`` (None: Kafka's default), checked."""
        n = self.task.partition_counts.get(topic, 1)
        partition = cast(Callable[..., int | None], self.partitioner)(
            topic, record.key, record.value, n)
        if partition is not None and (type(partition) is not int or not 0 <= partition < n):
            if not isinstance(partition, int) or isinstance(partition, bool):
                raise TopologyError(
                    f"the partitioner of sink {self.name!r} returned {partition!r} for "
                    f"topic {topic!r}: a partitioner returns one partition number (or None "
                    "for Kafka's default); multicast to several partitions (Java's set of "
                    "partitions) is not supported")
            raise TopologyError(
                f"the partitioner of sink {self.name!r} chose partition {partition} of topic "
                f"{topic!r}, which has {n} partition(s)")
        return partition


_KSPARK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _describe_failure(node: ProcessorNode, error: BaseException) -> str:
    """``task 0_1, processor 'X': TypeError: ... (record: topic t, partition p, offset o;
    raised at file.py:12 in fn)``, naming the innermost frame outside kspark."""
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not os.path.abspath(frame.filename).startswith(_KSPARK_DIR):
            where = f"; raised at {frame.filename}:{frame.lineno} in {frame.name}"
            break
    task = getattr(node, "task", None)
    meta = task.record_metadata if task is not None else None
    record = "" if meta is None else (
        f"record: topic {meta.topic!r}, partition {meta.partition}, offset {meta.offset}")
    context = f" ({record}{where})" if record or where else ""
    task_id = task.task_id if task is not None else "?"
    return (f"task {task_id}, processor {node.name!r}: {type(error).__name__}: {error}"
            f"{context.replace('(; ', '(')}")
