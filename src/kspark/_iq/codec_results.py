"""Query results to and from the wire. The form of a result follows from its query (and
whether the store keeps timestamps), never from the payload: a value, a list of [key,
value], of [window start, value] or of [windowed key, value], a count, a versioned record
or a list of them. A failure is its reason's name and its message; the position is
``{topic: {partition: offset}}``."""

from __future__ import annotations

from typing import Any

from kspark._engine.query import internal as iq
from kspark._iq.codec_values import WireStore, as_int, bad, checked_dict, checked_list, \
    opt_int, req
from kspark._engine.state.kv import KeyValue, KeyValueIterator
from kspark._engine.state.versioned import VersionedRecord
from kspark.query.position import Position
from kspark.query.queries import KeyQuery, RangeQuery, TimestampedKeyQuery, \
    TimestampedRangeQuery
from kspark.query.results import FailureReason, QueryResult
from kspark.query.time_queries import MultiVersionedKeyQuery, VersionedKeyQuery, \
    WindowKeyQuery, WindowRangeQuery

__all__ = ["encode_result", "decode_result"]

_VALUE, _KV, _AT, _WINDOWED, _COUNT, _VERSION, _VERSIONS = (
    "value", "kv", "at", "windowed", "count", "version", "versions")
_SHAPES: dict[type, str] = {
    KeyQuery: _VALUE, TimestampedKeyQuery: _VALUE, iq.SessionFetchSessionQuery: _VALUE,
    RangeQuery: _KV, TimestampedRangeQuery: _KV, iq.AllQuery: _KV, iq.PrefixScanQuery: _KV,
    WindowKeyQuery: _AT, iq.WindowFetchQuery: _AT,
    WindowRangeQuery: _WINDOWED, iq.WindowFetchAllQuery: _WINDOWED, iq.WindowAllQuery: _WINDOWED,
    iq.SessionFetchQuery: _WINDOWED, iq.SessionFindQuery: _WINDOWED,
    iq.ApproximateNumEntriesQuery: _COUNT,
    VersionedKeyQuery: _VERSION, MultiVersionedKeyQuery: _VERSIONS,
}


def _stamped(query: Any, wire: WireStore) -> bool:
    """Whether the query's values come with timestamps."""
    if isinstance(query, (TimestampedKeyQuery, TimestampedRangeQuery)):
        return True
    if isinstance(query, (WindowKeyQuery, WindowRangeQuery)):
        # as Java's: a DSL window store's values as stored; a session store's plain
        return wire.timestamped and wire.kind == "window"
    return bool(getattr(query, "timestamped", False))


def _shape(query: Any) -> str:
    shape = _SHAPES.get(type(query))
    if shape is None:
        raise TypeError(f"{type(query).__name__} is not an interactive query kspark can send")
    return shape


def _put(query: Any, value: Any, wire: WireStore) -> Any:
    shape, stamped = _shape(query), _stamped(query, wire)
    put_v = wire.stamped_text if stamped else wire.value_text
    if shape == _VALUE:
        return put_v(value)
    if shape == _COUNT:
        return value
    if shape in (_VERSION, _VERSIONS):
        records = [value] if shape == _VERSION else list(value)
        out = [None if r is None else {"value": wire.value_text(r.value),
                                       "timestamp": r.timestamp, "valid_to": r.valid_to}
               for r in records]
        return out[0] if shape == _VERSION else out
    put_k = {_KV: wire.key_text, _AT: lambda t: t, _WINDOWED: wire.windowed_text}[shape]
    return [[put_k(k), put_v(v)] for k, v in value]


def _record(d: Any, wire: WireStore, what: str) -> VersionedRecord | None:
    if d is None:
        return None
    d = checked_dict(d, what, {"value", "timestamp", "valid_to"})
    return VersionedRecord(wire.value(d["value"], f"{what}.value"),
                           as_int(d["timestamp"], f"{what}.timestamp"),
                           opt_int(d["valid_to"], f"{what}.valid_to"))


