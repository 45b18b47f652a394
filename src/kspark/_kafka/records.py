"""Kafka messages as the engine's input records, made in one place for every host."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kspark._engine.nodes import RawRecord

__all__ = ["raw_record", "raw_records"]


_new = tuple.__new__  # RawRecord(...) without namedtuple's Python-level __new__


def raw_record(m: Any) -> RawRecord:
    """The engine's record of confluent-kafka message ``m`` (its create or log-append
    timestamp, its headers as a tuple)."""
    return RawRecord(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(),
                     tuple(m.headers() or ()))


def raw_records(messages: Iterable[Any]) -> list[RawRecord]:
    """:func:`raw_record` of each message (inlined: it runs per record).

    >>> from confluent_kafka import Message
    >>> m = Message(topic="t", partition=1, offset=7, key=b"k", value=b"v", timestamp=(0, 5))
    >>> raw_records([m]) == [raw_record(m)]
    True
    """
    return [_new(RawRecord, (m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(),
                             m.value(), tuple(h) if (h := m.headers()) else ()))
            for m in messages]
