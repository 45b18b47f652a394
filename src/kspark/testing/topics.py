"""TestInputTopic and TestOutputTopic: Java's, in Python's case.

Example:
    >>> from kspark import Serdes, StreamsBuilder
    >>> from kspark.testing import TopologyTestDriver
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    >>> with TopologyTestDriver(b.build()) as d:
    ...     i = d.create_input_topic("in", Serdes.String(), Serdes.String())
    ...     o = d.create_output_topic("out", Serdes.String(), Serdes.String())
    ...     i.pipe_input("only a value"); i.pipe_input("k", "v", 5)
    ...     o.read_key_values_to_list()
    [(None, 'only a value'), ('k', 'v')]
"""

from __future__ import annotations

from kspark.errors import KSparkError

import datetime
from collections.abc import Callable, Iterable
from typing import Any

from kspark._engine.api import Headers
from kspark.testing.records import (
    UNSET,
    NoSuchElementError,
    TestRecord,
    key_value,
    key_value_of,
    to_millis,
    to_timestamp,
)

__all__ = ["TestInputTopic", "TestOutputTopic"]


class TestInputTopic:
    """Pipes records into one source topic of a driver (made by its ``create_input_topic``).

    A record piped without a timestamp gets the topic's current time, which then moves on by
    the topic's auto-advance (as Java's).
    """

    __test__ = False

    def __init__(self, pipe: Callable[[str, bytes | None, bytes | None, int, Headers], None],
                 name: str, key_serde: Any, value_serde: Any, start_timestamp: Any = 0,
                 auto_advance: Any = 0):
        self._pipe, self.name = pipe, name  # pipe: the driver's, as Java's pipeRecord
        self._ks, self._vs = key_serde, value_serde
        self._next_ts = to_timestamp(start_timestamp, "start_timestamp") or 0
        self._advance = to_millis(auto_advance, "auto_advance")

    def advance_time(self, advance: Any) -> None:
        """Move the topic's current time (given to records piped without a timestamp)
        forward by ``advance``: ms or a ``timedelta``, not negative."""
        self._next_ts += to_millis(advance, "advance")

    def pipe_input(self, *args: Any, key: Any = UNSET, value: Any = UNSET,
                   timestamp: Any = None, timestamp_ms: Any = None,
                   headers: Any = None) -> None:
        """Pipe one record, as Java's ``pipeInput`` overloads.

        - ``pipe_input(value)``: the value, with a None key;
        - ``pipe_input(key, value)``, ``pipe_input(key, value, timestamp)``,
          ``pipe_input(key, value, timestamp, headers)``;
        - ``pipe_input(test_record)``: a :class:`TestRecord`;
        - by keyword: ``key=``, ``value=``, ``timestamp=`` (ms or a ``datetime``, naive read
          as UTC; ``timestamp_ms=`` too), ``headers=``;
        - ``pipe_input(value, instant)`` with a ``datetime`` second, as Java's
          ``pipeInput(value, Instant)`` (an int second is a value: ``pipe_input(key, value)``).

        Without a timestamp the record gets the topic's current time (then moved on by the
        topic's auto-advance).
        """
        if timestamp_ms is not None:
            if timestamp is not None:
                raise TypeError("pipe_input takes timestamp= or timestamp_ms=, not both")
            timestamp = timestamp_ms
        keywords = {"key": key, "value": value, "timestamp": timestamp, "headers": headers}
        if len(args) == 1 and isinstance(args[0], TestRecord):
            if key is not UNSET or value is not UNSET or timestamp is not None or headers:
                raise TypeError("pipe_input(test_record) takes no other argument")
            record = args[0]
        elif len(args) == 2 and isinstance(args[1], datetime.datetime) and timestamp is None:
            record = TestRecord(None, args[0], args[1], **{k: v for k, v in keywords.items()
                                                          if k == "headers"})
        else:
            record = TestRecord(*args, **keywords)
        self._pipe_record(record)

    def _pipe_record(self, record: TestRecord) -> None:
        ts = record.timestamp
        if ts is None:
            ts = self._next_ts
            self._next_ts += self._advance
        self._pipe(self.name, self._ks.serialize(self.name, record.key),
                   self._vs.serialize(self.name, record.value), ts, record.headers)

    def _times(self, start_timestamp: Any, advance: Any) -> Callable[[int], int | None]:
        """The i-th record's timestamp of a list: ``start_timestamp + i * advance`` (Java's
        overload; the topic's time stays), else None (the topic's current time)."""
        if start_timestamp is None:
            if advance is not None:
                raise TypeError("advance needs start_timestamp (as Java's overload)")
            return lambda i: None
        start = to_timestamp(start_timestamp, "start_timestamp")
        step = to_millis(advance or 0, "advance")
        return lambda i: start + i * step

    def pipe_key_value_list(self, key_values: Iterable[Any], start_timestamp: Any = None,
                            advance: Any = None) -> None:
        """Pipe each ``KeyValue`` (or ``(key, value)`` pair). With ``start_timestamp`` (and
        ``advance``, ms or a timedelta) the records are stamped ``start``, ``start +
        advance``, ...; without, each gets the topic's current time."""
        when = self._times(start_timestamp, advance)
        for i, item in enumerate(key_values):
            k, v = key_value_of(item)
            self._pipe_record(TestRecord(k, v, when(i)))

    def pipe_value_list(self, values: Iterable[Any], start_timestamp: Any = None,
                        advance: Any = None) -> None:
        """Pipe each value with a None key; timestamps as for ``pipe_key_value_list``."""
        when = self._times(start_timestamp, advance)
        for i, v in enumerate(values):
            self._pipe_record(TestRecord(None, v, when(i)))

    def pipe_record_list(self, records: Iterable[TestRecord]) -> None:
        """Pipe each TestRecord (one without a timestamp gets the topic's current time)."""
        for r in records:
            self.pipe_input(r)

    def __repr__(self) -> str:
        return f"TestInputTopic(topic={self.name!r})"


