"""KStream's joins (a mixin of :class:`~kspark.dsl.kstream.KStream`): with a table, a
global table or another stream, in Java's forms; the graph of a stream-stream join is
written by :mod:`kspark.dsl._stream_joins`."""

# ruff: noqa: SLF001 - a mixin of KStream: the streams it reaches into are KStreams

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.joins import stream_table as ops_joins
from kspark._graph.naming import processor_name
from kspark.dsl import _forms as f
from kspark.dsl._overloads import bind
from kspark.dsl._upstream import Upstream, copartition, relax_null_keys

if TYPE_CHECKING:
    from kspark.dsl.kstream import KStream

__all__ = ["JoinSteps"]


class JoinSteps:
    """``join``, ``left_join`` and ``outer_join`` of a KStream."""

    _graph: Any
    _node: str
    _key_serde: Any
    _value_serde: Any
    _repartition_required: bool
    _repartitioned: Callable[..., Any]
    _through_repartition: Callable[..., Any]
    _then: Callable[..., Any]

    def join(self, *args: Any, **kwargs: Any) -> "KStream":
        """Join each record with a partner, in Java's three forms:

        - ``join(table, joiner[, joined])``: the table's current value for the record's key,
          ``joiner(value, table_value)``. The stream is repartitioned first if an earlier
          step changed its key (with ``joined``'s serdes, a :class:`~kspark.dsl.Joined`);
          stream and table topics must be co-partitioned (checked at start).
        - ``join(other_stream, joiner, join_windows[, stream_joined])``: a windowed
          stream-stream join.
        - ``join(global_table, key_selector, joiner[, named])``: each record joins the row
          ``key_selector(key, value)`` names, with no repartition and no co-partitioning.

        Anything else (say, a ``Joined`` where the join windows go) is a TypeError listing
        these forms.
        """
        return self._join("join", args, kwargs, left=False)

    def _join(self, call: str, args: tuple, kwargs: dict, left: bool) -> "KStream":
        a = bind(f"KStream.{call}", f.stream_join_forms(call, True, False), args, kwargs)
        other = a["other"]
        if a["form"] == 0:
            joined = a["joined"]
            if a["name"]:
                from kspark.dsl.joined import StreamJoined

                joined = (joined or StreamJoined()).with_name(a["name"])
            return self._stream_join(other, a["joiner"], a["windows"],
                                     "left" if left else "inner", joined)
        if a["form"] == 1:
            return self._table_join(other, a["joiner"], a["joined"], left, a["name"])
        return self._global_join(other, a["key_selector"], a["joiner"], left,
                                 f.named_of(a["named"]))

    def _table_join(self, table: Any, joiner: Callable[[Any, Any], Any], joined: Any,
                    left: bool, name: str | None) -> "KStream":
        from kspark.dsl._stream_joins import add_grace_buffer, check_table_join

        # How a table's rows are read is the DSL's own business: Kafka keeps it on KTableImpl
        # (valueGetterSupplier), not on the KTable interface; here it stays private to KTable.
        getter, node, versioned = table._join_side()  # noqa: SLF001 - see above
        ks = None if joined is None else joined.key_serde
        vs = None if joined is None else joined.value_serde
        grace = None if joined is None else joined.grace_ms
        check_table_join(self._graph, getter, node, versioned, grace)
        name = name or (None if joined is None else joined.name)
        stream: KStream = (self._through_repartition(  # named for the join, or this node
            name or self._node, ks if ks is not None else self._key_serde,
            vs if vs is not None else self._value_serde, for_join=True)
            if self._repartition_required else self)
        if left:
            relax_null_keys(self._graph, stream._node)
        prefix = "KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN"
        name = processor_name(self._graph, prefix, name)
        buffer = None if grace is None else f"{name}-Buffer"
        out = stream._then(prefix, functools.partial(
            ops_joins.StreamTableJoinProcessor, getter, joiner, left, grace, buffer), name,
            stream._key_serde, None, keep_serdes=False, stores=tuple(getter.stores), burn=False)
        if buffer is not None:
            add_grace_buffer(self._graph, buffer, name, ks or stream._key_serde,
                             vs if vs is not None else stream._value_serde)
        copartition(self._graph, stream._node, node)
        return out

    def _global_join(self, table: Any, key_selector: Any, joiner: Any, left: bool,
                     name: str | None) -> "KStream":
        if left:
            relax_null_keys(self._graph, self._node)
        # Java's name for both kinds
        return self._then("KSTREAM-LEFTJOIN", functools.partial(
            ops_joins.GlobalTableJoinProcessor, table.store_name, key_selector, joiner, left),
            name, self._key_serde, None, keep_serdes=False)

    def left_join(self, *args: Any, **kwargs: Any) -> "KStream":
        """Like :meth:`join` (the same three forms), but records without a partner are
        joined with None (for a stream, once their join window has closed)."""
        return self._join("left_join", args, kwargs, left=True)

    def outer_join(self, *args: Any, **kwargs: Any) -> "KStream":
        """Windowed stream-stream outer join: unpartnered records of either side join None:
        ``outer_join(other_stream, joiner, join_windows[, stream_joined])``."""
        a = bind("KStream.outer_join", f.stream_join_forms("outer_join", False, True),
                 args, kwargs)
        return self._stream_join(a["other"], a["joiner"], a["windows"], "outer", a["joined"])

    def _stream_join(self, other: KStream, joiner: Callable[[Any, Any], Any], windows: Any,
                     kind: str, joined: Any) -> "KStream":
        from kspark.dsl._stream_joins import stream_stream_join
        from kspark.dsl.joined import StreamJoined

        sj = joined or StreamJoined()
        ks = sj.key_serde
        this_vs = sj.value_serde if sj.value_serde is not None else self._value_serde
        that_vs = (sj.other_value_serde if sj.other_value_serde is not None
                   else other._value_serde)
        left: KStream = (self._through_repartition(  # Java's names: see StreamJoined.with_name
            f"{sj.name}-left" if sj.name else self._node,
            ks if ks is not None else self._key_serde, this_vs, for_join=True)
            if self._repartition_required else self)
        right: KStream = (other._through_repartition(
            f"{sj.name}-right" if sj.name else other._node,
            ks if ks is not None else other._key_serde, that_vs, for_join=True)
            if other._repartition_required else other)
        merge = stream_stream_join(
            Upstream(self._graph, left._node, ks if ks is not None else left._key_serde, this_vs),
            Upstream(self._graph, right._node, ks if ks is not None else right._key_serde,
                     that_vs), joiner, windows, kind, sj)
        from kspark.dsl.kstream import KStream

        return KStream(self._graph, merge, self._key_serde, None)
