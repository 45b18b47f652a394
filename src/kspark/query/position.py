"""How far a store has read its input: :class:`Position` and the bound a query asks for,
:class:`PositionBound` (Java's ``org.apache.kafka.streams.query.Position``/``PositionBound``).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["Position", "PositionBound", "dominates"]


class Position:
    """The offsets a store has seen, per input topic and partition. As Java's, a Position
    is mutable: :meth:`with_component` and :meth:`merge` change it and return it.

    Example:
        >>> p = Position.empty().with_component("in", 0, 5).with_component("in", 0, 3)
        >>> p.get_partition_positions("in")
        {0: 5}
        >>> p.merge(Position.from_map({"in": {1: 2}})).to_map()
        {'in': {0: 5, 1: 2}}
    """

    __hash__ = None  # type: ignore[assignment]  # mutable, as Java's (no hash key)

    def __init__(self, offsets: Mapping[str, Mapping[int, int]] | None = None):
        self._offsets: dict[str, dict[int, int]] = {
            t: {int(p): int(o) for p, o in parts.items()} for t, parts in (offsets or {}).items()}

    @classmethod
    def empty(cls) -> "Position":
        """A position that has seen nothing (Java's ``emptyPosition``)."""
        return cls()

    @classmethod
    def from_map(cls, offsets: Mapping[str, Mapping[int, int]]) -> "Position":
        """A position of ``{topic: {partition: offset}}`` (copied)."""
        return cls(offsets)

    def with_component(self, topic: str, partition: int, offset: int) -> "Position":
        """Record ``offset`` for ``topic``/``partition``, keeping the larger one seen."""
        parts = self._offsets.setdefault(topic, {})
        if partition not in parts or offset > parts[partition]:
            parts[partition] = offset
        return self

    def merge(self, other: "Position | None") -> "Position":
        """Take every offset of ``other`` that is ahead of this position's (or new to it)."""
        if other is not None:
            for topic, parts in other.to_map().items():
                for partition, offset in parts.items():
                    self.with_component(topic, partition, offset)
        return self

    def copy(self) -> "Position":
        return Position(self._offsets)

    def get_topics(self) -> set[str]:
        return set(self._offsets)

    def get_partition_positions(self, topic: str) -> dict[int, int]:
        """``{partition: offset}`` of ``topic`` (empty if the position has none)."""
        return dict(self._offsets.get(topic, {}))

    def is_empty(self) -> bool:
        return not self._offsets

    def to_map(self) -> dict[str, dict[int, int]]:
        """``{topic: {partition: offset}}``, a copy."""
        return {t: dict(parts) for t, parts in self._offsets.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and self._offsets == other.to_map()

    def __repr__(self) -> str:
        return f"Position({self._offsets})"


class PositionBound:
    """The position a store must have reached to answer a query: unbounded (any) or at
    least a given :class:`Position`.

    Example:
        >>> PositionBound.unbounded().is_unbounded()
        True
        >>> PositionBound.at(Position.from_map({"in": {0: 3}})).position().to_map()
        {'in': {0: 3}}
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, position: Position):
        self._position = position

    @classmethod
    def unbounded(cls) -> "PositionBound":
        return cls(Position.empty())

    @classmethod
    def at(cls, position: Position) -> "PositionBound":
        """A bound at ``position`` (a copy of it)."""
        return cls(position.copy())

    def is_unbounded(self) -> bool:
        return self._position.is_empty()

    def position(self) -> Position:
        return self._position

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositionBound) and self._position == other._position

    def __repr__(self) -> str:
        return "PositionBound(unbounded)" if self.is_unbounded() else \
            f"PositionBound(at {self._position.to_map()})"


def dominates(position: Position, bound: PositionBound | Position,
              partition: int | None = None) -> bool:
    """Whether ``position`` has reached ``bound``: every (topic, partition) of the bound is
    in ``position`` with an offset at least the bound's. With ``partition``, only the
    bound's components for that partition count (Java's ``StoreQueryUtils.isPermitted``:
    a store partition answers for its own partition).

    Example:
        >>> at = PositionBound.at(Position.from_map({"in": {0: 3, 1: 9}}))
        >>> p = Position.from_map({"in": {0: 4}})
        >>> dominates(p, at), dominates(p, at, partition=0)
        (False, True)
    """
    return not behind(position, bound, partition)


def behind(position: Position, bound: PositionBound | Position,
           partition: int | None = None) -> list[tuple[str, int, int | None, int]]:
    """``(topic, partition, offset seen or None, offset the bound asks)`` of each component
    where ``position`` is behind ``bound`` (see :func:`dominates`).

    Example:
        >>> behind(Position.empty(), Position.from_map({"in": {0: 3}}))
        [('in', 0, None, 3)]
    """
    wanted = bound.position() if isinstance(bound, PositionBound) else bound
    out = []
    for topic in sorted(wanted.get_topics()):
        seen = position.get_partition_positions(topic)
        for p, offset in sorted(wanted.get_partition_positions(topic).items()):
            if partition is not None and p != partition:
                continue
            if p not in seen or seen[p] < offset:
                out.append((topic, p, seen.get(p), offset))
    return out