class TestOutputTopic:
    """Reads, in order, what the topology wrote to one topic (made by a driver's
    ``create_output_topic``). A read from a topic with no record left raises
    :class:`~kspark.testing.NoSuchElementError` (Java's NoSuchElementException)."""

    __test__ = False

    def __init__(self, records_for: Callable[[str], list], name: str, key_serde: Any,
                 value_serde: Any):
        self._records_for, self.name = records_for, name  # what the driver's task wrote
        self._ks, self._vs = key_serde, value_serde
        self._pos = 0

    def read_record(self) -> TestRecord:
        """The next record (key, value, timestamp and headers)."""
        written = self._records_for(self.name)
        if self._pos >= len(written):
            raise NoSuchElementError(
                f"output topic {self.name!r} has no record left to read: the topology "
                + (f"wrote {len(written)} and all were read" if written else "wrote none to it")
                + "; check is_empty() before reading, or the topic's name")
        r = written[self._pos]
        self._pos += 1
        return TestRecord(self._ks.deserialize(self.name, r.key),
                          self._vs.deserialize(self.name, r.value), r.timestamp, r.headers)

    def read_value(self) -> Any:
        """The next record's value."""
        return self.read_record().value

    def read_key_value(self) -> Any:
        """The next record as a ``KeyValue`` (equal to the tuple ``(key, value)``)."""
        r = self.read_record()
        return key_value(r.key, r.value)

    def read_records_to_list(self) -> list[TestRecord]:
        return [self.read_record() for _ in range(self.get_queue_size())]

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        """Every record left as a ``(key, value)`` tuple (equal to Java's KeyValues, and
        printed as tuples)."""
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """The latest value per key, as Java's ``readKeyValuesToMap``: a tombstone leaves
        its key with the value None (a null key is refused, as in Java)."""
        out: dict[Any, Any] = {}
        for r in self.read_records_to_list():
            if r.key is None:
                raise KSparkError(f"output topic {self.name!r}: read_key_values_to_map() "
                                  "cannot take a record with a null key (as Java's); use "
                                  "read_key_values_to_list()")
            out[r.key] = r.value
        return out

    def get_queue_size(self) -> int:
        """How many records are left to read."""
        return len(self._records_for(self.name)) - self._pos

    def is_empty(self) -> bool:
        return self.get_queue_size() == 0

    def __repr__(self) -> str:
        return f"TestOutputTopic(topic={self.name!r}, size={self.get_queue_size()})"
