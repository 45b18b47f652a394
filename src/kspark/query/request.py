"""What to ask which store: :class:`StateQueryRequest` (Java's ``StateQueryRequest``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from kspark.query.position import PositionBound

__all__ = ["StateQueryRequest"]


@dataclass(frozen=True)
class _InStore:
    name: str

    def with_query(self, query: Any) -> "StateQueryRequest":
        """The request of ``query`` to this store (all partitions, unbounded)."""
        return StateQueryRequest(self.name, query)


@dataclass(frozen=True, eq=False)
class StateQueryRequest:
    """A query to store ``name``: which partitions (all by default), the position bound
    the answer must reach, whether only active tasks answer, whether to collect execution
    info. Every ``with_*`` returns a new request.

    Example:
        >>> from kspark.query import KeyQuery
        >>> r = StateQueryRequest.in_store("counts").with_query(KeyQuery.with_key("a"))
        >>> r.get_store_name(), r.is_all_partitions(), r.get_partitions()
        ('counts', True, None)
        >>> r = r.with_partitions({0, 2}).require_active()
        >>> sorted(r.get_partitions()), r.is_require_active(), r.execution_info_enabled()
        ([0, 2], True, False)
    """

    store_name: str
    query: Any
    partitions: frozenset[int] | None = None
    position_bound: PositionBound | None = None
    active_only: bool = False
    execution_info: bool = False

    @staticmethod
    def in_store(name: str) -> _InStore:
        """Start a request to store ``name``: follow with ``.with_query(query)``."""
        return _InStore(name)

    def with_all_partitions(self) -> "StateQueryRequest":
        return replace(self, partitions=None)

    def with_partitions(self, partitions: Iterable[int]) -> "StateQueryRequest":
        return replace(self, partitions=frozenset(int(p) for p in partitions))

    def with_position_bound(self, bound: PositionBound) -> "StateQueryRequest":
        return replace(self, position_bound=bound)

    def require_active(self) -> "StateQueryRequest":
        return replace(self, active_only=True)

    def enable_execution_info(self) -> "StateQueryRequest":
        return replace(self, execution_info=True)

    def get_store_name(self) -> str:
        return self.store_name

    def get_query(self) -> Any:
        return self.query

    def get_partitions(self) -> frozenset[int] | None:
        """The partitions asked; None: all of them."""
        return self.partitions

    def is_all_partitions(self) -> bool:
        return self.partitions is None

    def get_position_bound(self) -> PositionBound:
        return self.position_bound or PositionBound.unbounded()

    def is_require_active(self) -> bool:
        return self.active_only

    def execution_info_enabled(self) -> bool:
        return self.execution_info
