"""KStream: a record stream, and its stateless operations.

Its async steps and ``delay`` come from :class:`~kspark.dsl._async_steps.AsyncSteps`; the
graph of its joins is written by :mod:`kspark.dsl._stream_joins`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine import operators as ops
from kspark._engine.joins import stream_table as ops_joins
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark.dsl._async_steps import AsyncSteps
from kspark.dsl._upstream import Upstream, copartition, relax_null_keys
from kspark.errors import TopologyError

if TYPE_CHECKING:
    from kspark.dsl.branched import BranchedKStream
    from kspark.dsl.grouped import KGroupedStream
    from kspark.dsl.ktable import KTable
    from kspark.dsl.materialized import Materialized

__all__ = ["KStream"]


class KStream(AsyncSteps):
    """An unbounded stream of key-value records; each method adds a node and returns a new
    KStream.

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
        ...                             value_serde=Serdes.String())
        >>> s.filter(lambda k, v: v != "").map_values(str.upper).to("out")
    """

    def __init__(self, graph: TopologyGraph, node: str, key_serde: Any, value_serde: Any,
                 repartition_required: bool = False):
        self._graph = graph
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        # The key may have changed since the last source/repartition: a key-based operation
        # must repartition first, as Kafka Streams does.
        self._repartition_required = repartition_required

    def _then(self, prefix: str, supplier: Callable[[], Any], name: str | None = None,
              key_serde: Any = None, value_serde: Any = None, keep_serdes: bool = True, *,
              key_changing: bool = False, stores: tuple[str, ...] = ()) -> KStream:
        """Add a processor node after this stream, connected to ``stores``. ``key_changing``
        declares that it may change keys: the node says so, and a later key-based step
        repartitions first."""
        name = name or self._graph.next_name(prefix)
        spec = ProcessorSpec(name, supplier, (self._node,), key_changing)
        self._graph.add(spec)
        if stores:
            self._graph.connect((name,), stores)
        if keep_serdes:
            key_serde, value_serde = self._key_serde, self._value_serde
        return KStream(self._graph, name, key_serde, value_serde,
                       self._repartition_required or spec.key_changing)

    def filter(self, predicate: Callable[[Any, Any], bool], name: str | None = None) -> KStream:
        """Keep the records for which ``predicate(key, value)`` is true."""
        return self._then("KSTREAM-FILTER", functools.partial(ops.FilterProcessor, predicate), name)

    def filter_not(self, predicate: Callable[[Any, Any], bool],
                   name: str | None = None) -> KStream:
        """Drop the records for which ``predicate(key, value)`` is true."""
        return self._then("KSTREAM-FILTER",
                          functools.partial(ops.FilterProcessor, predicate, True), name)

    def map_values(self, fn: Callable[[Any], Any], name: str | None = None, *,
                   with_key: bool = False) -> KStream:
        """Replace each value by ``fn(value)``; ``with_key=True`` calls ``fn(key, value)``."""
        sup = functools.partial(ops.MapValuesProcessor, fn, with_key)
        return self._then("KSTREAM-MAPVALUES", sup, name, self._key_serde, None, keep_serdes=False)

    def map(self, fn: Callable[[Any, Any], tuple[Any, Any]], name: str | None = None) -> KStream:
        """Replace each record's key and value by ``fn(key, value) -> (key2, value2)``."""
        return self._then("KSTREAM-MAP", functools.partial(ops.MapProcessor, fn), name,
                          keep_serdes=False, key_changing=True)

    def flat_map(self, fn: Callable[[Any, Any], Any], name: str | None = None) -> KStream:
        """Replace each record by the ``(key, value)`` pairs of ``fn(key, value)`` (zero or
        more)."""
        return self._then("KSTREAM-FLATMAP", functools.partial(ops.FlatMapProcessor, fn), name,
                          keep_serdes=False, key_changing=True)

    def flat_map_values(self, fn: Callable[..., Any], name: str | None = None, *,
                        with_key: bool = False) -> KStream:
        """Replace each record by one record per value of ``fn(value)`` (``fn(key, value)``
        with_key)."""
        sup = functools.partial(ops.FlatMapProcessor, fn, True, with_key)
        return self._then("KSTREAM-FLATMAPVALUES", sup, name, self._key_serde, None,
                          keep_serdes=False)

    def select_key(self, fn: Callable[[Any, Any], Any], name: str | None = None) -> KStream:
        """Set each record's key to ``fn(key, value)`` (a later key-based step repartitions)."""
        return self._then("KSTREAM-KEY-SELECT", functools.partial(ops.SelectKeyProcessor, fn),
                          name, None, self._value_serde, keep_serdes=False, key_changing=True)

    def split(self, name: str | None = None) -> "BranchedKStream":
        """Start routing records to branches:
        ``split().branch(pred, name=...).default_branch()``."""
        from kspark.dsl.branched import BranchedKStream

        return BranchedKStream(Upstream(self._graph, self._node, self._key_serde,
                                        self._value_serde), name)

    def branch(self, *predicates: Callable[[Any, Any], bool]) -> list[KStream]:
        """The seed's (KIP-28) branch: one stream per predicate; a record goes to the first
        match."""
        b = self.split()
        for p in predicates:
            b.branch(p)
        return list(b.no_default_branch().values())

    def merge(self, other: KStream, name: str | None = None) -> KStream:
        """One stream with the records of both streams."""
        name = name or self._graph.next_name("KSTREAM-MERGE")
        self._graph.add(ProcessorSpec(name, ops.PassThroughProcessor, (self._node, other._node)))
        return KStream(self._graph, name,
                       self._key_serde if self._key_serde == other._key_serde else None,
                       self._value_serde if self._value_serde == other._value_serde else None)

    def process(self, processor_supplier: Callable[[], Any], *store_names: str,
                name: str | None = None) -> KStream:
        """Run a Processor API processor (``processor_supplier()`` makes one per task).

        ``store_names`` name stores added with ``StreamsBuilder.add_state_store`` that the
        processor may use through ``context.get_state_store(name)``.
        """
        return self._then("KSTREAM-PROCESSOR", processor_supplier, name, keep_serdes=False,
                          stores=store_names)

    def process_values(self, processor_supplier: Callable[[], Any], *store_names: str,
                       name: str | None = None) -> KStream:
        """Run a processor that may change values, timestamps and headers but not keys (Kafka
        Streams' FixedKeyProcessor), so no repartition follows; forwarding another key while
        processing a record is a ProcessorError.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> from kspark.processor import Processor
            >>> class Tag(Processor):
            ...     def init(self, context): self.context = context
            ...     def process(self, record):
            ...         self.context.forward(record.with_value(f"{record.value}!"))
            >>> s = StreamsBuilder().stream("in", key_serde=Serdes.String(),
            ...                             value_serde=Serdes.String())
            >>> tagged = s.process_values(Tag)
        """
        from kspark._engine.values import FixedKeyProcessor

        node = name or self._graph.next_name("KSTREAM-PROCESSVALUES")
        return self._then("KSTREAM-PROCESSVALUES", functools.partial(
            FixedKeyProcessor, processor_supplier, node), node, self._key_serde, None,
            keep_serdes=False, stores=store_names)

    def to_table(self, materialized: Materialized | None = None, *,
                 name: str | None = None) -> KTable:
        """This stream as a table (KIP-523): each record upserts its key, a null value deletes
        it; records with a null key are dropped. Repartitions first if the key changed.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> latest = b.stream("prices", key_serde=Serdes.String(),
            ...                   value_serde=Serdes.Double()).to_table()
        """
        from kspark._engine.tables.processors import Switch, TableSourceProcessor
        from kspark.dsl.ktable import KTable
        from kspark.dsl.materialized import Materialized

        m = materialized or Materialized()
        ks = m.key_serde if m.key_serde is not None else self._key_serde
        vs = m.value_serde if m.value_serde is not None else self._value_serde
        stream: KStream = (self.repartition(key_serde=ks, value_serde=vs)
                           if self._repartition_required else self)
        g = self._graph
        node = name or g.next_name("KSTREAM-TOTABLE")
        store = m.store_name or f"{node}-STATE-STORE"
        source = Switch()
        g.add(ProcessorSpec(node, functools.partial(TableSourceProcessor, store, source),
                            (stream._node,)))
        g.add_store(m.builder(store, ks, vs), (node,))
        return KTable(g, node, ks, vs, store, queryable=m.store_name is not None, source=source)

    def print(self, label: str | None = None, name: str | None = None) -> None:
        """Print each record as ``[label]: key, value`` (label defaults to the node's name)."""
        tag = label or self._node
        self.foreach(lambda k, v: print(f"[{tag}]: {k}, {v}", flush=True), name)

    def through(self, topic: str, *, key_serde: Any = None, value_serde: Any = None,
                partitioner: Callable[..., int | None] | None = None) -> KStream:
        """The seed's through(): write to ``topic`` and continue from what is read back from
        it."""
        self.to(topic, key_serde=key_serde, value_serde=value_serde, partitioner=partitioner)
        return self._source_of(topic, key_serde, value_serde, internal=False)

    def repartition(self, *, key_serde: Any = None, value_serde: Any = None,
                    name: str | None = None,
                    partitioner: Callable[..., int | None] | None = None) -> KStream:
        """Redistribute records by key through ``<application.id>-<name>-repartition``.

        Records with a null key are dropped first (Kafka Streams' ``-repartition-filter``),
        here and in the repartitions before ``group_by`` and joins, unless a left or outer
        join downstream wants them (KIP-962: Java 4.1 keeps them then, and so does kspark)."""
        return self._repartitioned(key_serde, value_serde, name, partitioner)

    def _repartitioned(self, key_serde: Any, value_serde: Any, name: str | None,
                       partitioner: Callable[..., int | None] | None) -> KStream:
        from kspark._engine.tables.processors import Switch

        base = name or self._graph.next_name("KSTREAM-REPARTITION")
        topic = f"{base}-repartition"
        ks = key_serde if key_serde is not None else self._key_serde
        vs = value_serde if value_serde is not None else self._value_serde
        keyed = f"{topic}-filter"
        keep = self._graph.null_key_filters[keyed] = Switch()
        self._graph.add(ProcessorSpec(keyed, functools.partial(ops.NullKeyFilter, keep),
                                      (self._node,)))
        self._graph.add(SinkSpec(self._graph.next_name("KSTREAM-SINK"), topic, (keyed,),
                                 ks, vs, partitioner, internal=True))
        return self._source_of(topic, ks, vs, internal=True)

    def _source_of(self, topic: str, key_serde: Any, value_serde: Any,
                   internal: bool) -> KStream:
        ks = key_serde if key_serde is not None else self._key_serde
        vs = value_serde if value_serde is not None else self._value_serde
        src = self._graph.next_name("KSTREAM-SOURCE")
        self._graph.add(SourceSpec(src, (topic,), ks, vs, internal=internal))
        return KStream(self._graph, src, ks, vs)

    def join(self, table: Any, joiner: Callable[[Any, Any], Any], windows: Any = None,
             joined: Any = None, *, left: bool = False, name: str | None = None) -> KStream:
        """Join each record with ``table``'s current value for its key:
        ``joiner(value, table_value)``.

        The stream is repartitioned first if an earlier step changed its key (with
        ``joined``'s serdes, a :class:`~kspark.dsl.Joined`); stream and table topics must be
        co-partitioned (checked at start). With another KStream and ``JoinWindows``, a
        windowed stream-stream join (``joined``: a :class:`~kspark.dsl.StreamJoined`). With a
        :class:`~kspark.dsl.GlobalKTable`, as in Java ``join(global_table, key_selector,
        joiner)``: each record joins the row ``key_selector(key, value)`` names, with no
        repartition and no co-partitioning.
        """
        from kspark.dsl.global_table import GlobalKTable

        if isinstance(table, GlobalKTable):
            return self._global_join(table, joiner, windows, left, name)
        if isinstance(table, KStream):
            return self._stream_join(table, joiner, windows, "inner", joined)
        return self._table_join(table, joiner, joined, left, name)

    def _table_join(self, table: Any, joiner: Callable[[Any, Any], Any], joined: Any,
                    left: bool, name: str | None) -> KStream:
        from kspark.dsl._stream_joins import add_grace_buffer, check_table_join

        # How a table's rows are read is the DSL's own business: Kafka keeps it on KTableImpl
        # (valueGetterSupplier), not on the KTable interface; here it stays private to KTable.
        getter, node, versioned = table._join_side()  # noqa: SLF001 - see above
        ks = None if joined is None else joined.key_serde
        vs = None if joined is None else joined.value_serde
        grace = None if joined is None else joined.grace_ms
        check_table_join(self._graph, getter, node, versioned, grace)
        stream: KStream = (self._repartitioned(ks, vs, None, None)
                           if self._repartition_required else self)
        if left:
            relax_null_keys(self._graph, stream._node)
        name = name or self._graph.next_name("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN")
        buffer = None if grace is None else f"{name}-Buffer"
        out = stream._then("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN", functools.partial(
            ops_joins.StreamTableJoinProcessor, getter, joiner, left, grace, buffer), name,
            stream._key_serde, None, keep_serdes=False, stores=tuple(getter.stores))
        if buffer is not None:
            add_grace_buffer(self._graph, buffer, name, ks or stream._key_serde,
                             vs if vs is not None else stream._value_serde)
        copartition(self._graph, stream._node, node)
        return out

    def _global_join(self, table: Any, key_selector: Any, joiner: Any, left: bool,
                     name: str | None) -> KStream:
        if not callable(key_selector) or not callable(joiner):
            raise TopologyError("a join with a GlobalKTable takes (global_table, key_selector, "
                                "joiner): key_selector(key, value) -> the table's key, "
                                "joiner(value, table_value) -> the result")
        if left:
            relax_null_keys(self._graph, self._node)
        name = name or self._graph.next_name("KSTREAM-LEFTJOIN")  # Java's name for both kinds
        return self._then("KSTREAM-LEFTJOIN", functools.partial(
            ops_joins.GlobalTableJoinProcessor, table.store_name, key_selector, joiner, left),
            name, self._key_serde, None, keep_serdes=False)

    def left_join(self, other: Any, joiner: Callable[[Any, Any], Any], windows: Any = None,
                  joined: Any = None, *, name: str | None = None) -> KStream:
        """Like :meth:`join`, but records without a partner are joined with None (for a
        stream, once their join window has closed)."""
        from kspark.dsl.global_table import GlobalKTable

        if isinstance(other, GlobalKTable):
            return self._global_join(other, joiner, windows, True, name)
        if isinstance(other, KStream):
            return self._stream_join(other, joiner, windows, "left", joined)
        return self.join(other, joiner, joined=joined, left=True, name=name)

    def outer_join(self, other: KStream, joiner: Callable[[Any, Any], Any],
                   windows: Any, joined: Any = None) -> KStream:
        """Windowed stream-stream outer join: unpartnered records of either side join None."""
        return self._stream_join(other, joiner, windows, "outer", joined)

    def _stream_join(self, other: KStream, joiner: Callable[[Any, Any], Any], windows: Any,
                     kind: str, joined: Any) -> KStream:
        from kspark.dsl._stream_joins import stream_stream_join
        from kspark.dsl.joined import StreamJoined

        if windows is None:
            raise TopologyError("a stream-stream join needs JoinWindows")
        sj = joined or StreamJoined()
        ks = sj.key_serde
        this_vs = sj.value_serde if sj.value_serde is not None else self._value_serde
        that_vs = (sj.other_value_serde if sj.other_value_serde is not None
                   else other._value_serde)
        left: KStream = (self._repartitioned(ks, this_vs, None, None)
                         if self._repartition_required else self)
        right: KStream = (other._repartitioned(ks, that_vs, None, None)
                          if other._repartition_required else other)
        merge = stream_stream_join(
            Upstream(self._graph, left._node, ks if ks is not None else left._key_serde, this_vs),
            Upstream(self._graph, right._node, ks if ks is not None else right._key_serde,
                     that_vs), joiner, windows, kind, sj)
        return KStream(self._graph, merge, self._key_serde, None)

    def group_by_key(self, *, key_serde: Any = None,
                     value_serde: Any = None) -> KGroupedStream:
        """Group by the current key (repartitioning first if an earlier step changed it)."""
        from kspark.dsl.grouped import KGroupedStream

        ks = key_serde if key_serde is not None else self._key_serde
        vs = value_serde if value_serde is not None else self._value_serde
        stream: KStream = (self.repartition(key_serde=ks, value_serde=vs,
                                            name=self._graph.next_name("KSTREAM-AGGREGATE"))
                           if self._repartition_required else self)
        return KGroupedStream(Upstream(self._graph, stream._node, ks, vs))

    def group_by(self, fn: Callable[[Any, Any], Any], *, key_serde: Any = None,
                 value_serde: Any = None) -> KGroupedStream:
        """Group by ``fn(key, value)`` (always repartitions by the new key)."""
        return self.select_key(fn).group_by_key(key_serde=key_serde, value_serde=value_serde)

    def peek(self, action: Callable[[Any, Any], None], name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        return self._then("KSTREAM-PEEK", functools.partial(ops.PeekProcessor, action), name)

    def foreach(self, action: Callable[[Any, Any], None], name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation)."""
        self._then("KSTREAM-FOREACH", functools.partial(ops.PeekProcessor, action, False), name)

    def to(self, topic: str | Callable[..., str], *, key_serde: Any = None, value_serde: Any = None,
           partitioner: Callable[..., int | None] | None = None, name: str | None = None) -> None:
        """Write the stream to ``topic``, or to ``topic(key, value, record_metadata)``'s answer.

        Serdes default to the stream's, then to the config's. ``partitioner(topic, key, value,
        num_partitions)`` may choose the partition (None: Kafka's default, murmur2 of the key).
        """
        name = name or self._graph.next_name("KSTREAM-SINK")
        self._graph.add(SinkSpec(name, topic, (self._node,),
                                 key_serde if key_serde is not None else self._key_serde,
                                 value_serde if value_serde is not None else self._value_serde,
                                 partitioner))
