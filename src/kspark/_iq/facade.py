"""``KafkaStreams.store(...)``: a read-only store (IQv1) over the workers' answers.

A single-key read asks the key's partition first (the default partitioner over the key
as the store's key serde writes it); if that partition has nothing for the key, the
others are asked too (a topology fed through a custom partitioner keeps keys elsewhere),
so a read finds what Java's composite store finds.
"""

from __future__ import annotations

from typing import Any

from kspark._engine.partitioner import default_partition
from kspark._engine.query.facades import ReadOnlyStore
from kspark._engine.query.types import check_store_type
from kspark._engine.query.window_facades import make_facade
from kspark.query import KeyQuery, StateQueryRequest, StateQueryResult, TimestampedKeyQuery
from kspark.query import VersionedKeyQuery

__all__ = ["remote_store"]

_SINGLE_KEY = (KeyQuery, TimestampedKeyQuery, VersionedKeyQuery)


def _found_nothing(result: StateQueryResult) -> bool:
    parts = result.get_partition_results().values()
    return all(r.is_success() and r.get_result() is None for r in parts)


def remote_store(client: Any, parameters: Any) -> ReadOnlyStore:
    """The read-only store ``parameters`` (StoreQueryParameters) names, answered through
    ``client`` (a QueryClient)."""
    info = client.info(parameters.store_name())
    check_store_type(info.name, info.codec, parameters.query_type())
    fixed, stale = parameters.partition(), parameters.stale_stores_enabled()

    def ask(query: Any, partitions: set[int] | None) -> StateQueryResult:
        wanted = {fixed} if fixed is not None else partitions
        request = StateQueryRequest.in_store(info.name).with_query(query)
        if wanted is not None:
            request = request.with_partitions(wanted)
        result = client.query(request, stale=stale)
        narrowed = fixed is None and partitions is not None
        if narrowed and isinstance(query, _SINGLE_KEY) and _found_nothing(result):
            rest = set(range(info.tasks)) - set(partitions or ())
            if rest:
                return client.query(request.with_partitions(rest), stale=stale)
        return result

    def partition_of(key: Any) -> int | None:
        if fixed is not None or info.tasks == 1:
            return None
        raw = info.codec.key_serde.serialize(info.changelog or info.name, key)
        return default_partition(raw, info.tasks)

    return make_facade(parameters.query_type(), ask, info.name, partition_of)
