"""Serdes of the values kspark keeps for itself: an unnamed foreign-key join result store
and stream-table join grace buffers (a suppress buffer's entries are Java's:
``buffer_value``).

Each entry is a header (see ``encoding``: magic ``K``, version 1, kind) and its fields:

- kind ``G``, a grace buffer entry ``(value, headers)``: the value (a slot), the headers;
- kind ``V``, a value of its own (an unnamed foreign-key join's result): one plain item.

A slot holds a user value: a byte 0 (None), 1 (then a 4-byte length and the bytes of the
value serde the topology knows for it) or 2 (then a plain item, when no serde is known).
Headers: a 4-byte count, then per header its key (4-byte length, UTF-8) and value (4-byte
signed length, -1 for null, then the bytes).

A value that the plain encoding cannot hold fails when written, with a
``SerializationError`` that names the store; bytes that do not parse fail when read with
a ``CorruptStateError`` naming the store (and, during a restore, the changelog record:
see ``restore_check``).

Example:
    >>> serde = GraceBufferSerde(None)
    >>> data = serde.serialize("buffer", (2, (("h", b"1"),)))
    >>> data[:3], serde.deserialize("buffer", data)
    (b'K\\x01G', (2, (('h', b'1'),)))
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kspark._engine.state.encoding import (
    MalformedError,
    Reader,
    UnrepresentableError,
    decode_plain,
    header,
    read_header,
    write_plain,
)
from kspark.errors import CorruptStateError, KSparkError, SerializationError

__all__ = ["InternalSerde", "GraceBufferSerde", "PlainValueSerde", "RESET_ADVICE"]

RESET_ADVICE = ("reset the application (kspark reset --application-id ... --bootstrap-servers "
          "...) so that it rebuilds its state from its input")


class InternalSerde(ABC):
    """Header, then the fields of one kind of entry; subclasses write and read the fields."""

    kind = b""
    what = ""
    advice = ""  # how to give the store a value serde

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        out = bytearray(header(self.kind))
        try:
            self._write(out, topic, data)
        except UnrepresentableError as e:
            raise SerializationError(
                f"store {topic!r} ({self.what}) cannot hold {e}: without a value serde kspark "
                f"keeps only plain data there (None, bool, int, float, str, bytes, list, "
                f"tuple, dict, windowed keys). {self.advice}") from None
        return bytes(out)

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return self.parse(topic, data)
        except MalformedError as e:
            raise CorruptStateError(
                f"store {topic!r} ({self.what}) holds a value that is not in kspark's internal "
                f"format ({e}); kspark never runs such data. Its local files or its changelog "
                f"were damaged or written by something else: {RESET_ADVICE}") from None

    def parse(self, topic: str, data: bytes) -> Any:
        """The entry in ``data``; raises MalformedError."""
        r = Reader(data)
        read_header(r, self.kind)
        value = self._read(r, topic)
        r.end()
        return value

    @abstractmethod
    def _write(self, out: bytearray, topic: str, data: Any) -> None:
        """Append the body of ``data`` (after the header) to ``out``."""

    @abstractmethod
    def _read(self, r: Reader, topic: str) -> Any:
        """The body read from ``r`` (after the header); raises MalformedError."""


def _put_slot(out: bytearray, serde: Any, topic: str, value: Any) -> None:
    if value is None:
        out += b"\x00"
    elif serde is None:
        out += b"\x02"
        write_plain(out, value)
    else:
        try:
            raw = serde.serialize(topic, value)
        except KSparkError:
            raise
        except Exception as e:
            raise SerializationError(f"store {topic!r}: value serde {serde!r} cannot serialize "
                                     f"{value!r}: {e}") from e
        out += b"\x00" if raw is None else b"\x01" + len(raw).to_bytes(4, "big") + raw


def _take_slot(r: Reader, serde: Any, topic: str) -> Any:
    at, tag = r.pos, r.byte()
    if tag == 0:
        return None
    if tag == 2:
        return decode_plain(r)
    if tag != 1:
        raise MalformedError(f"unknown value slot {tag} at byte {at}")
    raw = r.take(r.u32())
    if serde is None:
        raise MalformedError(
            f"a value in serde bytes at byte {at}, but the store has no value serde")
    try:
        return serde.deserialize(topic, raw)
    except Exception as e:
        raise MalformedError(
            f"value serde {serde!r} cannot read the value at byte {at}: {e}") from e


def _put_headers(out: bytearray, headers: Any) -> None:
    items = list(headers or ())
    out += len(items).to_bytes(4, "big")
    for k, v in items:
        if type(k) is not str or not (v is None or isinstance(v, (bytes, bytearray, memoryview))):
            raise UnrepresentableError(f"a header ({k!r}, {v!r}): headers are (str, bytes) pairs")
        key = k.encode("utf-8", "surrogatepass")
        out += len(key).to_bytes(4, "big") + key
        out += b"\xff\xff\xff\xff" if v is None else len(v).to_bytes(4, "big") + bytes(v)


def _take_headers(r: Reader) -> tuple:
    out = []
    for _ in range(r.count(8)):
        at = r.pos
        try:
            key = r.take(r.u32()).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise MalformedError(f"a header key at byte {at} that is not UTF-8") from None
        n = r.i32()
        if n < -1:
            raise MalformedError(f"a header value length of {n} at byte {r.pos - 4}")
        out.append((key, None if n == -1 else r.take(n)))
    return tuple(out)


class _WithValueSerde(InternalSerde):
    """An entry holding user values: in ``value_serde`` if known (None: plain items)."""

    def __init__(self, value_serde: Any = None):
        self.value_serde = value_serde

    def with_defaults(self, resolve: Callable[[Any], Any]) -> "_WithValueSerde":
        """A known serde given by name is looked up; an unknown one stays unknown."""
        return type(self)(None if self.value_serde is None else resolve(self.value_serde))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value_serde!r})"


class GraceBufferSerde(_WithValueSerde):
    """A stream-table join's grace buffer entries: ``(value, headers)``."""

    kind, what = b"G", "a stream-table join's grace buffer"
    advice = "Give the join the stream's value serde: joined=Joined().with_value_serde(serde)"

    def _write(self, out: bytearray, topic: str, data: Any) -> None:
        value, headers = data
        _put_slot(out, self.value_serde, topic, value)
        _put_headers(out, headers)

    def _read(self, r: Reader, topic: str) -> Any:
        return _take_slot(r, self.value_serde, topic), _take_headers(r)


class PlainValueSerde(InternalSerde):
    """Values of their own as plain items (an unnamed foreign-key join's results)."""

    kind, what = b"V", "a foreign-key join result without a value serde"
    advice = "Give the join a value serde: materialized=Materialized().with_value_serde(serde)"

    def _write(self, out: bytearray, topic: str, data: Any) -> None:
        write_plain(out, data)

    def _read(self, r: Reader, topic: str) -> Any:
        return decode_plain(r)

    def __repr__(self) -> str:
        return "PlainValueSerde()"
