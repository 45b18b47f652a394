"""Interactive queries of a TopologyTestDriver's stores, through the engine's own query code:
``query_stores`` (IQv2: a StateQueryRequest) and ``read_only_store`` (IQv1: StoreQueryParameters).
The driver's one task is partition 0; a store's position is what the task has processed:
the last offset of each topic piped into it (or read back from a topic it writes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.query.evaluate import evaluate
from kspark._engine.query.types import check_store_type, unknown_store
from kspark._engine.query.window_facades import make_facade
from kspark.errors import InvalidStateStoreError
from kspark.query.position import Position, PositionBound
from kspark.query.results import FailureReason, QueryResult, StateQueryResult

__all__ = ["processed_position", "query_stores", "read_only_store"]

_NOT_PRESENT = ("The requested partition was not present at the time of the query (the "
                "TopologyTestDriver runs one task: partition 0).")


def processed_position(next_offsets: Mapping[str, int], topics: set[str] | None = None,
                       skip: set[str] | frozenset[str] = frozenset()) -> Position:
    """The Position of partition 0 after ``next_offsets`` (topic: next offset), only
    ``topics`` if given, never those in ``skip``.

    >>> processed_position({"in": 3, "g": 1}, skip={"g"}).to_map()
    {'in': {0: 2}}
    """
    out = Position.empty()
    for topic, nxt in next_offsets.items():
        if nxt > 0 and topic not in skip and (topics is None or topic in topics):
            out.with_component(topic, 0, nxt - 1)
    return out


def query_stores(request: Any, stores: Mapping[str, Any], global_stores: Mapping[str, Any],
          position: Position) -> StateQueryResult:
    """``request`` answered by the task's store (partition 0) at ``position``, as Java's
    ``KafkaStreams.query``: a global store answers UNKNOWN_QUERY_TYPE (Java's IQv2 reads
    no global store), a partition asked that the driver lacks NOT_PRESENT."""
    name = request.get_store_name()
    if name not in stores and name not in global_stores:
        raise unknown_store(name, [*stores, *global_stores])
    out = StateQueryResult()
    if name in global_stores:
        out.set_global_result(QueryResult.for_failure(
            FailureReason.UNKNOWN_QUERY_TYPE, "Global stores do not yet support the query "
            "API (StateQueryRequest). Read them with driver.store(StoreQueryParameters)."))
        return out
    wanted = request.get_partitions()
    if wanted is None or 0 in wanted:
        bound = (PositionBound.unbounded() if request.is_require_active()
                 else request.get_position_bound())
        out.add_result(0, evaluate(request.get_query(), stores[name], position, bound, 0,
                                   collect_execution_info=request.execution_info_enabled()))
    for p in sorted(wanted or ()):
        if p != 0:
            out.add_result(p, QueryResult.for_failure(FailureReason.NOT_PRESENT, _NOT_PRESENT))
    return out


def read_only_store(params: Any, stores: Mapping[str, Any], global_stores: Mapping[str, Any],
                    position: Callable[[bool], Position]) -> Any:
    """The read-only store ``params`` names (an UnknownStateStoreError for a name the
    topology lacks, an InvalidStateStoreError for a store of another type or a partition
    other than 0), reading the store as it is at each call; ``position(is_global)``: the
    store's position then."""
    name, store_type = params.store_name(), params.query_type()
    store = stores.get(name, global_stores.get(name))
    if store is None:
        raise unknown_store(name, [*stores, *global_stores])
    check_store_type(name, store, store_type)
    if params.partition() not in (None, 0):
        raise InvalidStateStoreError(f"The specified partition {params.partition()} for store "
                                     f"{name!r} does not exist: the TopologyTestDriver runs "
                                     f"one task, partition 0")
    is_global = name in global_stores

    def ask(q: Any, partitions: set[int] | None) -> StateQueryResult:
        out = StateQueryResult()
        if is_global:
            out.set_global_result(evaluate(q, store, position(True)))
        elif partitions is None or 0 in partitions:
            out.add_result(0, evaluate(q, store, position(False)))
        return out

    return make_facade(store_type, ask, name)
