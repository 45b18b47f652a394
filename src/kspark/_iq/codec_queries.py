"""Queries to and from the wire: ``{"type": <query class>, <field>: <value>, ...}``, each
query class's fields declared once with their wire form (a key as base64 of the store's
key serde bytes, an int, a bool, a result order, bytes as base64)."""

from __future__ import annotations

from typing import Any

from kspark._engine.query import internal as iq
from kspark._iq.codec_values import WireStore, as_int, b64, bad, checked_dict, opt_int, unb64
from kspark.query.queries import KeyQuery, RangeQuery, ResultOrder, TimestampedKeyQuery, \
    TimestampedRangeQuery
from kspark.query.time_queries import MultiVersionedKeyQuery, VersionedKeyQuery, \
    WindowKeyQuery, WindowRangeQuery

__all__ = ["encode_query", "decode_query", "QUERY_TYPES"]

_KEY, _OPT_KEY, _INT, _OPT_INT, _BOOL, _ORDER, _BYTES = (
    "key", "key?", "int", "int?", "bool", "order", "bytes")
_RANGE = {"lower": _OPT_KEY, "upper": _OPT_KEY, "order": _ORDER}
_SPECS: dict[type, dict[str, str]] = {
    KeyQuery: {"key": _KEY, "skips_cache": _BOOL},
    TimestampedKeyQuery: {"key": _KEY, "skips_cache": _BOOL},
    RangeQuery: _RANGE,
    TimestampedRangeQuery: _RANGE,
    WindowKeyQuery: {"key": _KEY, "time_from": _INT, "time_to": _INT},
    WindowRangeQuery: {"key": _OPT_KEY, "time_from": _OPT_INT, "time_to": _OPT_INT},
    VersionedKeyQuery: {"key": _KEY, "as_of_timestamp": _OPT_INT},
    MultiVersionedKeyQuery: {"key": _KEY, "from_timestamp": _OPT_INT, "to_timestamp": _OPT_INT,
                             "order": _ORDER},
    iq.AllQuery: {"reverse": _BOOL, "timestamped": _BOOL},
    iq.PrefixScanQuery: {"prefix": _BYTES, "timestamped": _BOOL},
    iq.ApproximateNumEntriesQuery: {},
    iq.WindowFetchQuery: {"key": _KEY, "time_from": _INT, "time_to": _INT, "backward": _BOOL,
                          "timestamped": _BOOL},
    iq.WindowFetchAllQuery: {"time_from": _INT, "time_to": _INT, "backward": _BOOL,
                             "timestamped": _BOOL},
    iq.WindowAllQuery: {"backward": _BOOL, "timestamped": _BOOL},
    iq.SessionFetchQuery: {"key": _KEY, "backward": _BOOL},
    iq.SessionFindQuery: {"key": _KEY, "earliest_end": _INT, "latest_start": _INT},
    iq.SessionFetchSessionQuery: {"key": _KEY, "start": _INT, "end": _INT},
}
QUERY_TYPES: dict[str, type] = {cls.__name__: cls for cls in _SPECS}


def _put(form: str, value: Any, wire: WireStore) -> Any:
    if form in (_KEY, _OPT_KEY):
        return None if value is None else wire.key_text(value)
    if form == _ORDER:
        return value.name
    if form == _BYTES:
        return b64(value)
    return value


def _get(form: str, value: Any, wire: WireStore, what: str) -> Any:
    if form == _KEY or (form == _OPT_KEY and value is not None):
        return wire.key(value, what)
    if form == _INT:
        return as_int(value, what)
    if form in (_OPT_INT, _OPT_KEY):
        return opt_int(value, what)  # an optional key here is None
    if form == _BOOL:
        if type(value) is not bool:
            bad(f"{what} must be true or false, got {value!r:.40}")
        return value
    if form == _ORDER:
        if value not in ResultOrder.__members__:
            bad(f"{what} must be one of {list(ResultOrder.__members__)}, got {value!r:.40}")
        return ResultOrder[value]
    return unb64(value, what)


def encode_query(query: Any, store: Any) -> dict[str, Any]:
    """``query`` as JSON-able data, keys serialized by ``store``'s key serde.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...     Serdes.String(), Serdes.Long()).build()
        >>> encode_query(KeyQuery.with_key("a"), s)
        {'type': 'KeyQuery', 'key': 'YQ==', 'skips_cache': False}
        >>> decode_query(encode_query(RangeQuery.with_lower_bound("a"), s), s)
        RangeQuery(lower='a', upper=None, order=<ResultOrder.ANY: 'ANY'>)
    """
    spec = _SPECS.get(type(query))
    if spec is None:
        raise TypeError(f"{type(query).__name__} is not an interactive query kspark can send; "
                        f"it sends {sorted(QUERY_TYPES)}")
    wire = WireStore(store)
    return {"type": type(query).__name__,
            **{name: _put(form, getattr(query, name), wire) for name, form in spec.items()}}


def decode_query(data: Any, store: Any) -> Any:
    """The query ``data`` (from :func:`encode_query`) describes; an InvalidStateStoreError
    for anything but a known query type with exactly its fields, each of its form."""
    d = checked_dict(data, "query")
    kind = d.get("type")
    cls = QUERY_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        bad(f"unknown query type {d.get('type')!r:.60}; known: {sorted(QUERY_TYPES)}")
    spec = _SPECS[cls]
    checked_dict(d, f"{cls.__name__} query", {"type", *spec})
    wire = WireStore(store)
    return cls(**{n: _get(f, d[n], wire, f"{cls.__name__}.{n}") for n, f in spec.items()})
