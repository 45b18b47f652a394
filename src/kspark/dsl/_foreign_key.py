"""How a foreign-key table-table join writes itself into the graph (Kafka Streams'
KIP-213 layout): this table's rows subscribe to the other table's row their foreign key
names, through a registration topic partitioned like the other table; the other table's
side answers each subscription, now and whenever its row changes, through a response topic
partitioned like this table; this table's side keeps the newest answer per key.

``KTable.join(other, foreign_key_extractor, joiner)`` and ``left_join`` call
:func:`foreign_key_join` with both tables' :class:`~kspark.dsl._upstream.Upstream`.

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
    KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kspark._engine.joins import foreign_key as fk
from kspark._engine.state.internal_serdes import PlainValueSerde
from kspark._engine.tables.processors import Switch
from kspark._graph.graph import ProcessorSpec, SinkSpec, SourceSpec, TopologyGraph
from kspark.dsl._upstream import Upstream
from kspark.dsl.materialized import Materialized
from kspark.serde import Serdes
from kspark.state.stores import KeyValueBytesStoreSupplier, KeyValueStoreBuilder

__all__ = ["foreign_key_join"]


def foreign_key_join(this: Upstream, other: Upstream, other_store: str,
                     extractor: Callable[[Any], Any], joiner: Callable[[Any, Any], Any],
                     left: bool, materialized: Materialized, output: Switch) -> tuple[str, str]:
    """Add the join of ``this`` with ``other`` (whose rows are in ``other_store``) on
    ``extractor``'s foreign key; the node of the result table and its store. ``output``
    switches on the result's forwarding of every update (a materialized source table's)."""
    g = this.graph
    registrations = _subscribe(this, other, extractor)
    resolve, responses = _answer(this, other, other_store, registrations, left)
    result = _resolve(this, other, resolve, responses, joiner, left, materialized, output)
    g.partitions_like[registrations] = g.upstream_topic(other.node)
    g.partitions_like[responses] = g.upstream_topic(this.node)
    return resolve, result


def _kv_store(name: str, key_serde: Any, value_serde: Any) -> Any:
    return KeyValueStoreBuilder(KeyValueBytesStoreSupplier(name, True), key_serde, value_serde)


def _subscribe(this: Upstream, other: Upstream, extractor: Callable[[Any], Any]) -> str:
    """1. this table's side: subscriptions keyed by foreign key; the registration topic."""
    g, raw = this.graph, Serdes.ByteArray()
    send = g.next_name("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION")
    registrations = f"{send}-topic"
    versions = f"{send}-VERSION-STATE-STORE"
    g.add(ProcessorSpec(send, functools.partial(
        fk.SubscribeProcessor, extractor, versions, this.key_serde, this.value_serde),
        (this.node,)))
    g.add_store(_kv_store(versions, this.key_serde, Serdes.Long()), (send,))
    g.add(SinkSpec(g.next_name("KTABLE-SINK"), registrations, (send,), other.key_serde, raw,
                   internal=True))
    return registrations


def _answer(this: Upstream, other: Upstream, other_store: str, registrations: str,
            left: bool) -> tuple[str, str]:
    """2. the other table's side: keep subscriptions, answer them (when they come and when
    the other table's row changes); the resolving node's name and the response topic."""
    g, raw = this.graph, Serdes.ByteArray()
    source = g.next_name("KTABLE-SOURCE")
    g.add(SourceSpec(source, (registrations,), other.key_serde, raw, internal=True))
    subscriptions = g.next_name("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE")
    receive = g.next_name("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR")
    g.add(ProcessorSpec(receive, functools.partial(
        fk.SubscriptionProcessor, subscriptions, other_store, other.key_serde,
        other.value_serde, left), (source,)))
    g.add_store(_kv_store(subscriptions, raw, raw), (receive,))
    g.connect((receive,), (other_store,))
    changes = g.next_name("KTABLE-FK-JOIN-OTHER-CHANGE")
    g.add(ProcessorSpec(changes, functools.partial(
        fk.RightChangeProcessor, subscriptions, other.key_serde, other.value_serde),
        (other.node,)))
    g.connect((changes,), (subscriptions,))
    resolve = g.next_name("KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE")
    responses = f"{resolve}-topic"
    g.add(SinkSpec(g.next_name("KTABLE-SINK"), responses, (receive, changes), raw, raw,
                   internal=True))
    return resolve, responses


def _resolve(this: Upstream, other: Upstream, resolve: str, responses: str,
             joiner: Callable[[Any, Any], Any], left: bool, m: Materialized,
             output: Switch) -> str:
    """3. back in this table's partitioning: the newest answer per key -> the result table
    (``resolve``); its store."""
    g: TopologyGraph = this.graph
    raw = Serdes.ByteArray()
    source = g.next_name("KTABLE-SOURCE")
    g.add(SourceSpec(source, (responses,), raw, raw, internal=True))
    result = m.store_name or f"{resolve}-STATE-STORE"
    seen = f"{resolve}-VERSION-STATE-STORE"
    g.add(ProcessorSpec(resolve, functools.partial(
        fk.ResolveProcessor, result, seen, joiner, left, this.key_serde, this.value_serde,
        other.value_serde, output), (source,)))
    # an unnamed result store holds whatever the joiner returns: kspark's plain encoding
    internal_values = m.store_name is None and m.value_serde is None
    g.add_store(m.builder(result, this.key_serde,
                          PlainValueSerde() if internal_values else m.value_serde), (resolve,))
    g.add_store(_kv_store(seen, raw, Serdes.Long()), (resolve,))
    return result
