"""What a query answers: one partition's :class:`QueryResult` (a result or a failure, with
the position it was answered at) and the :class:`StateQueryResult` of every partition asked.
"""

from __future__ import annotations

import enum
from typing import Any

from kspark.errors import InvalidStateStoreError
from kspark.query.position import Position, PositionBound

__all__ = ["FailureReason", "QueryResult", "StateQueryResult"]


class FailureReason(enum.Enum):
    """Why a partition did not answer (Java's ``FailureReason``)."""

    NOT_ACTIVE = "NOT_ACTIVE"  # require_active, and the partition's task is not active
    NOT_PRESENT = "NOT_PRESENT"  # the partition asked for is not on the instance asked
    DOES_NOT_EXIST = "DOES_NOT_EXIST"  # the partition asked for does not exist
    NOT_UP_TO_BOUND = "NOT_UP_TO_BOUND"  # the store is behind the query's position bound
    UNKNOWN_QUERY_TYPE = "UNKNOWN_QUERY_TYPE"  # the store cannot answer this kind of query
    STORE_EXCEPTION = "STORE_EXCEPTION"  # the store raised while answering


class QueryResult:
    """One partition's answer: :meth:`get_result` on a success; the reason and message of a
    failure; the store's position; execution info when it was asked for.

    Example:
        >>> r = QueryResult.for_result(3)
        >>> r.is_success(), r.get_result()
        (True, 3)
        >>> f = QueryResult.for_failure(FailureReason.NOT_ACTIVE, "restoring")
        >>> f.get_failure_reason().name, f.get_failure_message()
        ('NOT_ACTIVE', 'restoring')
        >>> f.get_result()
        Traceback (most recent call last):
        ...
        kspark.errors.InvalidStateStoreError: Cannot get result for failed query. Failure is \
NOT_ACTIVE: restoring
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, result: Any = None, reason: FailureReason | None = None,
                 message: str | None = None, position: Position | None = None,
                 execution_info: list[str] | None = None):
        self._result, self._reason, self._message = result, reason, message
        self._position = position
        self._info = list(execution_info or [])

    @classmethod
    def for_result(cls, value: Any) -> "QueryResult":
        return cls(value)

    @classmethod
    def for_failure(cls, reason: FailureReason, message: str) -> "QueryResult":
        return cls(None, FailureReason(reason), message)

    @classmethod
    def for_unknown_query_type(cls, query: Any, store: Any) -> "QueryResult":
        """UNKNOWN_QUERY_TYPE: ``store`` cannot answer ``query``."""
        name = store.name() if callable(getattr(store, "name", None)) else "?"
        return cls.for_failure(
            FailureReason.UNKNOWN_QUERY_TYPE,
            f"This store ({type(store).__name__} {name!r}) doesn't know how to execute the "
            f"given query ({query!r}). Contact the store maintainer if you need support for "
            f"a new query type.")

    @classmethod
    def not_up_to_bound(cls, position: Position, bound: PositionBound,
                        partition: int | None) -> "QueryResult":
        """NOT_UP_TO_BOUND: the store at ``position`` has not reached ``bound``."""
        if partition is None:
            return cls.for_failure(FailureReason.NOT_UP_TO_BOUND,
                                   f"The store is not initialized yet, so it is not yet up "
                                   f"to the bound {bound}")
        return cls.for_failure(FailureReason.NOT_UP_TO_BOUND,
                               f"For store partition {partition}, the current position "
                               f"{position} is not yet up to the bound {bound}")

    def is_success(self) -> bool:
        return self._reason is None

    def is_failure(self) -> bool:
        return self._reason is not None

    def get_result(self) -> Any:
        """The answer; an InvalidStateStoreError with the failure's message on a failure."""
        if self._reason is not None:
            raise InvalidStateStoreError(f"Cannot get result for failed query. Failure is "
                                         f"{self._reason.name}: {self._message}")
        return self._result

    def get_failure_reason(self) -> FailureReason:
        """Why the partition failed (an InvalidStateStoreError on a success)."""
        if self._reason is None:
            raise InvalidStateStoreError("Cannot get failure reason for successful query")
        return self._reason

    def get_failure_message(self) -> str:
        """What went wrong (an InvalidStateStoreError on a success)."""
        if self._reason is None:
            raise InvalidStateStoreError("Cannot get failure message for successful query")
        return self._message or ""

    def get_position(self) -> Position:
        """The position the store answered at (empty if none was set)."""
        return self._position if self._position is not None else Position.empty()

    def set_position(self, position: Position | None) -> None:
        self._position = position

    def get_execution_info(self) -> list[str]:
        return list(self._info)

    def add_execution_info(self, text: str) -> None:
        self._info.append(text)

    def __repr__(self) -> str:
        what = (f"result={self._result!r}" if self._reason is None
                else f"failure={self._reason.name}: {self._message}")
        return f"QueryResult({what}, position={self._position})"


class StateQueryResult:
    """The answers of every partition asked (or of a global store).

    Example:
        >>> s = StateQueryResult()
        >>> s.add_result(0, QueryResult.for_result(None))
        >>> r = QueryResult.for_result(4); r.set_position(Position.from_map({"t": {1: 9}}))
        >>> s.add_result(1, r)
        >>> s.get_only_partition_result().get_result(), s.get_position().to_map()
        (4, {'t': {1: 9}})
    """

    def __init__(self) -> None:
        self._partitions: dict[int, QueryResult] = {}
        self._global: QueryResult | None = None

    def add_result(self, partition: int, result: QueryResult) -> None:
        self._partitions[partition] = result

    def set_global_result(self, result: QueryResult) -> None:
        self._global = result

    def get_partition_results(self) -> dict[int, QueryResult]:
        return self._partitions

    def get_global_result(self) -> QueryResult | None:
        return self._global

    def get_only_partition_result(self) -> QueryResult | None:
        """The one successful partition result that is not None (None if there is none;
        an InvalidStateStoreError if there are several)."""
        found = [r for r in self._partitions.values()
                 if r.is_success() and r.get_result() is not None]
        if len(found) > 1:
            raise InvalidStateStoreError(f"The query did not return exactly one partition "
                                         f"result: {self._partitions}")
        return found[0] if found else None

    def get_position(self) -> Position:
        """The global result's position, or the merge of every partition result's (as
        Java's, failed partitions' too: a result not up to its bound says where it is)."""
        if self._global is not None:
            return self._global.get_position().copy()
        merged = Position.empty()
        for r in self._partitions.values():
            merged.merge(r.get_position())
        return merged

    def __repr__(self) -> str:
        return f"StateQueryResult(partitions={self._partitions}, global={self._global})"
