"""A suppress buffer's entries in Kafka Streams' layout (its changelog is Java's: a Java
application's buffer restores in kspark, and back).

Java's InMemoryTimeOrderedKeyValueChangeBuffer logs a buffered record as its key (the
table's serialized key) and, with the header ``v`` = 3, a value of:

- the record context (``ProcessorRecordContext.serialize``): timestamp and offset (8 bytes
  each), topic (4-byte length, UTF-8), partition (4 bytes), a 4-byte header count, then
  per header its key (4-byte length, UTF-8) and value (4-byte length, -1 for null);
- ``BufferValue``: the prior value (the old value of the key's first buffered record),
  the old value (-2: the same bytes as the prior) and the new value, each with a 4-byte
  length (-1: null);
- the buffer time (8 bytes): the window's end for final results, else the record's time.

Values are in the table's value serde; without one, each is kspark's plain encoding of
the value (Java could not read the buffer without a serde anyway).

Example:
    >>> from kspark import Serdes
    >>> e = Buffered(10, 2, 1, None, 7, (), "in", 0, 1)
    >>> data = SuppressBufferSerde(Serdes.Long()).serialize("s", e)
    >>> data.hex()[:52]
    '0000000000000007000000000000000100000002696e00000000'
    >>> SuppressBufferSerde(Serdes.Long()).deserialize("s", data) == e
    True
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kspark._engine.state.encoding import (MalformedError, Reader, UnrepresentableError,
                                           decode_plain, encode_plain)
from kspark._engine.state.internal_serdes import _WithValueSerde
from kspark.errors import KSparkError, SerializationError

__all__ = ["Buffered", "SuppressBufferSerde", "CHANGELOG_VERSION_HEADER"]

# the header Java puts on each buffered record of the changelog (not on tombstones)
CHANGELOG_VERSION_HEADER = ("v", b"\x03")
_NULL, _SAME_AS_PRIOR = -1, -2


class Buffered(NamedTuple):
    """One buffered record: Java's buffer time, the values (new, the record's old, the
    prior: the old value of the key's first buffered record) and the record context."""

    time: int
    new: Any
    old: Any
    prior: Any
    timestamp: int
    headers: tuple
    topic: str
    partition: int
    offset: int


def _int(out: bytearray, n: int, size: int) -> None:
    try:
        out += n.to_bytes(size, "big", signed=True)
    except (OverflowError, AttributeError):
        raise UnrepresentableError(f"a number {n!r} that is not a {size * 8}-bit integer") from None


def _array(out: bytearray, raw: bytes | None) -> None:
    if raw is None:
        _int(out, _NULL, 4)
    else:
        _int(out, len(raw), 4)
        out += raw


def _nullable(r: Reader, n: int) -> bytes | None:
    if n == _NULL:
        return None
    if n < 0:
        raise MalformedError(f"a length of {n} at byte {r.pos - 4}")
    return r.take(n)


class SuppressBufferSerde(_WithValueSerde):
    """A suppress buffer's entries (:class:`Buffered`) in Java's changelog layout."""

    kind, what = b"S", "a suppress buffer"
    advice = ("Give the table that suppress() reads a value serde, on the step that makes its "
              "values (for example Materialized.as_(name).with_value_serde(serde))")
    log_on_flush = True  # logged at a commit, key by key, as Java logs its dirty keys

    def _raw(self, topic: str, value: Any) -> bytes | None:
        if value is None:
            return None
        if self.value_serde is None:
            return encode_plain(value)
        try:
            return self.value_serde.serialize(topic, value)
        except KSparkError:
            raise
        except Exception as e:
            raise SerializationError(f"store {topic!r}: value serde {self.value_serde!r} "
                                     f"cannot serialize {value!r}: {e}") from e

    def _value(self, topic: str, raw: bytes | None) -> Any:
        if raw is None:
            return None
        if self.value_serde is None:
            r = Reader(raw)
            value = decode_plain(r)
            r.end()
            return value
        try:
            return self.value_serde.deserialize(topic, raw)
        except Exception as e:
            raise MalformedError(f"value serde {self.value_serde!r} cannot read a value: "
                                 f"{e}") from e

    def parts(self, topic: str, e: Buffered) -> tuple[bytes | None, bytes | None, bytes | None]:
        """The serialized prior, old and new values."""
        return self._raw(topic, e.prior), self._raw(topic, e.old), self._raw(topic, e.new)

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        out = bytearray()
        try:
            self._write(out, topic, data)
        except UnrepresentableError as e:
            raise SerializationError(
                f"store {topic!r} ({self.what}) cannot hold {e}: without a value serde kspark "
                f"keeps only plain data there. {self.advice}") from None
        return bytes(out)

    def _write(self, out: bytearray, topic: str, data: Any) -> None:
        e = data if isinstance(data, Buffered) else Buffered(*data)
        _int(out, e.timestamp, 8)
        _int(out, e.offset, 8)
        _array(out, e.topic.encode("utf-8"))
        _int(out, e.partition, 4)
        headers = list(e.headers or ())
        _int(out, len(headers), 4)
        for k, v in headers:
            if type(k) is not str or not (v is None or isinstance(v, (bytes, bytearray))):
                raise UnrepresentableError(f"a header ({k!r}, {v!r}): headers are (str, bytes)")
            _array(out, k.encode("utf-8", "surrogatepass"))
            _array(out, None if v is None else bytes(v))
        prior, old, new = self.parts(topic, e)
        _array(out, prior)
        if old is not None and old == prior:
            _int(out, _SAME_AS_PRIOR, 4)
        else:
            _array(out, old)
        _array(out, new)
        _int(out, e.time, 8)

    def parse(self, topic: str, data: bytes) -> Any:
        r = Reader(data)
        value = self._read(r, topic)
        r.end()
        return value

    def _read(self, r: Reader, topic: str) -> Any:
        ts, offset = r.i64(), r.i64()
        name = _nullable(r, r.i32())
        if name is None:
            raise MalformedError("a record context without a topic")
        partition, headers = r.i32(), []
        for _ in range(r.count(8)):
            key = _nullable(r, r.i32())
            if key is None:
                raise MalformedError("a header without a key")
            try:
                name_of = key.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise MalformedError("a header key that is not UTF-8") from None
            headers.append((name_of, _nullable(r, r.i32())))
        prior = _nullable(r, r.i32())
        n = r.i32()
        old = prior if n == _SAME_AS_PRIOR else _nullable(r, n)
        new = _nullable(r, r.i32())
        time = r.i64()
        try:
            topic_name = name.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedError("a record context's topic that is not UTF-8") from None
        return Buffered(time, self._value(topic, new), self._value(topic, old),
                        self._value(topic, prior), ts, tuple(headers), topic_name, partition,
                        offset)

    def size(self, topic: str, key: bytes, e: Buffered) -> int:
        """Java's estimate of the entry's memory (``computeRecordSize``), which
        ``BufferConfig.max_bytes`` bounds: buffer time, key, values (the old one not
        again when it equals the prior), the record context's fields."""
        prior, old, new = self.parts(topic, e)
        n = 8 + len(key) + len(prior or b"") + len(new or b"")
        n += 0 if old is None or old == prior else len(old)
        n += 8 + 8 + len(e.topic.encode("utf-16-le")) // 2 + 4
        return n + sum(len(k.encode("utf-16-le")) // 2 + len(v or b"")
                       for k, v in e.headers or ())
