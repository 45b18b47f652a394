"""One interactive-query request and its answer, as they travel between the querying side
and a worker's endpoint (JSON; keys and values as the store's serde bytes, base64).

A request: ``app``, ``task``, ``store``, ``partition``, ``query`` (the codec's form, or with
``render: "json"`` an operator's form: ``{"op": "get"|"range"|"all", "key", "from",
"to"}`` whose keys are JSON text), ``bound`` (a position: ``{topic: {partition: offset}}``)
and ``stale``. An answer: ``status`` ``ok`` (with ``result``, or ``rows`` when rendered),
``unavailable`` (the task cannot answer now: retry) or ``error`` (with ``message``).

Example:
    >>> unavailable("restoring")
    {'status': 'unavailable', 'message': 'restoring'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kspark._iq.codec import decode_query, encode_result, parse_json_key, render_json
from kspark._engine.query.evaluate import evaluate
from kspark._engine.query.internal import AllQuery, SessionFetchQuery, WindowAllQuery
from kspark._engine.query.types import store_shape, unknown_store
from kspark.errors import InvalidStateStoreError
from kspark.query import (KeyQuery, Position, PositionBound, RangeQuery, VersionedKeyQuery,
                          WindowKeyQuery)

__all__ = ["answer_with", "unavailable", "position_of", "bound_of", "operator_query",
           "position_map"]

FOREVER = (0, 2**63 - 1)


def unavailable(message: str) -> dict[str, Any]:
    return {"status": "unavailable", "message": message}


def position_of(offsets: Mapping[tuple[str, int], int]) -> Position:
    """A Position of ``(topic, partition) -> offset``.

    >>> position_of({("t", 0): 5}).get_partition_positions("t")
    {0: 5}
    """
    out: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in offsets.items():
        out.setdefault(topic, {})[partition] = offset
    return Position.from_map(out)


def position_map(position: Position) -> dict[str, dict[str, int]]:
    """A Position as JSON holds it (partition numbers as text).

    >>> position_map(Position.from_map({"t": {1: 7}}))
    {'t': {'1': 7}}
    """
    return {t: {str(p): o for p, o in position.get_partition_positions(t).items()}
            for t in position.get_topics()}


def bound_of(raw: Any) -> PositionBound:
    """The bound a request carries (unbounded when none).

    >>> bound_of(None).is_unbounded(), bound_of({"t": {"0": 3}}).is_unbounded()
    (True, False)
    """
    if not raw:
        return PositionBound.unbounded()
    parts = {str(t): {int(p): int(o) for p, o in dict(ps).items()} for t, ps in dict(raw).items()}
    return PositionBound.at(Position.from_map(parts))


def operator_query(raw: Mapping[str, Any], store: Any) -> Any:
    """The query an operator's request (``kspark store``) means for ``store``'s kind."""
    op = raw.get("op")
    kind, _ = store_shape(store)
    key = None if raw.get("key") is None else parse_json_key(str(raw["key"]), store)
    if op == "all":
        return {"window": WindowAllQuery(), "key-value": AllQuery()}.get(kind) or _refuse(op, kind)
    if op == "get" and key is not None:
        if kind == "key-value":
            return KeyQuery.with_key(key)
        if kind == "versioned key-value":
            return VersionedKeyQuery.with_key(key)
        if kind == "window":
            return WindowKeyQuery.with_key_and_window_start_range(key, *FOREVER)
        if kind == "session":
            return SessionFetchQuery(key)
    if op == "range" and kind == "key-value":
        lo, hi = (None if raw.get(k) is None else parse_json_key(str(raw[k]), store)
                  for k in ("from", "to"))
        return RangeQuery.with_range(lo, hi)
    return _refuse(op, kind)


def _refuse(op: Any, kind: str) -> Any:
    raise ValueError(f"{op!r} is not a query kspark store answers for a {kind} store")


def answer_with(body: Mapping[str, Any], store: Any, position: Mapping[tuple[str, int], int],
                names: Iterable[str]) -> dict[str, Any]:
    """``body`` answered by ``store`` (None: the task has no store of that name) at
    ``position``."""
    if store is None:
        return {"status": "error", "unknown_store": True,
                "message": str(unknown_store(str(body.get("store")), names))}
    partition = int(body.get("partition", 0))
    rendered = body.get("render") == "json"
    try:
        query = (operator_query(body.get("query") or {}, store) if rendered
                 else decode_query(body["query"], store))
    except (ValueError, KeyError, TypeError, InvalidStateStoreError) as e:
        return {"status": "error", "message": f"the query cannot be read: {e}"}
    result = evaluate(query, store, position_of(position), bound_of(body.get("bound")),
                      partition)
    if not rendered:
        return {"status": "ok", "result": encode_result(query, result, store)}
    if result.is_failure():
        return {"status": "ok", "failure": result.get_failure_reason().name,
                "message": result.get_failure_message(),
                "position": position_map(result.get_position())}
    value = result.get_result()
    rows = list(value) if hasattr(value, "__next__") or isinstance(value, list) else [value]
    return {"status": "ok", "rows": [render_json(r) for r in rows if r is not None],
            "position": position_map(result.get_position())}
