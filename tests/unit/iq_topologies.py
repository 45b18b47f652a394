"""The topologies and test drivers the interactive-query unit tests share: a DSL topology
with a store of every kind (key-value, window, session, versioned), and a Processor-API one
with an in-memory and a RocksDB store, each driven with records in every store."""

import contextlib

from kspark import Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows
from kspark.processor import Processor, Topology
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()


def dsl_topology():
    """counts (KV, timestamped), windowed (window, timestamped), sessions (session
    aggregate), rates (versioned table)."""
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=S)
    s.group_by_key().count(Materialized.as_("counts"))
    s.group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 100)).count(
        Materialized.as_("windowed"))
    s.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 1000)).aggregate(
        lambda: "", lambda k, v, agg: agg + v, lambda k, a, c: a + c,
        Materialized.as_("sessions").with_key_serde(S).with_value_serde(S))
    b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 1_000)))
    return b.build()


class Put(Processor):
    """Puts each record's value under its key in both Processor-API stores."""

    def init(self, context):
        self.stores = [context.get_state_store("mem"), context.get_state_store("disk")]

    def process(self, record):
        for store in self.stores:
            store.put(record.key, record.value)


def papi_topology():
    return (Topology().add_source("src", "in", key_serde=S, value_serde=L)
            .add_processor("put", Put, "src")
            .add_state_store(Stores.key_value_store_builder(
                Stores.in_memory_key_value_store("mem"), S, L), "put")
            .add_state_store(Stores.key_value_store_builder(
                Stores.persistent_key_value_store("disk"), S, L), "put"))


@contextlib.contextmanager
def dsl_driver():
    """A driver of dsl_topology() with records in every store."""
    with TopologyTestDriver(dsl_topology()) as d:
        i = d.create_input_topic("in", S, S)
        for key, value, ts in [("a", "x", 1), ("b", "y", 2), ("a", "z", 12), ("c", "w", 3)]:
            i.pipe_input(key, value, ts)
        rates = d.create_input_topic("rates", S, L)
        for value, ts in [(1, 10), (2, 20), (3, 30)]:
            rates.pipe_input("eur", value, ts)
        yield d


@contextlib.contextmanager
def papi_driver():
    """A driver of papi_topology() with a, b, c in both stores."""
    with TopologyTestDriver(papi_topology()) as d:
        i = d.create_input_topic("in", S, L)
        for key, value in [("b", 2), ("a", 1), ("c", 3)]:
            i.pipe_input(key, value)
        yield d
