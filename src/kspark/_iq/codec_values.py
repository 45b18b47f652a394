"""The primitives of the interactive-query wire format: JSON-able values only, every field
read back checked for its type, keys and values as base64 of the store's serdes' bytes.
Nothing is ever evaluated or unpickled; anything unexpected is an InvalidStateStoreError.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, NoReturn

from kspark._engine.aggregates.windows import Window, Windowed
from kspark._engine.query.types import store_shape
from kspark._engine.state.timestamped import ValueAndTimestamp, ValueAndTimestampSerde
from kspark.errors import InvalidStateStoreError

__all__ = ["bad", "b64", "unb64", "req", "opt_int", "as_int", "checked_dict", "checked_list",
           "WireStore"]

_MAX_INT = 1 << 63


def bad(what: str) -> NoReturn:
    """Refuse a malformed payload."""
    raise InvalidStateStoreError(f"malformed interactive-query payload: {what}")


def b64(raw: bytes | None) -> str | None:
    """``raw`` as base64 text (None stays None).

    >>> b64(b"ab"), unb64("YWI=", "x")
    ('YWI=', b'ab')
    """
    return None if raw is None else base64.b64encode(raw).decode("ascii")


def unb64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        bad(f"{what} must be base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        bad(f"{what} is not valid base64")


def checked_dict(value: Any, what: str, keys: set[str] | None = None) -> dict[str, Any]:
    """``value`` if it is a dict (with exactly ``keys``, if given)."""
    if not isinstance(value, dict):
        bad(f"{what} must be an object, got {type(value).__name__}")
    if keys is not None and set(value) != keys:
        bad(f"{what} must have the fields {sorted(keys)}, got {sorted(map(str, value))}")
    return value


def checked_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        bad(f"{what} must be a list, got {type(value).__name__}")
    return value


def req(d: Mapping[str, Any], name: str, kind: type, what: str) -> Any:
    """Field ``name`` of ``d``, of type ``kind`` (an int is never a bool)."""
    if name not in d:
        bad(f"{what} has no field {name!r}")
    value = d[name]
    if kind is int:
        return as_int(value, f"{what}.{name}")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        bad(f"{what}.{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def as_int(value: Any, what: str) -> int:
    if type(value) is not int or not -_MAX_INT <= value < _MAX_INT:
        bad(f"{what} must be a 64-bit integer, got {value!r:.40}")
    return value


def opt_int(value: Any, what: str) -> int | None:
    return None if value is None else as_int(value, what)


class WireStore:
    """Keys and values of one store to and from the wire, through its serdes: what the
    codec needs of a store is its ``name()``, ``key_serde``, ``value_serde`` and kind (its
    class: ``store_shape``).

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...     Serdes.String(), Serdes.Long()).build()
        >>> w = WireStore(s)
        >>> w.key(w.key_text("a")), w.value(w.value_text(5))
        ('a', 5)
    """

    def __init__(self, store: Any):
        self.name = store.name()
        self.key_serde = store.key_serde
        serde = store.value_serde
        self.kind = store_shape(store)[0]
        self.timestamped = isinstance(serde, ValueAndTimestampSerde)
        self.plain = serde.inner if self.timestamped else serde

    def key_text(self, key: Any) -> str | None:
        return b64(self.key_serde.serialize(self.name, key))

    def key(self, text: Any, what: str = "key") -> Any:
        return self._read(self.key_serde, unb64(text, what), what)

    def value_text(self, value: Any) -> str | None:
        return None if value is None else b64(self.plain.serialize(self.name, value))

    def value(self, text: Any, what: str = "value") -> Any:
        return None if text is None else self._read(self.plain, unb64(text, what), what)

    def stamped_text(self, vt: ValueAndTimestamp | None) -> dict[str, Any] | None:
        return None if vt is None else {"value": self.value_text(vt.value),
                                         "timestamp": vt.timestamp}

    def stamped(self, d: Any, what: str = "value") -> ValueAndTimestamp | None:
        if d is None:
            return None
        d = checked_dict(d, what, {"value", "timestamp"})
        return ValueAndTimestamp(self.value(d["value"], f"{what}.value"),
                                 as_int(d["timestamp"], f"{what}.timestamp"))

    def windowed_text(self, wk: Windowed) -> dict[str, Any]:
        return {"key": self.key_text(wk.key), "start": wk.window.start, "end": wk.window.end}

    def windowed(self, d: Any, what: str = "key") -> Windowed:
        d = checked_dict(d, what, {"key", "start", "end"})
        return Windowed(self.key(d["key"], f"{what}.key"),
                        Window(as_int(d["start"], f"{what}.start"),
                               as_int(d["end"], f"{what}.end")))

    def _read(self, serde: Any, raw: bytes, what: str) -> Any:
        try:
            return serde.deserialize(self.name, raw)
        except Exception as e:  # noqa: BLE001 - any serde failure: the payload is refused
            bad(f"{what} cannot be read by store {self.name!r}'s serde: "
                f"{type(e).__name__}: {e}")
