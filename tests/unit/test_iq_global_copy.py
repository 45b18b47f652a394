"""Global stores through ``KafkaStreams.store``/``query`` (``_iq/global_copy.py``): the
querying process's own copy, caught up from the global topics at each read, answers as the
TopologyTestDriver does (same values, same errors); IQv2 refuses a global store as Java's
``KafkaStreams.query`` and the driver do. Kafka here is in memory."""

from pathlib import Path

import pytest

from kspark import Materialized, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder
from kspark._iq import global_copy
from kspark._iq.global_copy import GlobalCopy
from kspark._iq.interactive import InteractiveQueries
from kspark.config import StreamsConfig
from kspark.errors import InvalidStateStoreError, UnknownStateStoreError
from kspark.query import FailureReason, KeyQuery, StateQueryRequest
from kspark.testing import TopologyTestDriver
from tests.unit.test_recovery import MemoryChangelogs

S = Serdes.String()
T = QueryableStoreTypes
ROWS = [(0, "fr", "France"), (1, "de", "Germany"), (0, "it", "Italy"), (1, "fr", "La France")]


def _topology():
    b = StreamsBuilder()
    b.global_table("countries", key_serde=S, value_serde=S,
                   materialized=Materialized.as_("countries-store"))
    b.stream("orders", key_serde=S, value_serde=S).to("out", key_serde=S, value_serde=S)
    return b.build()


class _Admin:
    """The admin calls the copy makes, over in-memory topics."""

    def __init__(self, logs):
        self.logs = logs

    def partition_counts(self, patience_s=None):
        return {t: len(parts) for t, parts in self.logs.topics.items()}

    def end_offsets(self, partitions):
        return self.logs.end_offsets(partitions)


@pytest.fixture
def kafka(monkeypatch):
    logs = MemoryChangelogs({"countries": {0: [], 1: []}})
    for p, k, v in ROWS:
        logs.append("countries", p, k.encode(), v.encode())
    monkeypatch.setattr(global_copy, "Admin", lambda settings, timeout_ms: _Admin(logs))
    monkeypatch.setattr(global_copy, "KafkaChangelogReader", lambda admin, s, t: logs)
    return logs


def _config(tmp_path):
    return StreamsConfig({"application.id": "app", "bootstrap.servers": "unused:9092",
                          "state.dir": str(tmp_path / "state")})


def _driver():
    d = TopologyTestDriver(_topology())
    pipe = d.create_input_topic("countries", S, S)
    for _, k, v in ROWS:
        pipe.pipe_input(k, v)
    return d


def _params(name="countries-store", store_type=None):
    return StoreQueryParameters.from_name_and_type(name, store_type or T.key_value_store())


def test_the_copy_answers_as_the_test_driver_and_catches_up_at_each_read(kafka, tmp_path):
    copy = GlobalCopy(_topology()._graph, _config(tmp_path))
    kv = copy.store(_params())
    with _driver() as d:
        expected = d.store(_params())
        assert kv.get("fr") == expected.get("fr") == "La France"
        assert [(e.key, e.value) for e in kv.all()] == \
            [(e.key, e.value) for e in expected.all()]
        assert [e.key for e in kv.range("de", "fr")] == ["de", "fr"]
        assert kv.approximate_num_entries() >= 3  # RocksDB's estimate
        stamped = copy.store(_params(store_type=T.timestamped_key_value_store()))
        assert stamped.get("de").value == "Germany"
        kafka.append("countries", 0, b"es", b"Spain")
        kafka.append("countries", 1, b"de", None)  # a tombstone deletes
        assert kv.get("es") == "Spain" and kv.get("de") is None
        position = copy.evaluate("countries-store", KeyQuery.with_key("es")).get_position()
        assert position.get_partition_positions("countries") == {0: 2, 1: 2}
    directory = copy._directory
    copy.close()
    assert directory is not None and not Path(directory).exists()


def test_a_wrong_store_type_is_refused_as_the_driver_refuses_it(kafka, tmp_path):
    copy = GlobalCopy(_topology()._graph, _config(tmp_path))
    with _driver() as d:
        with pytest.raises(InvalidStateStoreError) as driver_says:
            d.store(_params(store_type=T.window_store()))
    with pytest.raises(InvalidStateStoreError) as copy_says:
        copy.store(_params(store_type=T.window_store()))
    assert str(copy_says.value) == str(driver_says.value)
    copy.close()


class _Streams(InteractiveQueries):
    """KafkaStreams' query methods over a started application whose workers hold no store."""

    def __init__(self, config):
        self.config, self._topology, self._app = config, _topology(), object()
        self._query_client = type("Client", (), {"catalog": {}, "close": lambda self: None})()


def test_kafka_streams_reads_a_global_store_and_refuses_it_in_iq_v2_as_the_driver(
        kafka, tmp_path):
    streams = _Streams(_config(tmp_path))
    assert streams.store(_params()).get("it") == "Italy"
    request = StateQueryRequest.in_store("countries-store").with_query(KeyQuery.with_key("it"))
    with _driver() as d:
        expected = d.query(request).get_global_result()
        with pytest.raises(UnknownStateStoreError) as driver_says:
            d.store(_params("nope"))
    got = streams.query(request).get_global_result()
    assert got.get_failure_reason() is expected.get_failure_reason() is \
        FailureReason.UNKNOWN_QUERY_TYPE
    with pytest.raises(UnknownStateStoreError) as streams_says:
        streams.store(_params("nope"))
    assert str(streams_says.value) == str(driver_says.value)
    with pytest.raises(InvalidStateStoreError, match="global store"):
        streams.query_metadata_for_key("countries-store", "it", S)
    streams._close_queries()


def test_a_copy_that_cannot_read_its_topics_is_not_available_until_it_can(kafka, tmp_path,
                                                                           monkeypatch):
    from kspark.errors import StateStoreNotAvailableError

    def unreachable(settings, timeout_ms):
        raise OSError("no broker")

    copy = GlobalCopy(_topology()._graph, _config(tmp_path))
    monkeypatch.setattr(global_copy, "Admin", unreachable)
    with pytest.raises(StateStoreNotAvailableError, match="'countries-store'.*no broker"):
        copy.store(_params()).get("fr")
    monkeypatch.setattr(global_copy, "Admin", lambda settings, timeout_ms: _Admin(kafka))
    assert copy.store(_params()).get("fr") == "La France"
    copy.close()
