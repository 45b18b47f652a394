"""How a KStream's joins write themselves into the graph: the windowed stream-stream join
(two window stores, a shared store of records still waiting for a partner, and a merge),
and the checks and grace buffer of a stream-table join.

:class:`~kspark.dsl.kstream.KStream` prepares each side first (repartitioning a side whose
key changed) and hands it over as an :class:`~kspark.dsl._upstream.Upstream` carrying the
serdes the join's stores use.

Example:
    >>> stores, pending = join_store_names("clicks", "left", "KSTREAM-JOINTHIS-0000000001",
    ...                                    "KSTREAM-OUTEROTHER-0000000002")
    >>> sorted(stores.values()), pending
    (['clicks-outer-other-join-store', 'clicks-this-join-store'], 'clicks-left-shared-join-store')
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kspark._engine import operators as ops
from kspark._engine.joins import stream_table as ops_joins
from kspark._engine.joins.stream_stream import (
    JoinWindowProcessor,
    PendingKeySerde,
    PendingValuesSerde,
    StreamStreamJoinProcessor,
)
from kspark._engine.state.build import StoreKind, store_kind
from kspark._engine.state.internal_serdes import GraceBufferSerde
from kspark._graph.graph import ProcessorSpec, TopologyGraph
from kspark._graph.naming import suffixed_name
from kspark.dsl._upstream import Upstream, copartition, relax_null_keys
from kspark.errors import TopologyError
from kspark.state.stores import (
    KeyValueBytesStoreSupplier,
    KeyValueStoreBuilder,
    WindowBytesStoreSupplier,
    WindowStoreBuilder,
)

__all__ = ["check_table_join", "add_grace_buffer", "stream_stream_join", "join_store_names"]


def check_table_join(graph: TopologyGraph, getter: Any, table: str, versioned: bool,
                     grace: int | None) -> None:
    """Refuse a stream-table join the table cannot serve: a table whose rows cannot be
    read, a grace period on a table that is not versioned, or one longer than the history
    its store keeps."""
    if getter is None:
        raise TopologyError(f"table {table!r} cannot be joined: it has no store and "
                            f"its rows cannot be read through one (a suppressed table); "
                            f"materialize it first")
    if grace is not None and not versioned:
        raise TopologyError(f"table {table!r} must be versioned to use a grace period "
                            f"in a stream-table join: materialize it with "
                            f"Stores.persistent_versioned_key_value_store")
    for store in getter.stores if grace is not None else ():
        builder = graph.stores[store][0]
        history = (builder.supplier.history_retention_ms
                   if store_kind(builder) is StoreKind.VERSIONED else grace)
        if grace > history:
            raise TopologyError(f"the grace period ({grace} ms) of a join with table "
                                f"{table!r} is longer than its store {store!r} keeps "
                                f"history ({history} ms): history retention must be at "
                                f"least the grace period")


def add_grace_buffer(graph: TopologyGraph, buffer: str, join: str, key_serde: Any,
                     value_serde: Any) -> None:
    """The store ``buffer`` where the stream-table join ``join`` holds records for their
    grace period, in time order."""
    graph.add_store(KeyValueStoreBuilder(
        KeyValueBytesStoreSupplier(buffer, False), ops_joins.TimeFirstKeySerde(key_serde),
        GraceBufferSerde(value_serde)), (join,))


def join_store_names(store_name: str | None, kind: str, this: str,
                     that: str) -> tuple[dict[str, str], str | None]:
    """Each side's window store and the shared store of unpartnered records (none for an
    inner join), named as Kafka Streams names them for each kind of join (``inner``,
    ``left``, ``outer``): after the user's store name, else after the sides' generated
    join names (``this``, ``that``: ``KSTREAM-JOINTHIS-<n>``/``-OUTERTHIS-``, ...)."""
    shared = f"{'outer' if kind == 'outer' else 'left'}-shared-join"
    if store_name is None:
        pending = f"KSTREAM-OUTERSHARED-{this[-10:]}-store"
        return {this: f"{this}-store", that: f"{that}-store"}, (
            None if kind == "inner" else pending)
    stores = {this: f"{store_name}-{'outer-this' if kind == 'outer' else 'this'}-join-store",
              that: f"{store_name}-{'other' if kind == 'inner' else 'outer-other'}-join-store"}
    return stores, None if kind == "inner" else f"{store_name}-{shared}-store"


def stream_stream_join(left: Upstream, right: Upstream, joiner: Callable[[Any, Any], Any],
                       windows: Any, kind: str, joined: Any) -> str:
    """Add a windowed join of ``left`` and ``right`` (``joined``: a StreamJoined, for names
    and logging; each side's serdes are those of its window store); the node that merges
    both sides' results. Nodes, stores and their connections as Java's
    ``KStreamImplJoin``: each side's ``KSTREAM-WINDOWED-`` node keeps its records in its
    window store and passes them to its join node, which reads the other side's store."""
    g, name = left.graph, joined.name
    if kind != "inner":
        relax_null_keys(g, left.node)
        relax_null_keys(g, right.node)
    windowed = [suffixed_name(g, name, f"-{side}-windowed", "KSTREAM-WINDOWED")
                for side in ("this", "other")]
    gen_this = g.next_name("KSTREAM-OUTERTHIS" if kind == "outer" else "KSTREAM-JOINTHIS")
    gen_that = g.next_name("KSTREAM-JOINOTHER" if kind == "inner" else "KSTREAM-OUTEROTHER")
    this = f"{name}-{'outer-this' if kind == 'outer' else 'this'}-join" if name else gen_this
    that = f"{name}-{'other' if kind == 'inner' else 'outer-other'}-join" if name else gen_that
    merge = suffixed_name(g, name, "-merge", "KSTREAM-MERGE")
    stores, pending = join_store_names(joined.store_name, kind, gen_this, gen_that)
    mine, theirs = stores[gen_this], stores[gen_that]
    if joined.store_name is None:  # generated names (KIP-1111's check lists them)
        g.generated += [("store", s, joined.logging) for s in (mine, theirs, pending) if s]
    if left.node == right.node:  # a self-join: single.store.self.join rewrites it
        g.self_joins.append((windowed[0], windowed[1], this, that, merge, mine, theirs,
                             pending, joiner, windows))
    retention = windows.size_ms() + windows.grace_ms
    for node, parent, store in ((windowed[0], left.node, mine), (windowed[1], right.node, theirs)):
        g.add(ProcessorSpec(node, functools.partial(JoinWindowProcessor, store), (parent,)))
    for node, parent, other, is_left in ((this, windowed[0], theirs, True),
                                         (that, windowed[1], mine, False)):
        g.add(ProcessorSpec(node, functools.partial(
            StreamStreamJoinProcessor, other, pending, joiner, windows, kind, is_left),
            (parent,)))
    g.add(ProcessorSpec(merge, ops.PassThroughProcessor, (this, that)))
    for store, side, users in ((mine, left, (windowed[0], that)),
                               (theirs, right, (windowed[1], this))):
        g.add_store(WindowStoreBuilder(
            WindowBytesStoreSupplier(store, True, retention, windows.size_ms() + 1, True),
            side.key_serde, side.value_serde, logging_enabled=joined.logging,
            log_config=joined.log_config), users)
    if pending is not None:
        g.add_store(KeyValueStoreBuilder(
            KeyValueBytesStoreSupplier(pending, False), PendingKeySerde(left.key_serde),
            PendingValuesSerde(left.value_serde, right.value_serde),
            logging_enabled=joined.logging, log_config=joined.log_config), (this, that))
    copartition(g, left.node, right.node)
    return merge
