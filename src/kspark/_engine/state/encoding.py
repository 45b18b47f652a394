"""kspark's own encoding of plain data: typed, versioned, and never code.

What kspark keeps for itself in stores (see ``internal_serdes``) is read back from local
disk and from changelog topics, so its bytes are not trusted: they are decoded here, into
plain data only. No class is looked up by name and nothing is called (as pickle would).

An entry starts with a 3-byte header: the magic byte ``K`` (0x4B), the format version
(``VERSION``, 1) and a kind byte naming what follows. A plain item is a type tag, then its
payload (lengths and counts: 4 bytes, unsigned big-endian; nesting: at most 100 levels):

======== ==========================================================
tag      payload
======== ==========================================================
``N``    None
``T``    True; ``F``: False
``I``    int: length, then its two's-complement big-endian bytes
``D``    float: 8 bytes, IEEE-754 big-endian
``S``    str: length, then UTF-8
``B``    bytes: length, then the bytes
``L``    list; ``U``: tuple: count, then the items
``M``    dict: count, then each key item and value item
``w``    Window: start and end (8 bytes each, signed)
``W``    Windowed: the window's start and end, then the key item
``C``    Change: is_latest (1 byte), then the new and old items
======== ==========================================================

Anything else (a class of yours, a subclass of a plain type such as an IntEnum or a named
tuple, a set) cannot be written: give the store a value serde instead.

Example:
    >>> data = encode_plain(("a", -1, [None, 2.5], {"k": b"v"}))
    >>> decode_plain(Reader(data))
    ('a', -1, [None, 2.5], {'k': b'v'})
    >>> encode_plain({1, 2})
    Traceback (most recent call last):
    ...
    kspark._engine.state.encoding.UnrepresentableError: a value of type builtins.set
"""

from __future__ import annotations

import struct
from typing import Any

from kspark._engine.aggregates.windows import Window, Windowed
from kspark._engine.tables.change import Change

__all__ = ["MAGIC", "VERSION", "MAX_DEPTH", "Reader", "MalformedError", "UnrepresentableError",
           "header", "read_header", "encode_plain", "write_plain", "decode_plain"]

MAGIC = b"K"
VERSION = 1
MAX_DEPTH = 100
_F64 = struct.Struct(">d")
_I64 = struct.Struct(">q")
_WINDOW = struct.Struct(">qq")


class MalformedError(ValueError):
    """Bytes that are not kspark's encoding (the reason is the message)."""


class UnrepresentableError(ValueError):
    """A value this encoding cannot hold (the message names its type)."""


