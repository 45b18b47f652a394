"""split(): route each record to the first branch whose predicate matches."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kspark._engine import operators as ops
from kspark._graph.graph import ProcessorSpec

if TYPE_CHECKING:
    from kspark.dsl._upstream import Upstream
    from kspark.dsl.kstream import KStream

__all__ = ["BranchedKStream", "Branched"]


@dataclass(frozen=True)
class Branched:
    """A branch's name and what to do with its stream (Java's ``Branched``):
    ``Branched.as_(name)``, ``Branched.with_function(fn[, name])`` (the branch's entry
    is ``fn(stream)``; none if that is None) or ``Branched.with_consumer(fn[, name])``
    (``fn(stream)`` is called; the branch has no entry).

    Example:
        >>> Branched.with_consumer(lambda s: None, "audit").name
        'audit'
    """

    name: str | None = None
    function: Callable[[Any], Any] | None = None
    consumer: bool = False

    @staticmethod
    def as_(name: str) -> "Branched":
        return Branched(_name(name))

    @staticmethod
    def with_function(fn: Callable[[Any], Any], name: str | None = None) -> "Branched":
        return Branched(None if name is None else _name(name), _one_arg(fn, "with_function"))

    @staticmethod
    def with_consumer(fn: Callable[[Any], Any], name: str | None = None) -> "Branched":
        return Branched(None if name is None else _name(name), _one_arg(fn, "with_consumer"),
                        consumer=True)


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a branch name must be a non-empty str, got {name!r}")
    return name


def _one_arg(fn: Any, call: str) -> Callable[[Any], Any]:
    from kspark.dsl._overloads import describe, takes

    if not callable(fn) or not takes(fn, 1):
        raise TypeError(f"Branched.{call}() takes a function of the branch's KStream, got "
                        f"{describe(fn)}")
    return fn


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

    def branch(self, predicate: Callable[[Any, Any], bool], branched: Any = None, *,
               name: str | None = None) -> BranchedKStream:
        """Records matching ``predicate(key, value)`` (and no earlier branch) go to this
        branch: ``branch(predicate[, branched])`` (a :class:`Branched`, or its name)."""
        from kspark.dsl._overloads import describe, takes

        if not callable(predicate) or not takes(predicate, 2):
            raise TypeError("BranchedKStream.branch() takes predicate(key, value)[, branched], "
                            f"got {describe(predicate)} first")
        self._add(predicate, _branched(branched, name))
        return self

    def default_branch(self, branched: Any = None, *,
                       name: str | None = None) -> dict[str, KStream]:
        """Records matching no branch go here (``default_branch([branched])``); returns every
        branch by name."""
        self._add(None, _branched(branched, name), default=True)
        return dict(self._result)

    def no_default_branch(self) -> dict[str, KStream]:
        """Records matching no branch are dropped; returns every branch by name."""
        return dict(self._result)

    def _add(self, predicate: Callable[[Any, Any], bool] | None, branched: Branched,
             default: bool = False) -> None:
        from kspark.dsl.kstream import KStream

        name = branched.name
        number = "0" if default else str(len(self._branches) + 1)
        branch_name = self._prefix + (name or number)
        child = self._graph.next_name("KSTREAM-BRANCHCHILD") if not name else branch_name
        self._graph.add(ProcessorSpec(child, ops.PassThroughProcessor, (self._node,)))
        self._branches.append((predicate, child))
        stream = KStream(self._graph, child, self._parent.key_serde, self._parent.value_serde)
        if branched.function is None:
            self._result[branch_name] = stream
        else:
            out = branched.function(stream)
            if not branched.consumer and out is not None:
                self._result[branch_name] = out


def _branched(branched: Any, name: str | None) -> Branched:
    if isinstance(branched, Branched):
        if name is not None:
            raise TypeError("give a branch's name once: in Branched, or as name=")
        return branched
    if branched is None or isinstance(branched, str):
        return Branched(branched or name)
    from kspark.dsl._overloads import describe

    raise TypeError(f"a branch takes a Branched (Branched.as_, with_function, with_consumer) or "
                    f"a name, got {describe(branched)}")
