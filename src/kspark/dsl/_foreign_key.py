"""How a foreign-key table-table join writes itself into the graph, node for node, name for
name, as Kafka Streams 4.1's ``KTableImpl#doJoinOnForeignKey``: this table's rows
subscribe to the other table's row their foreign key names, through a registration topic
partitioned like the other table; the other table's side answers each subscription (now,
and whenever its row changes) through a response topic partitioned like this table; this
table's side joins each answer that still matches its row, into the result table.

``KTable.join(other, foreign_key_extractor, joiner)`` and ``left_join`` call
:func:`foreign_key_join`. ``TableJoined.with_name(name)`` names every node, store and topic
after ``name`` (``<name>-subscription-registration-topic`` ...), as in Java.

Example:
    >>> import re
    >>> from kspark import StreamsBuilder, Serdes
    >>> b = StreamsBuilder()
    >>> S = Serdes.String()
    >>> orders = b.table("orders", key_serde=S, value_serde=S)      # "p1|3"
    >>> products = b.table("products", key_serde=S, value_serde=S)  # "apple"
    >>> _ = orders.join(products, lambda o: o.split("|")[0], lambda o, p: f"{o} {p}")
    >>> text = str(b.build().describe())
    >>> for topic in sorted(set(re.findall(r"KTABLE-FK-JOIN-[A-Z-]+[0-9]+-topic", text))):
    ...     print(topic)
    KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic
    KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark._engine.joins import fk_wire
from kspark._engine.joins import foreign_key as fk
from kspark._engine.state.internal_serdes import PlainValueSerde
from kspark._engine.state.timestamped import ValueAndTimestampSerde
from kspark._engine.tables.processors import Switch, TableSourceProcessor
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark._graph.naming import store_name, suffixed_name
from kspark.dsl._upstream import Upstream
from kspark.dsl.materialized import Materialized
from kspark.errors import TopologyError
from kspark.serde import Serdes
from kspark.state.stores import KeyValueBytesStoreSupplier, KeyValueStoreBuilder

__all__ = ["foreign_key_join", "FkSide", "FkResult"]

_TOPIC = "-topic"


@dataclass(frozen=True)
class FkSide:
    """One table of the join: where it is in the graph, and how its rows are read."""

    up: Upstream
    reader: Any  # a ValueGetter of the table's rows


@dataclass(frozen=True)
class FkResult:
    """The result table's node, its store's name and builder, and whether the user named it."""

    node: str
    store: str
    builder: Any
    queryable: bool


def foreign_key_join(this: FkSide, other: FkSide, extractor: Callable[..., Any],
                     joiner: Callable[[Any, Any], Any], left: bool, m: Materialized,
                     name: str | None, output: Switch) -> FkResult:
    """Add the join of ``this`` with ``other`` on ``extractor``'s foreign key, named after
    ``name`` (a TableJoined's) or generated; ``output``: the result's materialization."""
    g = this.up.graph
    for side in (this, other):
        if side.reader is None:
            raise TopologyError(f"table {side.up.node!r} cannot be read by key, so it cannot "
                                "be joined on a foreign key: materialize it first")
    registration = suffixed_name(g, name, "-subscription-registration",
                                 "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION") + _TOPIC
    source = _subscribe(this, other, registration, extractor, left, name)
    answered = _answer(this, other, source, name)
    response = suffixed_name(g, name, "-subscription-response",
                             "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE") + _TOPIC
    g.add(SinkSpec(suffixed_name(g, name, "-subscription-response-sink", "KTABLE-SINK"),
                   response, answered, Serdes.ByteArray(), fk_wire.FramedSerde(),
                   fk_wire.framed_partition, internal=True))
    result = _resolve(this, other, response, registration, joiner, left, m, name, output)
    g.partitions_like[registration] = g.upstream_topic(other.up.node)
    g.partitions_like[response] = g.upstream_topic(this.up.node)
    return result


def _subscribe(this: FkSide, other: FkSide, topic: str, extractor: Callable[..., Any],
               left: bool, name: str | None) -> str:
    """1. this table's side: the subscriptions, through ``topic``; the node reading them."""
    g = this.up.graph
    send = suffixed_name(g, name, "-subscription-registration-processor",
                         "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION")
    g.add(ProcessorSpec(send, functools.partial(
        fk.SubscriptionSendProcessor, extractor, left, f"{topic}-vh", other.up.key_serde,
        this.up.value_serde, this.up.key_serde), (this.up.node,)))
    sink = suffixed_name(g, name, "-subscription-registration-sink", "KTABLE-SINK")
    g.add(SinkSpec(sink, topic, (send,), other.up.key_serde, fk_wire.FramedSerde(),
                   internal=True))
    source = suffixed_name(g, name, "-subscription-registration-source", "KTABLE-SOURCE")
    g.add(SourceSpec(source, (topic,), other.up.key_serde, Serdes.ByteArray(), internal=True))
    return source


def _answer(this: FkSide, other: FkSide, source: str, name: str | None) -> tuple[str, str]:
    """2. the other table's side: keep the subscriptions and answer them, when they come
    and when the other table's row changes; the two answering nodes."""
    g, raw = this.up.graph, Serdes.ByteArray()
    store = suffixed_name(g, name, "-subscription-store",
                          "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE")
    receive = suffixed_name(g, name, "-subscription-receive",
                            "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR")
    g.add(ProcessorSpec(receive, functools.partial(
        fk.SubscriptionReceiveProcessor, store, other.up.key_serde), (source,)))
    g.add_store(KeyValueStoreBuilder(KeyValueBytesStoreSupplier(store, True), raw,
                                     ValueAndTimestampSerde(raw)), (receive,))
    join = suffixed_name(g, name, "-subscription-join-foreign",
                         "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR")
    g.add(ProcessorSpec(join, functools.partial(
        fk.SubscriptionJoinProcessor, other.reader, other.up.value_serde), (receive,)))
    g.connect((join,), other.reader.stores)
    changes = suffixed_name(g, name, "-foreign-join-subscription",
                            "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR")
    g.add(ProcessorSpec(changes, functools.partial(
        fk.ForeignTableJoinProcessor, store, other.up.key_serde, other.up.value_serde),
        (other.up.node,)))
    g.connect((changes,), (store,))
    return join, changes


def _resolve(this: FkSide, other: FkSide, topic: str, registration: str,
             joiner: Callable[[Any, Any], Any], left: bool, m: Materialized,
             name: str | None, output: Switch) -> FkResult:
    """3. back with this table: the answers that still match its rows, joined; the result
    table (a table source, materialized when named or needed, as Java's)."""
    g: TopologyGraph = this.up.graph
    source = suffixed_name(g, name, "-subscription-response-source", "KTABLE-SOURCE")
    g.add(SourceSpec(source, (topic,), Serdes.ByteArray(), Serdes.ByteArray(), internal=True))
    resolve = suffixed_name(g, name, "-subscription-response-resolver",
                            "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR")
    g.add(ProcessorSpec(resolve, functools.partial(
        fk.ResponseJoinProcessor, this.reader, joiner, left, f"{registration}-vh",
        this.up.key_serde, this.up.value_serde, other.up.value_serde), (source,)))
    g.connect((resolve,), this.reader.stores)
    node = suffixed_name(g, name, "-result", "KTABLE-FK-JOIN-OUTPUT")
    # only this store counts as unnamed for KIP-1111's explicit naming, as in Java 4.1 (its
    # subscription store and topics are not checked)
    store = m.store_name or store_name(g, "KTABLE-FK-JOIN-OUTPUT", m.logging)
    g.add(ProcessorSpec(node, functools.partial(TableSourceProcessor, store, output),
                        (resolve,)))
    # an unnamed result store holds whatever the joiner returns: kspark's plain encoding
    plain = m.store_name is None and m.value_serde is None
    builder = m.builder(store, this.up.key_serde, PlainValueSerde() if plain else m.value_serde)
    return FkResult(node, store, builder, m.store_name is not None)