class Reader:
    """Reads ``data`` from the front; every read checks that enough bytes are left."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0):
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise MalformedError(f"truncated: {n} byte(s) needed at byte {self.pos}, "
                            f"{len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(out)

    def byte(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def i32(self) -> int:
        return int.from_bytes(self.take(4), "big", signed=True)

    def i64(self) -> int:
        return int.from_bytes(self.take(8), "big", signed=True)

    def count(self, per_item: int = 1) -> int:
        """A count of items, each taking at least ``per_item`` bytes."""
        n = self.u32()
        if n * per_item > len(self.data) - self.pos:
            raise MalformedError(f"a count of {n} items at byte {self.pos - 4}, but only "
                            f"{len(self.data) - self.pos} bytes left")
        return n

    def end(self) -> None:
        if self.pos != len(self.data):
            raise MalformedError(f"{len(self.data) - self.pos} unexpected byte(s) after the entry")


def header(kind: bytes) -> bytes:
    """The 3-byte header of an entry of ``kind``."""
    return MAGIC + bytes((VERSION,)) + kind


def read_header(r: Reader, kind: bytes) -> None:
    """Check the header at the front of ``r``: magic, version, kind."""
    first = bytes(r.data[r.pos:r.pos + 2])
    if first[:1] != MAGIC:
        hint = " (a Python pickle: kspark no longer reads those)" if first[:1] == b"\x80" else ""
        raise MalformedError(f"no kspark header: it starts with {first!r}{hint}")
    head = r.take(3)
    if head[1] != VERSION:
        raise MalformedError(f"format version {head[1]}, but this kspark reads version {VERSION}")
    if head[2:3] != kind:
        raise MalformedError(f"an entry of kind {head[2:3]!r} where kind {kind!r} belongs")


def encode_plain(value: Any) -> bytes:
    """The plain item for ``value`` (no header); raises UnrepresentableError."""
    out = bytearray()
    write_plain(out, value)
    return bytes(out)


def _length(n: int) -> bytes:
    if n >= 1 << 32:
        raise UnrepresentableError(f"a value of {n} bytes or items (the limit is 4 GiB)")
    return n.to_bytes(4, "big")


def write_plain(out: bytearray, v: Any, depth: int = 0) -> None:
    """Append the plain item for ``v`` to ``out``."""
    if depth > MAX_DEPTH:
        raise UnrepresentableError(f"a value nested deeper than {MAX_DEPTH} levels")
    t = type(v)
    if v is None:
        out += b"N"
    elif t is bool:
        out += b"T" if v else b"F"
    elif t is int:
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
        out += b"I" + _length(len(raw)) + raw
    elif t is float:
        out += b"D" + _F64.pack(v)
    elif t is str:
        try:
            raw = v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise UnrepresentableError(f"a str that is not valid Unicode ({e})") from e
        out += b"S" + _length(len(raw)) + raw
    elif t is bytes:
        out += b"B" + _length(len(v)) + v
    elif t is list or t is tuple:
        out += (b"L" if t is list else b"U") + _length(len(v))
        for item in v:
            write_plain(out, item, depth + 1)
    elif t is dict:
        out += b"M" + _length(len(v))
        for k, item in v.items():
            write_plain(out, k, depth + 1)
            write_plain(out, item, depth + 1)
    elif t is Window:
        out += b"w" + _window(v)
    elif t is Windowed and type(v.window) is Window:
        out += b"W" + _window(v.window)
        write_plain(out, v.key, depth + 1)
    elif t is Change:
        out += b"C" + (b"\x01" if v.is_latest else b"\x00")
        write_plain(out, v.new, depth + 1)
        write_plain(out, v.old, depth + 1)
    else:
        raise UnrepresentableError(f"a value of type {t.__module__}.{t.__qualname__}")


def _window(w: Window) -> bytes:
    try:
        return _WINDOW.pack(w.start, w.end)
    except struct.error as e:
        raise UnrepresentableError(f"a window {w!r} whose bounds are not 64-bit integers") from e


def decode_plain(r: Reader, depth: int = 0) -> Any:
    """The plain item at the front of ``r``; raises MalformedError."""
    if depth > MAX_DEPTH:
        raise MalformedError(f"nested deeper than {MAX_DEPTH} levels")
    at = r.pos
    tag = r.take(1)
    if tag == b"N":
        return None
    if tag == b"T" or tag == b"F":
        return tag == b"T"
    if tag == b"I":
        return int.from_bytes(r.take(r.u32()), "big", signed=True)
    if tag == b"D":
        return _F64.unpack(r.take(8))[0]
    if tag == b"S":
        raw = r.take(r.u32())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedError(f"a str at byte {at} that is not UTF-8 ({e})") from None
    if tag == b"B":
        return r.take(r.u32())
    if tag == b"L" or tag == b"U":
        items = [decode_plain(r, depth + 1) for _ in range(r.count())]
        return items if tag == b"L" else tuple(items)
    if tag == b"M":
        out = {}
        for _ in range(r.count(2)):
            k, v = decode_plain(r, depth + 1), decode_plain(r, depth + 1)
            try:
                out[k] = v
            except TypeError:
                raise MalformedError(
                    f"a dict key of type {type(k).__name__} (not hashable)") from None
        return out
    if tag == b"w":
        return Window(r.i64(), r.i64())
    if tag == b"W":
        window = Window(r.i64(), r.i64())
        return Windowed(decode_plain(r, depth + 1), window)
    if tag == b"C":
        latest = r.byte()
        if latest > 1:
            raise MalformedError(f"a Change flag {latest} at byte {at + 1} (0 or 1 belongs there)")
        return Change(decode_plain(r, depth + 1), decode_plain(r, depth + 1), latest == 1)
    raise MalformedError(f"unknown type tag {tag!r} at byte {at}")
