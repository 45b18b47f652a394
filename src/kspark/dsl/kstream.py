"""KStream: a record stream, and its stateless operations.

Its async steps and ``delay`` come from :class:`~kspark.dsl._async_steps.AsyncSteps`; the
graph of its joins is written by :mod:`kspark.dsl._stream_joins`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine import operators as ops
from kspark._graph.graph import ProcessorSpec, SinkSpec, TopologyGraph, user_call
from kspark._graph.naming import processor_name, repartition_names, store_name
from kspark.dsl import _forms as f
from kspark.dsl._async_steps import AsyncSteps
from kspark.dsl._join_steps import JoinSteps
from kspark.dsl._overloads import bind, describe
from kspark.dsl._spark_sinks import SparkSinkSteps
from kspark.dsl._upstream import Upstream, add_repartition
from kspark.errors import TopologyError
from kspark._engine.values import FixedKeyProcessor
from kspark._engine.tables.processors import Switch, TableSourceProcessor

if TYPE_CHECKING:
    from kspark.dsl.branched import BranchedKStream
    from kspark.dsl.grouped import KGroupedStream
    from kspark.dsl.ktable import KTable

__all__ = ["KStream"]


class KStream(AsyncSteps, JoinSteps, SparkSinkSteps):
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
        # the repartition this stream's joins read through (Java's KStreamImpl.repartitionNode:
        # a later join not named otherwise reads the same one, a self-join one for both sides)
        self._join_repartition: str | None = None

    def _then(self, prefix: str, supplier: Callable[[], Any], name: str | None = None,
              key_serde: Any = None, value_serde: Any = None, keep_serdes: bool = True, *,
              key_changing: bool = False, stores: tuple[str, ...] = (),
              burn: bool = True, changing: str = "") -> KStream:
        """Add a processor node after this stream, connected to ``stores``, named ``name``
        (the user's) or ``<prefix>-<index>`` (``burn``: an index is taken either way, as
        Java's ``orElseGenerateWithPrefix``). ``key_changing`` declares that it may change
        keys: the node says so, and a later key-based step repartitions first."""
        name = processor_name(self._graph, prefix, name) if burn else (
            name or self._graph.next_name(prefix))
        spec = ProcessorSpec(name, supplier, (self._node,), key_changing)
        self._graph.add(spec)
        if key_changing or changing:  # what topology.optimization reads (Java's flags)
            self._graph.changing[name] = changing or "key"
        if stores:
            self._graph.connect((name,), stores)
        if keep_serdes:
            key_serde, value_serde = self._key_serde, self._value_serde
        return KStream(self._graph, name, key_serde, value_serde,
                       self._repartition_required or spec.key_changing)

    def filter(self, *args: Any, **kwargs: Any) -> KStream:
        """Keep the records for which ``predicate(key, value)`` is true:
        ``filter(predicate[, named])``."""
        a = bind("KStream.filter", f.FILTER, args, kwargs)
        return self._then("KSTREAM-FILTER", functools.partial(ops.FilterProcessor,
                                                              a["predicate"]),
                          f.named_of(a["named"]))

    def filter_not(self, *args: Any, **kwargs: Any) -> KStream:
        """Drop the records for which ``predicate(key, value)`` is true."""
        a = bind("KStream.filter_not", f.FILTER, args, kwargs)
        return self._then("KSTREAM-FILTER", functools.partial(
            ops.FilterProcessor, a["predicate"], True), f.named_of(a["named"]))

    def map_values(self, *args: Any, **kwargs: Any) -> KStream:
        """Replace each value by ``mapper(value)``, or ``mapper(key, value)`` for a mapper
        of two arguments (Java's ``ValueMapperWithKey``; or say ``with_key=True``):
        ``map_values(mapper[, named])``."""
        a = bind("KStream.map_values", f.MAP_VALUES, args, kwargs)
        sup = functools.partial(ops.MapValuesProcessor, a["mapper"],
                                f.with_key(a["mapper"], a["with_key"]))
        return self._then("KSTREAM-MAPVALUES", sup, f.named_of(a["named"]), self._key_serde,
                          None, keep_serdes=False, changing="value")

    def map(self, *args: Any, **kwargs: Any) -> KStream:
        """Replace each record's key and value by ``mapper(key, value)``, a ``KeyValue`` or a
        ``(key, value)`` tuple: ``map(mapper[, named])``."""
        a = bind("KStream.map", f.MAP, args, kwargs)
        return self._then("KSTREAM-MAP", functools.partial(ops.MapProcessor, a["mapper"]),
                          f.named_of(a["named"]), keep_serdes=False, key_changing=True)

    def flat_map(self, *args: Any, **kwargs: Any) -> KStream:
        """Replace each record by the ``KeyValue``s (or ``(key, value)`` tuples) of
        ``mapper(key, value)`` (zero or more): ``flat_map(mapper[, named])``."""
        a = bind("KStream.flat_map", f.MAP, args, kwargs)
        return self._then("KSTREAM-FLATMAP", functools.partial(ops.FlatMapProcessor,
                                                               a["mapper"]),
                          f.named_of(a["named"]), keep_serdes=False, key_changing=True)

    def flat_map_values(self, *args: Any, **kwargs: Any) -> KStream:
        """Replace each record by one record per value of ``mapper(value)`` (or
        ``mapper(key, value)``): ``flat_map_values(mapper[, named])``."""
        a = bind("KStream.flat_map_values", f.MAP_VALUES, args, kwargs)
        sup = functools.partial(ops.FlatMapProcessor, a["mapper"], True,
                                f.with_key(a["mapper"], a["with_key"]))
        return self._then("KSTREAM-FLATMAPVALUES", sup, f.named_of(a["named"]),
                          self._key_serde, None, keep_serdes=False, changing="value")

    def select_key(self, *args: Any, **kwargs: Any) -> KStream:
        """Set each record's key to ``mapper(key, value)`` (a later key-based step
        repartitions): ``select_key(mapper[, named])``."""
        a = bind("KStream.select_key", f.SELECT_KEY, args, kwargs)
        return self._then("KSTREAM-KEY-SELECT", functools.partial(ops.SelectKeyProcessor,
                                                                  a["mapper"]),
                          f.named_of(a["named"]), None, self._value_serde, keep_serdes=False,
                          key_changing=True)

    def split(self, *args: Any, **kwargs: Any) -> "BranchedKStream":
        """Start routing records to branches: ``split([named]).branch(predicate[,
        branched])...default_branch([branched])``."""
        from kspark.dsl.branched import BranchedKStream

        a = bind("KStream.split", f.SPLIT, args, kwargs)
        return BranchedKStream(Upstream(self._graph, self._node, self._key_serde,
                                        self._value_serde), f.named_of(a["named"]))

    def branch(self, *predicates: Callable[[Any, Any], bool]) -> list[KStream]:
        """The seed's (KIP-28) branch: one stream per predicate; a record goes to the first
        match."""
        b = self.split()
        for p in predicates:
            b.branch(p)
        return list(b.no_default_branch().values())

    def merge(self, other: KStream, named: Any = None, *, name: str | None = None) -> KStream:
        """One stream with the records of both streams: ``merge(stream[, named])``."""
        if not isinstance(other, KStream):
            raise TypeError(f"KStream.merge() takes another KStream, got {describe(other)}")
        name = processor_name(self._graph, "KSTREAM-MERGE", f.named_of(named) or name)
        self._graph.add(ProcessorSpec(name, ops.PassThroughProcessor, (self._node, other._node)))
        self._graph.merge_nodes.append(name)
        return KStream(self._graph, name,
                       self._key_serde if self._key_serde == other._key_serde else None,
                       self._value_serde if self._value_serde == other._value_serde else None,
                       self._repartition_required or other._repartition_required)

    def process(self, processor_supplier: Callable[[], Any], *store_names: Any,
                name: str | None = None) -> KStream:
        """Run a Processor API processor (``processor_supplier()`` makes one per task):
        ``process(supplier[, named], *store_names)``.

        ``store_names`` name stores added with ``StreamsBuilder.add_state_store`` that the
        processor may use through ``context.get_state_store(name)``.
        """
        processor_supplier, name, store_names = _process_args(
            self._graph, "KStream.process", processor_supplier, store_names, name)
        return self._then("KSTREAM-PROCESSOR", processor_supplier, name, keep_serdes=False,
                          stores=store_names, burn=False)

    def process_values(self, processor_supplier: Callable[[], Any], *store_names: Any,
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
        processor_supplier, name, store_names = _process_args(
            self._graph, "KStream.process_values", processor_supplier, store_names, name)
        node = name or self._graph.next_name("KSTREAM-PROCESSVALUES")
        return self._then("KSTREAM-PROCESSVALUES", functools.partial(
            FixedKeyProcessor, processor_supplier, node), node, self._key_serde, None,
            keep_serdes=False, stores=store_names, burn=False)

    def to_table(self, *args: Any, **kwargs: Any) -> KTable:
        """This stream as a table (KIP-523): each record upserts its key, a null value deletes
        it; records with a null key are dropped. Repartitions first if the key changed:
        ``to_table([named][, materialized])``.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> latest = b.stream("prices", key_serde=Serdes.String(),
            ...                   value_serde=Serdes.Double()).to_table()
        """
        from kspark.dsl.ktable import KTable
        from kspark.dsl.materialized import Materialized

        a = bind("KStream.to_table", f.TO_TABLE, args, kwargs)
        m = a["materialized"] or Materialized()
        g = self._graph
        node = processor_name(g, "KSTREAM-TOTABLE", f.named_of(a["named"]))
        store = m.store_name or store_name(g, "KSTREAM-TOTABLE", m.logging)
        ks = m.key_serde if m.key_serde is not None else self._key_serde
        vs = m.value_serde if m.value_serde is not None else self._value_serde
        stream: KStream = (self._through_repartition(node, ks, vs)
                           if self._repartition_required else self)
        source = Switch()
        g.add(ProcessorSpec(node, functools.partial(TableSourceProcessor, store, source),
                            (stream._node,)))
        return KTable(g, node, ks, vs, store, queryable=m.store_name is not None, source=source,
                      pending=m.builder(store, ks, vs))

    def print(self, *args: Any, **kwargs: Any) -> None:
        """Print each record: ``print(Printed.to_sys_out().with_label("x"))`` or
        ``print(Printed.to_file(path))`` as Java; ``print([label][, name])`` writes
        ``[label]: key, value`` to standard output (label defaults to the node's name)."""
        from kspark.dsl.named import Printed

        a = bind("KStream.print", f.PRINT, args, kwargs)
        printed = a.get("printed") or Printed(label=a.get("label"))
        name = f.named_of(a.get("named")) or printed.processor_name
        self.foreach(printed.action(self._node), name)

    def through(self, *args: Any, **kwargs: Any) -> KStream:
        """Removed, as in Kafka Streams 4.0 (KIP-221): a TopologyError saying what to use."""
        raise TopologyError(
            f"{user_call() or 'KStream.through()'}: through() was removed in Kafka Streams 4.0 "
            "(KIP-221): use repartition() for an internal topic the application manages, or "
            "to(topic) and then StreamsBuilder.stream(topic) for a topic of your own")

    def repartition(self, *args: Any, **kwargs: Any) -> KStream:
        """Redistribute records by key through ``<application.id>-<name>-repartition``:
        ``repartition([repartitioned])`` (name, serdes, partitioner, number of partitions),
        or the keywords ``key_serde``, ``value_serde``, ``name``, ``partitioner``.

        Records with a null key are dropped first (Kafka Streams' ``-repartition-filter``),
        here and in the repartitions before ``group_by`` and joins, unless a left or outer
        join downstream wants them (KIP-962: Java 4.1 keeps them then, and so does kspark)."""
        from kspark.dsl.topic_options import Repartitioned

        a = bind("KStream.repartition", f.REPARTITION, args, kwargs)
        r = a["repartitioned"] or Repartitioned()
        return self._repartitioned(_first(a["key_serde"], r.key_serde),
                                   _first(a["value_serde"], r.value_serde),
                                   a["name"] or r.name, _first(a["partitioner"], r.partitioner),
                                   r.number_of_partitions)

    def _repartitioned(self, key_serde: Any, value_serde: Any, name: str | None,
                       partitioner: Callable[..., int | None] | None,
                       partitions: int | None = None) -> KStream:
        """Through ``<name>-repartition`` (by default ``KSTREAM-REPARTITION-<index>``)."""
        ks = key_serde if key_serde is not None else self._key_serde
        vs = value_serde if value_serde is not None else self._value_serde
        return self._through_repartition(name or self._graph.next_name("KSTREAM-REPARTITION"),
                                         ks, vs, partitioner, partitions, optimizable=False)

    def _through_repartition(self, prefix: str, ks: Any, vs: Any,
                             partitioner: Callable[..., int | None] | None = None,
                             partitions: int | None = None, *,
                             optimizable: bool = True, for_join: bool = False) -> KStream:
        """This stream through a repartition topic named for ``prefix`` (Java's names);
        ``for_join`` (Java's ``repartitionForJoin``): the one made for an earlier join of this
        stream is read again when ``prefix`` is this node (its names are taken anyway)."""
        names = repartition_names(self._graph, prefix)
        if for_join and self._join_repartition is not None and prefix == self._node:
            return KStream(self._graph, self._join_repartition, ks, vs)
        source = add_repartition(self._graph, self._node, names, ks, vs, partitioner,
                                 partitions, optimizable)
        if for_join:
            self._join_repartition = source
        return KStream(self._graph, source, ks, vs)

    def group_by_key(self, *args: Any, **kwargs: Any) -> KGroupedStream:
        """Group by the current key (repartitioning first if an earlier step changed it):
        ``group_by_key([grouped])``, or the keywords ``key_serde``, ``value_serde``."""
        from kspark.dsl.grouped import KGroupedStream
        from kspark.dsl.named import Grouped

        a = bind("KStream.group_by_key", f.GROUP_BY_KEY, args, kwargs)
        return KGroupedStream(self._grouped(a["grouped"] or Grouped(), a["key_serde"],
                                            a["value_serde"]))

    def _grouped(self, grouped: Any, key_serde: Any, value_serde: Any) -> Upstream:
        """The grouped records; a changed key is repartitioned by each aggregation."""
        ks = _first(key_serde, grouped.key_serde, self._key_serde)
        vs = _first(value_serde, grouped.value_serde, self._value_serde)
        return Upstream(self._graph, self._node, ks, vs, self._repartition_required,
                        grouped.name, origin=user_call())

    def group_by(self, *args: Any, **kwargs: Any) -> KGroupedStream:
        """Group by ``key_selector(key, value)`` (always repartitions by the new key):
        ``group_by(key_selector[, grouped])``, or the keywords ``key_serde``,
        ``value_serde``."""
        from kspark.dsl.grouped import KGroupedStream
        from kspark.dsl.named import Grouped

        a = bind("KStream.group_by", f.GROUP_BY, args, kwargs)
        grouped = a["grouped"] or Grouped()
        keyed: KStream = self.select_key(a["selector"], grouped.name)
        return KGroupedStream(keyed._grouped(grouped, a["key_serde"], a["value_serde"]))

    def peek(self, *args: Any, **kwargs: Any) -> KStream:
        """Call ``action(key, value)`` for each record and pass it on unchanged:
        ``peek(action[, named])``."""
        a = bind("KStream.peek", f.ACTION, args, kwargs)
        return self._then("KSTREAM-PEEK", functools.partial(ops.PeekProcessor, a["action"]),
                          f.named_of(a["named"]))

    def foreach(self, *args: Any, **kwargs: Any) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation):
        ``foreach(action[, named])``."""
        a = bind("KStream.foreach", f.ACTION, args, kwargs)
        self._then("KSTREAM-FOREACH", functools.partial(ops.PeekProcessor, a["action"], False),
                   f.named_of(a["named"]))

    def to(self, *args: Any, **kwargs: Any) -> None:
        """Write the stream to ``topic``, or to ``topic_extractor(key, value,
        record_context)``'s answer: ``to(topic[, produced])``.

        Serdes come from ``produced`` (or the keywords ``key_serde``/``value_serde``), then
        the stream's, then the config's. A partitioner (``Produced.with_stream_partitioner``
        or ``partitioner=``), ``partitioner(topic, key, value, num_partitions)``, may choose
        the partition (None: Kafka's default, murmur2 of the key).
        """
        from kspark.dsl.topic_options import Produced

        a = bind("KStream.to", f.TO, args, kwargs)
        p = a["produced"] or Produced()
        name = processor_name(self._graph, "KSTREAM-SINK", a["name"] or p.processor_name)
        self._graph.add(SinkSpec(name, a["topic"], (self._node,),
                                 _first(a["key_serde"], p.key_serde, self._key_serde),
                                 _first(a["value_serde"], p.value_serde, self._value_serde),
                                 _first(a["partitioner"], p.partitioner)))


def _process_args(graph: TopologyGraph, call: str, supplier: Any, stores: tuple,
                  name: str | None) -> tuple[Callable[[], Any], str | None, tuple[str, ...]]:
    """Java's ``process(supplier, String...)`` and ``process(supplier, Named, String...)``:
    the supplier as a function, the processor's name and the store names, checked. A
    supplier may be Java's ``ProcessorSupplier``: an object with ``get()`` and, optionally,
    ``stores()`` (store builders, added to the topology and connected, as Java's
    ``ConnectedStoreProvider``)."""
    from kspark.dsl.named import Named

    if not callable(supplier) and callable(getattr(supplier, "get", None)):
        provided = tuple(getattr(supplier, "stores", lambda: ())() or ())
        for builder in provided:
            if builder.name not in graph.stores:
                graph.add_store(builder)
        stores, supplier = (*stores, *(b.name for b in provided)), supplier.get
    if not callable(supplier):
        raise TypeError(f"{call}() takes a processor supplier (a Processor class or a "
                        f"function making one) first, got {describe(supplier)}")
    if stores and isinstance(stores[0], Named):
        name, stores = stores[0].name, stores[1:]
    bad = [x for x in stores if not isinstance(x, str)]
    if bad:
        raise TypeError(f"{call}(supplier[, named], *store_names): store names are str, got "
                        f"{describe(bad[0])}")
    return supplier, name, stores


def _first(*values: Any) -> Any:
    """The first value that is not None."""
    return next((v for v in values if v is not None), None)
