"""Interactive queries on Spark, the parts beyond the workers' stores
(docs/interactive-queries.md): a global table read through ``KafkaStreams.store`` from the
driver's own copy, which catches up with the global topic (both modes; IQv2 refuses a global
store as Java does), and the workers' endpoints serving HTTPS (``query.endpoint.ssl.*``,
real-time mode: the mode does not change the endpoint)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder)
from kspark._iq.client import QueryClient, store_catalog
from kspark._iq.tls import CAFILE, CERTFILE, KEYFILE
from kspark._kafka.settings import as_settings
from kspark._local.tls import CA_CERT, ensure_tls
from kspark.config import StreamsConfig
from kspark.errors import InvalidStateStoreError, UnknownStateStoreError
from kspark.query import FailureReason, KeyQuery, StateQueryRequest
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
S = Serdes.String()
KV = QueryableStoreTypes.key_value_store()


def _topology(countries, orders, out):
    b = StreamsBuilder()
    table = b.global_table(countries, key_serde=S, value_serde=S,
                           materialized=Materialized.as_("countries-store"))
    stream = b.stream(orders, key_serde=S, value_serde=S)
    stream.left_join(table, lambda k, country: country, lambda country, name: f"{country}:{name}") \
        .to(out, key_serde=S, value_serde=S)
    stream.group_by_key().count(Materialized.as_("counts"))
    return b.build()


def _produce(broker, topic, records):
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=None if v is None else v.encode())
    p.flush(10)


def _topics(admin, topic_name):
    names = topic_name("iq-countries"), topic_name("iq-orders"), topic_name("iq-out")
    admin.create_topics({names[0]: 2}, {"cleanup.policy": "compact"})  # a global topic's
    admin.create_topics(dict.fromkeys(names[1:], 2))
    return names


def _eventually(read, expected, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while (got := read()) != expected:
        assert time.monotonic() < deadline, f"{got!r} never became {expected!r}"
        time.sleep(0.1)


@pytest.mark.timeout(300)
@sampled_modes("real_time")  # micro_batch in the full matrix: the copy is the driver's either way
def test_a_global_table_is_read_from_the_drivers_copy_which_catches_up(
        broker, spark, admin, app_config, topic_name, execution_mode):
    countries, orders, out = _topics(admin, topic_name)
    _produce(broker, countries, [("fr", "France"), ("de", "Germany"), ("it", "Italy")])
    _produce(broker, orders, [("o1", "fr"), ("o2", "it")])
    cfg = app_config(execution_mode=execution_mode, processing_guarantee="exactly_once_v2")
    with KafkaStreams(_topology(countries, orders, out), cfg, spark=spark) as streams:
        streams.start()
        store = streams.store(StoreQueryParameters.from_name_and_type("countries-store", KV))
        assert store.get("fr") == "France" and store.get("es") is None
        assert {e.key: e.value for e in store.all()} == {"fr": "France", "de": "Germany",
                                                         "it": "Italy"}
        stamped = streams.store(StoreQueryParameters.from_name_and_type(
            "countries-store", QueryableStoreTypes.timestamped_key_value_store()))
        assert stamped.get("de").value == "Germany"

        _produce(broker, countries, [("es", "Spain"), ("fr", "La France"), ("de", None)])
        _eventually(lambda: {e.key: e.value for e in store.all()},
                    {"fr": "La France", "it": "Italy", "es": "Spain"})

        # IQv2 refuses a global store as Kafka Streams (and the TopologyTestDriver) do
        result = streams.query(StateQueryRequest.in_store("countries-store")
                               .with_query(KeyQuery.with_key("es")))
        assert result.get_global_result().get_failure_reason() is \
            FailureReason.UNKNOWN_QUERY_TYPE
        with pytest.raises(UnknownStateStoreError, match="countries-store.*counts"):
            streams.store(StoreQueryParameters.from_name_and_type("nope", KV))
        with pytest.raises(InvalidStateStoreError, match="window store"):
            streams.store(StoreQueryParameters.from_name_and_type(
                "countries-store", QueryableStoreTypes.window_store()))


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    data = tmp_path_factory.mktemp("iq-tls")
    ensure_tls(data, data / "tls")
    return {CERTFILE: str(data / "tls" / "server.pem"), KEYFILE: str(data / "tls" / "server.key"),
            CAFILE: str(data / "tls" / CA_CERT)}


@pytest.mark.timeout(300)
def test_the_workers_endpoints_serve_https_when_configured(broker, spark, admin, app_config,
                                                           topic_name, tls_files):
    countries, orders, out = _topics(admin, topic_name)
    _produce(broker, orders, [("o1", "fr"), ("o2", "it"), ("o1", "de")])
    cfg = app_config(execution_mode="real_time", processing_guarantee="exactly_once_v2",
                     **{k.replace(".", "_"): v for k, v in tls_files.items()})
    topology = _topology(countries, orders, out)
    with KafkaStreams(topology, cfg, spark=spark) as streams:
        streams.start()
        assert streams.await_termination(240)
        counts = streams.store(StoreQueryParameters.from_name_and_type("counts", KV))
        assert {e.key: e.value for e in counts.all()} == {"o1": 2, "o2": 1}
        meta = streams.query_metadata_for_key("counts", "o1", S)
        assert meta.active_host.host == "127.0.0.1"  # what the certificate names

        # a querying side without the TLS keys is told what to set
        plain = QueryClient(as_settings(cfg), cfg["application.id"],
                            store_catalog(topology._graph, StreamsConfig(cfg)), 5000)
        try:
            with pytest.raises(InvalidStateStoreError, match=f"serves HTTPS only.*{CAFILE}"):
                plain.query(StateQueryRequest.in_store("counts").with_query(
                    KeyQuery.with_key("o1")))
        finally:
            plain.close()
