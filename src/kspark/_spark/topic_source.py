"""A kspark topic as a PySpark Python data source, its records decoded into typed columns.

The reader of :func:`kspark.spark.read_topic` and of every Spark sink: read_committed,
one Spark partition per Kafka partition, the key and value read with kspark's serdes into
the columns of ``_interop/columns.py``. A record the serdes or the columns reject goes to
the dead-letter topic (``errors.dead.letter.queue.topic.name``, with Kafka Streams'
dead-letter headers) or, without one, fails the read naming its topic, partition and
offset. A sink's reader also deletes from its topic what a committed micro-batch wrote
(``commit``), as Kafka Streams purges a repartition topic.

The serdes and client settings travel as class attributes of a subclass registered per
read (:func:`topic_source_for`), never as options (they would show in ``explain()``).

Example (needs Spark, so not run)::

    fmt = topic_source_for(spark, TopicRead("counts", rows, settings))
    spark.read.format(fmt).load()
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.pandas.types import from_arrow_schema

from kspark._interop.rows import TopicRows
from kspark._kafka.settings import ClientSettings
from kspark._plan.options import Offsets, SourceOptions
from kspark._spark.source import KafkaStreamReader, TaskInput
from kspark.errors import SparkSinkError
from kspark._error_handlers import ErrorHandlerContext, dead_letter_record
from kspark._kafka.factory import new_producer

__all__ = ["TopicRead", "topic_source_for"]


@dataclass(frozen=True)
class TopicRead:
    """What one read of a kspark topic does: ``topic`` with ``rows`` (its serdes) through
    clients made with ``settings``; ``dead_letter_topic`` (None: a rejected record fails
    the read); ``purge``: delete what committed micro-batches read (a sink's own topic);
    ``what``: how errors name the reader (``Spark sink 'x'``)."""

    topic: str
    rows: TopicRows
    settings: ClientSettings
    dead_letter_topic: str | None = None
    purge: bool = False
    what: str = "read_topic"
    max_offsets: int = 200_000
    timeout_ms: int = 30_000
    read_timeout_ms: int = 60_000

    def options(self) -> SourceOptions:
        return SourceOptions((self.topic,), self.settings.bootstrap, self.max_offsets,
                             self.timeout_ms, self.read_timeout_ms,
                             resets={self.topic: "earliest"})

    def decode(self, messages: list, producer: list) -> pa.RecordBatch:
        """The batch of ``messages``; rejected ones to the dead-letter topic (through the
        producer kept in ``producer``, made on first use) or an error."""
        batch, rejected = self.rows.batch(messages)
        if rejected and self.dead_letter_topic is None:
            m, e = rejected[0]
            raise SparkSinkError(
                f"{self.what} cannot read the record at offset {m.offset()} of topic "
                f"{m.topic()!r} partition {m.partition()} ({len(rejected)} such record(s) in "
                f"this read): {type(e).__name__}: {e}. Fix the serdes, or set "
                "errors.dead.letter.queue.topic.name to send such records there") from e
        for m, e in rejected:
            _send_dead_letter(self, producer, m, e)
        return batch

    def read_range(self, topic: str, p: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        from kspark._kafka.range_reader import read_range

        producer: list = []
        for msgs in read_range(self.settings, topic, p, start, end, self.read_timeout_ms):
            yield self.decode(msgs, producer)
        if producer:  # the dead letters are written before the read is done
            producer[0].flush(self.timeout_ms / 1000)


def _send_dead_letter(read: TopicRead, producer: list, m: Any, error: Exception) -> None:
    if not producer:
        producer.append(new_producer(read.settings.conf("producer", "dead-letters"),
                                     "dead-letters"))
    ctx = ErrorHandlerContext(m.topic(), m.partition(), m.offset(), tuple(m.headers() or ()),
                              read.what, "", m.timestamp()[1], m.key(), m.value())
    r = dead_letter_record(read.dead_letter_topic or "", ctx, error)
    producer[0].produce(r.topic, r.value, r.key, headers=list(r.headers),
                        timestamp=r.timestamp or 0)
    producer[0].poll(0)


class TopicDataSource(DataSource):
    """``spark.read[Stream].format(<registered name>)``: the class attribute ``read``
    (a :class:`TopicRead`) says what; it reaches the Python workers with the class."""

    read: TopicRead | None = None

    @classmethod
    def name(cls) -> str:
        return "kspark_topic"

    def schema(self) -> Any:
        assert self.read is not None
        return from_arrow_schema(self.read.rows.schema)

    def reader(self, schema: Any) -> DataSourceReader:
        assert self.read is not None
        return TopicBatchReader(self.read)

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        assert self.read is not None
        return TopicStreamReader(self.read)


def topic_source_for(spark: Any, read: TopicRead) -> str:
    """Register a data source for ``read`` with ``spark``; its format name."""
    name = f"kspark_topic_{uuid.uuid4().hex[:12]}"
    cls = type(f"TopicDataSource_{name[-12:]}", (TopicDataSource,),
               {"read": read, "name": classmethod(lambda c: name), "__module__": __name__})
    spark.dataSource.register(cls)
    return name


class TopicBatchReader(DataSourceReader):
    """A batch read: each partition from its first offset to its read_committed end."""

    def __init__(self, read: TopicRead):
        from kspark._kafka.admin import Admin

        self.read_ = read
        admin = Admin(read.settings, read.timeout_ms)
        counts = admin.check_topics([read.topic], [])
        tps = [(read.topic, p) for p in range(counts[read.topic])]
        starts, ends = admin.end_offsets(tps, earliest=True), admin.end_offsets(tps)
        self.ranges = [(p, starts[(t, p)], ends[(t, p)]) for t, p in tps]

    def partitions(self) -> list[TaskInput]:
        return [TaskInput(p, [(self.read_.topic, p, s, e)]) for p, s, e in self.ranges]

    def read(self, partition: TaskInput) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        for topic, p, s, e in partition.ranges:
            yield from self.read_.read_range(topic, p, s, e)


class TopicStreamReader(KafkaStreamReader):
    """A streaming read (offsets as the topology's source: ``{topic: {partition: next}}``)."""

    def __init__(self, read: TopicRead):
        super().__init__(read.options(), read.settings)
        self.read_ = read

    def read(self, partition: TaskInput) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        for topic, p, s, e in partition.ranges:
            yield from self.read_.read_range(topic, p, s, e)

    def commit(self, end: Offsets) -> None:
        """A micro-batch is committed: a sink's topic drops what it read (Kafka Streams'
        purge of a repartition topic after a commit)."""
        if self.read_.purge:
            before = {(t, int(p)): int(o) for t, parts in end.items() for p, o in parts.items()
                      if int(o) > 0}
            if before:
                self._admin().delete_records(before)
