"""KTable: a changelog stream seen as a table, one latest value per key.

Its regrouping is :class:`~kspark.dsl.grouped_table.KGroupedTable` (importable from here
too); the graph of a foreign-key join is written by :mod:`kspark.dsl._foreign_key`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kspark._engine.state.build import StoreKind, store_kind
from kspark._engine.tables import getters
from kspark._engine.tables import processors as tables
from kspark._graph.graph import ProcessorSpec, TopologyGraph, user_call
from kspark._graph.naming import burn, processor_name, store_name, suffixed_name
from kspark.dsl import _forms as f
from kspark.dsl._overloads import bind, describe
from kspark.dsl._upstream import Upstream, copartition
from kspark.dsl.grouped_table import KGroupedTable
from kspark.dsl.materialized import Materialized
from kspark.errors import TopologyError
from kspark._engine.values import TableTransformValuesProcessor, TransformGetter
from kspark._engine.joins.table_table import TableTableJoinProcessor
from kspark._engine.state.buffer_value import SuppressBufferSerde
from kspark._engine.tables.suppress import SuppressProcessor, Suppressed
from kspark.state.stores import KeyValueBytesStoreSupplier, KeyValueStoreBuilder

if TYPE_CHECKING:
    from kspark.dsl.kstream import KStream

__all__ = ["KTable", "KGroupedTable"]


class KTable:
    """A table; its operations see each update as a change of a key's value (new, old).

    Example:
        >>> from kspark import StreamsBuilder, Serdes
        >>> b = StreamsBuilder()
        >>> t = b.table("prices", key_serde=Serdes.String(), value_serde=Serdes.Integer())
        >>> t.filter(lambda k, v: v > 10).to_stream().to("expensive")
    """

    def __init__(self, graph: TopologyGraph, node: str, key_serde: Any, value_serde: Any,
                 store_name: str | None = None, getter: Callable[[], Any] | None = None,
                 queryable: bool = True, source: tables.Switch | None = None,
                 window_grace: int | None = None, pending: Any = None):
        self._graph = graph
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._store_name = store_name
        self._window_grace = window_grace  # of a windowed aggregation's result: for suppress
        # A source table (builder.table, to_table) without a store name is used as Kafka
        # Streams does: unmaterialized (no cache, every update forwarded at once) until a join
        # reads it or an operator needs its old values; ``source`` switches that on, and its
        # store (``pending``, its builder) joins the topology only then, as in Java.
        self._source, self._pending = source, pending
        if source is not None and queryable:
            self._materialize()
        # how a join reads this table's rows: its store, or through the stores it derives from
        self._getter = getter
        if getter is None and store_name is not None:
            self._getter = self._store_getter
        self._old = tables.OldValues()
        builder = pending or (graph.stores.get(store_name, (None,))[0] if store_name else None)
        self._versioned = builder is not None and store_kind(builder) is StoreKind.VERSIONED
        # Kafka Streams' enableSendingOldValues(force): a table with a store always can; an
        # unmaterialized source table only when forced; filters and mappers ask their parent
        self._old_policy: Callable[[bool], bool] = lambda force: self._materialize(force)

    def _materialize(self, force: bool = True) -> bool:
        if self._source is not None and force:
            self._source.on = True
            if self._pending is not None:
                self._graph.add_store(self._pending, (self._node,))
                self._pending = None
        return self._source is None or self._source.on

    def _store_getter(self) -> Any:
        self._materialize()
        return getters.StoreGetter(self._store_name)

    def _reader(self) -> Any:
        """How a join reads this table's rows (None: it cannot); a source table it reads is
        materialized."""
        return None if self._getter is None else self._getter()

    def _join_side(self) -> tuple[Any, str, bool]:
        """What a stream-table join needs of this table (``KStream.join``): its reader (as
        :meth:`_reader`), its node, and whether it reads a versioned store."""
        return self._reader(), self._node, self._versioned

    def queryable_store_name(self) -> str | None:
        """The store holding this table, if it is materialized."""
        return self._store_name

    def _enable_old(self, force: bool) -> bool:
        """Ask this table to send old values downstream; whether it will."""
        if self._old_policy(force):
            self._old.on = True
        return self._old.on

    def _derived(self, prefix: str, make: Callable[[str | None], Any],
                 materialized: Materialized | None, value_serde: Any, getter: Any,
                 old: tables.OldValues | None = None,
                 old_policy: Callable[[bool], bool] | None = None,
                 name: str | None = None, burn_store: bool = True) -> KTable:
        """A filter or mapper of this table; with ``materialized`` it keeps its own store.
        ``old``: its processor's switch for sending old values; ``old_policy``: how it answers
        a request to send them when it has no store (by default: as this table does). Named
        as Java: ``materialized`` without a store name burns a store name first
        (``burn_store``: not for ``transform_values``)."""
        if burn_store and materialized is not None and materialized.store_name is None:
            burn(self._graph)
        name = processor_name(self._graph, prefix, name)
        store = None
        if materialized is not None and materialized.store_name is not None:
            store = materialized.store_name
            if materialized.value_serde is not None:
                value_serde = materialized.value_serde
        self._graph.add(ProcessorSpec(name, make(store), (self._node,)))
        if store is not None:
            ks = materialized.key_serde if materialized.key_serde is not None else self._key_serde
            self._graph.add_store(materialized.builder(store, ks, value_serde), (name,))
        out = KTable(self._graph, name, self._key_serde, value_serde, store,
                     None if store is not None else getter, window_grace=self._window_grace)
        if old is not None:
            out._old = old
        if store is None:
            out._old_policy = old_policy or (lambda force: self._enable_old(force))
            out._versioned = self._versioned  # read through this table's store
        return out

    def filter(self, *args: Any, **kwargs: Any) -> KTable:
        """Keep the rows for which ``predicate(key, value)`` holds (others read as deleted):
        ``filter(predicate[, named][, materialized])``.

        As Kafka Streams' KTableFilter, a filter whose old values nobody downstream needs
        forwards a delete for every update that fails the predicate.

        Example:
            >>> from kspark import StreamsBuilder, Serdes, Materialized
            >>> b = StreamsBuilder()
            >>> t = b.table("prices", key_serde=Serdes.String(), value_serde=Serdes.Integer())
            >>> big = t.filter(lambda k, v: v > 10, Materialized.as_("big-prices"))
            >>> big.queryable_store_name()
            'big-prices'
        """
        return self._filter("KTable.filter", False, args, kwargs)

    def filter_not(self, *args: Any, **kwargs: Any) -> KTable:
        """Keep the rows for which ``predicate(key, value)`` does not hold."""
        return self._filter("KTable.filter_not", True, args, kwargs)

    def _filter(self, call: str, negate: bool, args: tuple, kwargs: dict) -> KTable:
        a = bind(call, f.FILTER_TABLE, args, kwargs)
        predicate, materialized = a["predicate"], a["materialized"]
        old = tables.OldValues(self._enable_old(False))
        getter = None if self._getter is None else (
            lambda: getters.FilterGetter(self._reader(), predicate, negate))
        return self._derived("KTABLE-FILTER", lambda store: functools.partial(
            tables.TableFilterProcessor, predicate, negate, old, store, self._versioned),
            materialized, self._value_serde, getter, old,
            lambda force: self._enable_old(force) or old.on, f.named_of(a["named"]))

    def map_values(self, *args: Any, **kwargs: Any) -> KTable:
        """Map each value with ``mapper(value)`` (``mapper(key, value)`` for a mapper of two
        arguments, or ``with_key=True``); with ``materialized`` the result is kept in its own
        store: ``map_values(mapper[, named][, materialized])``."""
        a = bind("KTable.map_values", f.TABLE_MAP_VALUES, args, kwargs)
        fn, keyed = a["mapper"], f.with_key(a["mapper"], a["with_key"])
        getter = None if self._getter is None else (
            lambda: getters.MapGetter(self._reader(), fn, keyed))
        return self._derived("KTABLE-MAPVALUES", lambda store: functools.partial(
            tables.TableMapValuesProcessor, fn, keyed, store), a["materialized"], None, getter,
            name=f.named_of(a["named"]))

    def transform_values(self, transformer_supplier: Callable[[], Any],
                         materialized: Materialized | None = None,
                         *store_names: str) -> KTable:
        """Transform each value with a stateful ``ValueTransformerWithKey``: the supplier makes
        one per task, with ``init(context)``, ``transform(key, value)`` and ``close()``.

        As Kafka Streams' ``transformValues``, ``transform`` is called for deletes too (with a
        None value); a None result deletes the row. ``store_names`` name stores added with
        ``StreamsBuilder.add_state_store`` that the transformer may use.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> class Upper:
            ...     def init(self, context): pass
            ...     def transform(self, key, value): return value and value.upper()
            ...     def close(self): pass
            >>> b = StreamsBuilder()
            >>> t = b.table("names", key_serde=Serdes.String(), value_serde=Serdes.String())
            >>> upper = t.transform_values(Upper)
        """
        old = tables.OldValues(materialized is not None and materialized.store_name is not None)
        getter = None if self._getter is None else (
            lambda: TransformGetter(self._reader(), transformer_supplier))

        def enable(force: bool) -> bool:
            old.on = self._enable_old(force)
            return old.on

        out: KTable = self._derived("KTABLE-TRANSFORMVALUES", lambda store: functools.partial(
            TableTransformValuesProcessor, transformer_supplier, old, store), materialized,
            None, getter, old_policy=enable, burn_store=False)
        if store_names:
            self._graph.connect((out._node,), tuple(store_names))
        return out

    def _join(self, other: KTable, joiner: Callable[[Any, Any], Any], kind: str,
              materialized: Materialized | None = None, name: str | None = None) -> KTable:
        for readable, node in ((self._getter is not None, self._node),
                               (other._getter is not None, other._node)):
            if not readable:
                raise TopologyError(
                    f"table {node!r} cannot be joined: it has no store and its rows cannot "
                    f"be read through one (a suppressed table); materialize it first")
        this_reader, other_reader = self._reader(), other._reader()
        if kind in ("left", "outer"):
            self._enable_old(True)
        if kind == "outer":
            other._enable_old(True)
        g = self._graph  # Java's names: the store's, "<name>", "<name>-join-this"/"-other"
        store = None if materialized is None else (
            materialized.store_name or store_name(g, "KTABLE-MERGE", materialized.logging))
        merge = processor_name(g, "KTABLE-MERGE", name)
        this = suffixed_name(g, name, "-join-this", "KTABLE-JOINTHIS")
        that = suffixed_name(g, name, "-join-other", "KTABLE-JOINOTHER")
        self._graph.add(ProcessorSpec(this, functools.partial(
            TableTableJoinProcessor, other_reader, joiner, kind, True), (self._node,)))
        self._graph.add(ProcessorSpec(that, functools.partial(
            TableTableJoinProcessor, this_reader, joiner, kind, False), (other._node,)))
        self._graph.connect((this,), other_reader.stores)
        self._graph.connect((that,), this_reader.stores)
        value_serde = None if materialized is None else materialized.value_serde
        if store is None:
            self._graph.add(ProcessorSpec(merge, tables.TablePassThroughProcessor, (this, that)))
        else:
            self._graph.add(ProcessorSpec(merge, functools.partial(
                tables.TableMaterializeProcessor, store), (this, that)))
            ks = materialized.key_serde if materialized.key_serde is not None else self._key_serde
            self._graph.add_store(materialized.builder(store, ks, value_serde), (merge,))
        copartition(self._graph, self._node, other._node)
        getter = None if store is not None else (
            lambda: getters.JoinGetter(this_reader, other_reader, joiner, kind))
        out = KTable(self._graph, merge, self._key_serde, value_serde, store, getter)

        def enable(force: bool) -> bool:  # KTableKTableJoinMerger: both sides send old values
            self._enable_old(True)
            other._enable_old(True)
            return True
        out._old_policy = enable
        return out

    def join(self, *args: Any, **kwargs: Any) -> KTable:
        """Rows present in both tables, in Java's two forms:

        - ``join(other, joiner[, named][, materialized])``: rows of the same key, valued
          ``joiner(value, other_value)``;
        - ``join(other, foreign_key_extractor, joiner[, table_joined][, materialized])``: a
          foreign-key join (two functions, as Java tells it apart by its ``Function``): each
          row joins the row of ``other`` whose key is ``foreign_key_extractor(value)`` (or
          ``foreign_key_extractor(key, value)``); the tables need not be co-partitioned,
          and the result is keyed like this table.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> S = Serdes.String()
            >>> orders = b.table("orders", key_serde=S, value_serde=S)      # "p1|3"
            >>> products = b.table("products", key_serde=S, value_serde=S)  # "apple"
            >>> enriched = orders.join(products, lambda order: order.split("|")[0],
            ...                        lambda order, product: f"{order} {product}")
        """
        return self._any_join("join", "inner", args, kwargs)

    def left_join(self, *args: Any, **kwargs: Any) -> KTable:
        """Every row of this table; ``other_value`` is None where the other has none. The
        same two forms as :meth:`join` (the second: the foreign-key variant)."""
        return self._any_join("left_join", "left", args, kwargs)

    def _any_join(self, call: str, kind: str, args: tuple, kwargs: dict) -> KTable:
        a = bind(f"KTable.{call}", f.table_join_forms(call, kind != "outer"), args, kwargs)
        other = a["other"]
        if a["form"] == 0:
            return self._join(other, a["joiner"], kind, a["materialized"],
                              f.named_of(a["named"]))
        tj = a["table_joined"]
        if tj is not None and (tj.partitioner or tj.other_partitioner):
            raise TopologyError(
                f"KTable.{call}(): TableJoined's partitioners are not supported yet (kspark "
                "partitions a foreign-key join's subscription topics by key with Kafka's "
                "default partitioner); leave them out (TableJoined.as_(name) names the join)")
        return self._fk_join(other, a["extractor"], a["joiner"], kind == "left",
                             a["materialized"], tj.name if tj is not None else None)

    def _fk_join(self, other: KTable, extractor: Callable[[Any], Any],
                 joiner: Callable[[Any, Any], Any], left: bool,
                 materialized: Materialized | None, name: str | None) -> KTable:
        from kspark.dsl._foreign_key import FkSide, foreign_key_join

        other._enable_old(True)  # Java's order: the other table's old values first
        self._enable_old(True)  # a changed foreign key unsubscribes the old one
        m = materialized or Materialized()
        output = tables.Switch()
        def side(t: KTable) -> FkSide:  # the resolver reads this table, the joiner the other
            return FkSide(Upstream(t._graph, t._node, t._key_serde, t._value_serde), t._reader())
        r = foreign_key_join(side(self), side(other), extractor, joiner, left, m, name, output)
        return KTable(self._graph, r.node, self._key_serde, m.value_serde, r.store,
                      queryable=r.queryable, source=output, pending=r.builder)

    def outer_join(self, *args: Any, **kwargs: Any) -> KTable:
        """Rows present in either table (the missing side is None):
        ``outer_join(other, joiner[, named][, materialized])``."""
        return self._any_join("outer_join", "outer", args, kwargs)

    def group_by(self, *args: Any, **kwargs: Any) -> KGroupedTable:
        """Re-group the table's rows by ``selector(key, value) -> KeyValue(new_key,
        new_value)``: ``group_by(selector[, grouped])``, or the keywords ``key_serde``,
        ``value_serde``."""
        from kspark.dsl.named import Grouped

        a = bind("KTable.group_by", f.TABLE_GROUP_BY, args, kwargs)
        g = a["grouped"] or Grouped()
        self._enable_old(True)  # the regrouping subtracts each row's old value
        return KGroupedTable(Upstream(self._graph, self._node, self._key_serde,
                                      self._value_serde), a["selector"],
                             a["key_serde"] if a["key_serde"] is not None else g.key_serde,
                             a["value_serde"] if a["value_serde"] is not None
                             else g.value_serde, g.name)

    def suppress(self, suppressed: Any, named: Any = None) -> KTable:
        """Hold updates back: final window results (``Suppressed.until_window_closes``) or at
        most one per key per time limit (``Suppressed.until_time_limit``)."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError("KTable.suppress() takes a Suppressed (Suppressed."
                            "until_window_closes(...) or until_time_limit(...)), got "
                            f"{describe(suppressed)}")
        if self._versioned:
            raise TopologyError(f"suppress() is only supported for non-versioned KTables; table "
                                f"{self._node!r} reads a versioned store")
        if suppressed.final_results and self._window_grace is None:
            raise TopologyError(
                f"{user_call() or 'suppress()'}: Suppressed.until_window_closes() needs a "
                f"windowed table (the result of a windowed aggregation), but table "
                f"{self._node!r} is not windowed: use Suppressed.until_time_limit()")
        self._enable_old(True)
        given = f.named_of(named) or suppressed.name
        # Java's names: a given name burns nothing; an unnamed store burns an index
        name = given or self._graph.next_name("KTABLE-SUPPRESS")
        store = f"{given}-store" if given else store_name(self._graph, "KTABLE-SUPPRESS")
        self._graph.add(ProcessorSpec(name, functools.partial(
            SuppressProcessor, store, suppressed, self._window_grace), (self._node,)))
        # keyed by the table's serialized keys: ties on buffer time go in key-bytes order;
        # values in the table's value serde if known, else kspark's plain encoding
        self._graph.add_store(KeyValueStoreBuilder(
            KeyValueBytesStoreSupplier(store, False), self._key_serde,
            SuppressBufferSerde(self._value_serde)), (name,))
        out = KTable(self._graph, name, self._key_serde, self._value_serde)
        out._old_policy = self._enable_old
        return out

    def to_stream(self, *args: Any, **kwargs: Any) -> KStream:
        """The table's updates as a KStream (a delete is a record with a None value); with
        ``mapper``, each record is re-keyed by ``mapper(key, value)`` (as ``select_key``):
        ``to_stream([mapper][, named])``.

        Example:
            >>> from kspark import StreamsBuilder, Serdes
            >>> b = StreamsBuilder()
            >>> t = b.table("users", key_serde=Serdes.String(), value_serde=Serdes.String())
            >>> by_city = t.to_stream(lambda user, city: city)
        """
        from kspark.dsl.kstream import KStream

        a = bind("KTable.to_stream", f.TABLE_TO_STREAM, args, kwargs)
        name = processor_name(self._graph, "KTABLE-TOSTREAM", f.named_of(a["named"]))
        self._graph.add(ProcessorSpec(name, tables.TableToStreamProcessor, (self._node,)))
        stream = KStream(self._graph, name, self._key_serde, self._value_serde)
        return stream if a["mapper"] is None else stream.select_key(a["mapper"])