def _get(query: Any, data: Any, wire: WireStore) -> Any:
    shape, stamped = _shape(query), _stamped(query, wire)
    get_v = wire.stamped if stamped else wire.value
    if shape == _VALUE:
        return get_v(data, "result")
    if shape == _COUNT:
        return as_int(data, "result")
    if shape == _VERSION:
        return _record(data, wire, "result")
    entries = checked_list(data, "result")
    if shape == _VERSIONS:
        records: list[Any] = [_record(checked_dict(e, "result[]"), wire, "result[]")
                              for e in entries]
        return KeyValueIterator(iter(records))
    get_k: Any = {_KV: wire.key, _AT: as_int, _WINDOWED: wire.windowed}[shape]
    out = []
    for e in entries:
        if not isinstance(e, list) or len(e) != 2:
            bad("each result entry must be a [key, value] pair")
        out.append(KeyValue(get_k(e[0], "result[].key"), get_v(e[1], "result[].value")))
    return KeyValueIterator(iter(out))


def encode_result(query: Any, result: QueryResult, store: Any) -> dict[str, Any]:
    """``result`` (of ``query`` on ``store``) as JSON-able data. An iterator result is read
    to its end (it is materialized already when ``evaluate`` made it).

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...     Serdes.String(), Serdes.Long()).build()
        >>> r = QueryResult.for_result(5); r.set_position(Position.from_map({"in": {0: 7}}))
        >>> d = encode_result(KeyQuery.with_key("a"), r, s); d
        {'status': 'ok', 'result': 'AAAAAAAAAAU=', 'position': {'in': {'0': 7}}, \
'execution_info': []}
        >>> decode_result(d, KeyQuery.with_key("a"), s)
        QueryResult(result=5, position=Position({'in': {0: 7}}))
    """
    wire = WireStore(store)
    pos = result.get_position()
    out: dict[str, Any] = {"status": "ok" if result.is_success() else "failed"}
    if result.is_success():
        out["result"] = _put(query, result.get_result(), wire)
    else:
        out["reason"] = result.get_failure_reason().name
        out["message"] = result.get_failure_message()
    out["position"] = {t: {str(p): o for p, o in parts.items()}
                       for t, parts in pos.to_map().items()}
    out["execution_info"] = result.get_execution_info()
    return out


def _position(data: Any) -> Position:
    out = Position.empty()
    for topic, parts in checked_dict(data, "position").items():
        for p, offset in checked_dict(parts, f"position[{topic!r:.60}]").items():
            if not (isinstance(p, str) and p.isdigit() and len(p) < 10):
                bad(f"position partition {p!r:.20} must be a partition number")
            out.with_component(topic, int(p), as_int(offset, "position offset"))
    return out


def decode_result(data: Any, query: Any, store: Any) -> QueryResult:
    """The QueryResult ``data`` (from :func:`encode_result`) describes, read as the answer
    of ``query`` on ``store``; an InvalidStateStoreError for anything else."""
    d = checked_dict(data, "result")
    status = d.get("status")
    keys = {"status", "result"} if status == "ok" else {"status", "reason", "message"}
    if status not in ("ok", "failed"):
        bad(f"result status must be 'ok' or 'failed', got {status!r:.40}")
    checked_dict(d, "result", keys | {"position", "execution_info"})
    info = checked_list(d["execution_info"], "execution_info")
    if not all(isinstance(i, str) for i in info):
        bad("execution_info must be a list of strings")
    if status == "ok":
        result = QueryResult.for_result(_get(query, d["result"], WireStore(store)))
    else:
        reason = req(d, "reason", str, "failure")
        if reason not in FailureReason.__members__:
            bad(f"unknown failure reason {reason!r:.40}")
        result = QueryResult.for_failure(FailureReason[reason],
                                         req(d, "message", str, "failure"))
    for line in info:
        result.add_execution_info(line)
    result.set_position(_position(d["position"]))
    return result
