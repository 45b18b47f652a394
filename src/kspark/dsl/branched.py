"""split(): route each record to the first branch whose predicate matches."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine import operators as ops
from kspark._graph.graph import ProcessorSpec

if TYPE_CHECKING:
    from kspark.dsl._upstream import Upstream
    from kspark.dsl.kstream import KStream

__all__ = ["BranchedKStream"]


class BranchedKStream:
    """Returned by :meth:`KStream.split`; add branches, then end with a default or none.

    Branch names are the split's name followed by the branch's name (or its 1-based index).

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
        ...                             value_serde=Serdes.Integer())
        >>> branches = (s.split(name="n-").branch(lambda k, v: v < 0, name="neg")
        ...              .default_branch(name="rest"))
        >>> sorted(branches)
        ['n-neg', 'n-rest']
    """

    def __init__(self, parent: Upstream, name: str | None):
        self._parent = parent  # the split stream
        self._graph = parent.graph
        self._prefix = name or ""
        self._node = name or self._graph.next_name("KSTREAM-BRANCH")
        self._branches: list[tuple[Callable[[Any, Any], bool] | None, str]] = []
        self._graph.add(ProcessorSpec(self._node, functools.partial(ops.BranchProcessor,
                                                                    self._branches),
                                      (parent.node,)))
        self._result: dict[str, KStream] = {}

    def branch(self, predicate: Callable[[Any, Any], bool],
               name: str | None = None) -> BranchedKStream:
        """Records matching ``predicate(key, value)`` (and no earlier branch) go to this branch."""
        self._add(predicate, name)
        return self

    def default_branch(self, name: str | None = None) -> dict[str, KStream]:
        """Records matching no branch go here; returns every branch by name."""
        self._add(None, name, default=True)
        return dict(self._result)

    def no_default_branch(self) -> dict[str, KStream]:
        """Records matching no branch are dropped; returns every branch by name."""
        return dict(self._result)

    def _add(self, predicate: Callable[[Any, Any], bool] | None, name: str | None,
             default: bool = False) -> None:
        from kspark.dsl.kstream import KStream

        number = "0" if default else str(len(self._branches) + 1)
        branch_name = self._prefix + (name or number)
        child = self._graph.next_name("KSTREAM-BRANCHCHILD") if not name else branch_name
        self._graph.add(ProcessorSpec(child, ops.PassThroughProcessor, (self._node,)))
        self._branches.append((predicate, child))
        self._result[branch_name] = KStream(self._graph, child, self._parent.key_serde,
                                            self._parent.value_serde)
