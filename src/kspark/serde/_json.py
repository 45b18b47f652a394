"""``Serdes.Json()``: JSON text in UTF-8 through orjson, with the standard library's ``json``
for what orjson would write differently from it or refuses (see :class:`JsonSerde`)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from kspark.serde._base import Serde, cannot_deserialize, cannot_serialize

__all__ = ["JsonSerde"]

_OPTIONS = orjson.OPT_NON_STR_KEYS  # int, float, bool and None keys as text, as json does
_INF = float("inf")
# An integer orjson.loads could read as a float (beyond 64 bits) has 20 digits, or - and 19:
# digits and - become "0", the rest " " (translate is cheaper than a regular expression).
_DIGITS = bytes(48 if 48 <= i <= 57 or i == 45 else 32 for i in range(256))
_LONG_RUN = b"0" * 20


def _non_finite(value: Any) -> bool:
    """Whether ``value`` holds a NaN or an infinity (orjson writes them as null)."""
    if type(value) is float or isinstance(value, float):
        return value != value or value in (_INF, -_INF)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    fields = getattr(value, "__dataclass_fields__", None)
    return fields is not None and any(_non_finite(getattr(value, f)) for f in fields)


def _stdlib_bytes(data: Any) -> bytes:
    """What ``Serdes.Json()`` wrote before orjson: compact, every non-ASCII character (and a
    lone surrogate) as a ``\\u`` escape, NaN and infinities as ``NaN``/``Infinity``."""
    return json.dumps(data, separators=(",", ":")).encode("ascii")


class JsonSerde(Serde):
    """JSON text in UTF-8, compact, keys in insertion order: the bytes of Java's Jackson-based
    serializers (Kafka Connect's ``JsonSerializer``, a serde over an ``ObjectMapper``) for
    objects, arrays, strings, integers, booleans and null. Written and read with orjson.

    Takes what ``json.dumps`` encodes (dict, list, tuple, str, int, float, bool, None; dict
    keys that are int, float, bool or None become text, as json made them), and what orjson
    encodes natively: dataclasses (an object), ``datetime``/``date``/``time`` (RFC 3339
    text), ``uuid.UUID`` (its text) and enum members (their value). A set, bytes or another
    object is refused, naming the topic.

    Where the bytes differ from Jackson's, the value does not (Jackson reads it the same):
    a character beyond U+FFFF is UTF-8 (Jackson: a ``\\uD83D\\uDE00`` pair of escapes), a
    control character ``\\u001f`` (Jackson: ``\\u001F``), and a float its shortest
    round-trip form (``1e+16``, ``0.00001``; Jackson: ``1.0E16``, ``1.0E-5``). Three cases
    keep the bytes the serde wrote before orjson (the standard library's, all ASCII): an
    integer beyond 64 bits, which orjson refuses; a NaN or an infinity, which orjson would
    write as null, silently (the text is ``NaN``/``Infinity``: Python reads it back, Jackson
    does not by default, so map them to None for Java consumers); a lone surrogate, not
    UTF-8 (a ``\\u`` escape, as Jackson writes it). Reading takes what ``json.loads`` took:
    integers of any size exactly, ``NaN``, a byte-order mark, UTF-16.

    Example:
        >>> from kspark import Serdes
        >>> Serdes.Json().serialize("t", {"name": "Zoë", "n": 1, "x": 0.5})
        b'{"name":"Zo\\xc3\\xab","n":1,"x":0.5}'
        >>> Serdes.Json().deserialize("t", b'{"big":123456789012345678901234567890}')
        {'big': 123456789012345678901234567890}
    """

    name = "Json"
    takes = ("what json.dumps encodes (dict, list, str, int, float, bool), a dataclass, "
             "datetime, UUID or enum")

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        try:
            out = orjson.dumps(data, option=_OPTIONS)
        except TypeError:  # beyond 64 bits, a lone surrogate, too deep, or not JSON at all
            out = None
        if out is not None and not (b"null" in out and _non_finite(data)):
            return out
        try:
            return _stdlib_bytes(data)
        except (TypeError, ValueError, RecursionError) as e:  # json names what it cannot encode
            why = (f"JSON cannot encode it ({e})" if out is None else "it holds a NaN or an "
                   "infinity in an object only orjson writes (as null): replace it with None")
            raise cannot_serialize(self, topic, data, why) from e

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> Any:
        if _LONG_RUN not in data.translate(_DIGITS):
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass  # NaN, a BOM, UTF-16, a lone surrogate's escape: json reads those
        return json.loads(data)

    # the per-record path: one call instead of two
    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return self._from_bytes(data)
        except Exception as e:  # what json or orjson raise on bytes that are not JSON
            raise cannot_deserialize(self, topic, data, e) from e
