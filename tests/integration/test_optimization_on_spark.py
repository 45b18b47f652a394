"""``topology.optimization=all`` on Spark, in both execution modes: a source KTable's store
gets no changelog topic (its input topic is its changelog, as Kafka Streams'
``reuse.ktable.source.topics``), and a run after a restart restores the store from that
topic, up to the offsets the application committed."""

from __future__ import annotations

import pytest

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, StoreQueryParameters,
                    StreamsBuilder)
from tests.conftest import consume_all
from tests.integration.test_real_time import S, _produce

pytestmark = pytest.mark.integration


def _topology(prices: str, rates: str, orders: str, out: str):
    """Orders joined with prices (an in-memory store: restored in full) and rates (a
    persistent one: its checkpoint here covers what was committed)."""
    b = StreamsBuilder()
    price = b.table(prices, Materialized.as_("prices-store").in_memory(), key_serde=S,
                    value_serde=S)
    rate = b.table(rates, Materialized.as_("rates-store"), key_serde=S, value_serde=S)
    (b.stream(orders, key_serde=S, value_serde=S)
     .join(price, lambda order, p: f"{order}@{p}")
     .join(rate, lambda priced, r: f"{priced}x{r}").to(out, key_serde=S, value_serde=S))
    return b.build({"topology.optimization": "all"})


def test_a_source_table_restores_from_its_topic_and_has_no_changelog(
        broker, spark, admin, topic_name, app_config, execution_mode):
    prices, rates = topic_name("prices"), topic_name("rates")
    orders, out = topic_name("orders"), topic_name("priced")
    admin.create_topics({prices: 2, rates: 2, orders: 2, out: 2})
    cfg = app_config(execution_mode=execution_mode, statestore_cache_max_bytes=0)
    _produce(broker, prices, [(f"p{i}", f"{i}0", 1000 + i) for i in range(4)])
    _produce(broker, rates, [(f"p{i}", f"r{i}", 1000 + i) for i in range(4)])
    restored = []
    for run in range(2):  # the second run is a new application instance: a restore
        _produce(broker, orders, [(f"p{i}", f"o{run}{i}", 2000 + 10 * run + i)
                                  for i in range(4)])
        streams = KafkaStreams(_topology(prices, rates, orders, out), cfg, spark=spark)
        streams.start()  # a batch run (autostop.at=eol): what is there now, then stop
        assert streams.await_termination(120) and streams.batch_finished(), (execution_mode, run)
        restored.append(streams.progress()["restored_records"])
        rates_rows = {kv.key: kv.value for kv in streams.store(  # queried after the run
            StoreQueryParameters.from_name_and_type(
                "rates-store", QueryableStoreTypes.key_value_store())).all()}
        assert rates_rows == {f"p{i}": f"r{i}" for i in range(4)}, (execution_mode, run, rates_rows)
        streams.close()
    counts = admin.partition_counts()
    assert not [t for t in counts if t.startswith(cfg["application.id"]) and
                t.endswith("-changelog")], sorted(counts)
    got = sorted(m.value().decode() for m in consume_all(broker, out, 8, timeout_s=60))
    assert got == sorted(f"o{run}{i}@{i}0xr{i}" for run in range(2) for i in range(4)), got
    # the prices read again from their topic; the rates' local state was checkpointed
    assert restored == [0, 4], restored
