"""A worker's copy of the global stores (``kspark._spark.globals``) against the real broker:
checkpoint adoption after a restart, replays of older batches, and KIP-406 rebuilds under
each reset policy. Run in the test process, as a Spark Python worker runs it."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kspark import Materialized, Serdes, StreamsBuilder, StreamsConfig
from kspark._spark import globals as worker_globals
from kspark._worker import registry

pytestmark = pytest.mark.integration
S = Serdes.String()


def _graph(topic: str, offset_reset: str | None = None):
    b = StreamsBuilder()
    b.global_table(topic, key_serde=S, value_serde=S, offset_reset=offset_reset)
    b.stream(f"{topic}-s", key_serde=S, value_serde=S).to(f"{topic}-o")
    return b.build()._graph


def _produce(broker: str, topic: str, pairs: list[tuple[str, str]]) -> None:
    p = Producer({"bootstrap.servers": broker})
    for k, v in pairs:
        p.produce(topic, key=k.encode(), value=v.encode())
    assert p.flush(30) == 0


def _pins(admin, topic: str) -> dict:
    return {topic: {"0": admin.end_offsets([(topic, 0)])[(topic, 0)]}}


def _restart_worker(app_id: str) -> None:
    """As if the worker process died: its copy is closed and forgotten."""
    state, _ = registry().pop("globals", (app_id,))
    state.close()


@pytest.fixture
def setup(broker, admin, topic_name, tmp_path):
    topic = topic_name("gs")
    admin.create_topics({topic: 1}, {"cleanup.policy": "compact,delete"})

    def config(**extra):
        return StreamsConfig({"application.id": f"gs-{topic}", "bootstrap.servers": broker,
                              "state.dir": str(tmp_path), "execution.mode": "micro_batch",
                              **extra}).as_dict()
    yield topic, config
    for (app_id,), _ in registry().items("globals"):
        _restart_worker(app_id)


def test_a_restarted_worker_adopts_the_copy_and_reads_only_what_is_new(
        broker, admin, setup, monkeypatch, caplog):
    topic, config = setup
    graph, c = _graph(topic), config()
    _produce(broker, topic, [(f"k{i}", "a") for i in range(30)])
    state = worker_globals.global_state(graph, c, _pins(admin, topic))
    store = next(iter(state.stores))
    assert state.stores[store].get("k7").value == "a"
    _restart_worker(c["application.id"])
    _produce(broker, topic, [("k7", "b"), ("k99", "c")])
    read = []
    real = worker_globals.read_range
    monkeypatch.setattr(worker_globals, "read_range",
                        lambda *a, **k: (read.append(a[3:5]) or real(*a, **k)))
    with caplog.at_level(logging.INFO, "kspark"):
        state = worker_globals.global_state(graph, c, _pins(admin, topic))
    assert "resumes the copy" in caplog.text
    assert read == [(30, 32)], "only the new records are read"
    assert (state.stores[store].get("k7").value, state.stores[store].get("k99").value) == ("b", "c")


def test_a_replayed_older_batch_sees_the_store_as_it_was_pinned(broker, admin, setup):
    topic, config = setup
    graph, c = _graph(topic), config()
    _produce(broker, topic, [("k", "old")])
    old = _pins(admin, topic)
    _produce(broker, topic, [("k", "new")])
    store = next(iter(graph.global_stores))
    stores = worker_globals.global_state(graph, c, _pins(admin, topic)).stores
    assert stores[store].get("k").value == "new"
    assert worker_globals.global_state(graph, c, old).stores[store].get("k").value == "old"


@pytest.mark.parametrize("policy", ["earliest", "latest"])
def test_kip406_records_deleted_below_the_copy_rebuild_per_policy(broker, admin, setup, policy,
                                                                   caplog):
    topic, config = setup
    graph = _graph(topic, offset_reset=policy if policy == "latest" else None)
    c = config()
    _produce(broker, topic, [("a", "1"), ("b", "1")])
    store = next(iter(graph.global_stores))
    worker_globals.global_state(graph, c, _pins(admin, topic))  # the copy is at offset 2
    _produce(broker, topic, [("a", "2"), ("c", "2"), ("d", "2")])
    client = AdminClient({"bootstrap.servers": broker})  # kept: its futures die with it
    (fut,) = client.delete_records([TopicPartition(topic, 0, 3)]).values()
    fut.result(30)  # offsets 0..2 are gone: the copy's offset 2 is below the earliest, 3
    with caplog.at_level(logging.WARNING, "kspark"):
        state = worker_globals.global_state(graph, c, _pins(admin, topic))
    assert (f"global store {store!r}: its offset 2 of partition 0 is below the topic's earliest "
            f"offset 3 (records were deleted); wiping it and rebuilding it from topic {topic!r} "
            f"({policy})") in caplog.text
    rows = {kv.key: kv.value.value for kv in state.stores[store].all()}
    assert rows == ({"c": "2", "d": "2"} if policy == "earliest" else {})
    assert state.offsets[(topic, 0)] == 5


def test_an_in_memory_global_store_next_to_a_persistent_one_is_read_again(broker, admin, setup,
                                                                        topic_name):
    topic, config = setup
    other = topic_name("gs-mem")
    admin.create_topics({other: 1}, {"cleanup.policy": "compact"})
    b = StreamsBuilder()
    b.global_table(topic, key_serde=S, value_serde=S)
    mem = b.global_table(other, key_serde=S, value_serde=S,
                         materialized=Materialized.as_("mem-store").in_memory())
    b.stream(f"{topic}-s", key_serde=S, value_serde=S).to(f"{topic}-o")
    graph, c = b.build()._graph, config()
    _produce(broker, topic, [("a", "1")])
    _produce(broker, other, [("x", "1")])
    pins = {**_pins(admin, topic), **_pins(admin, other)}
    worker_globals.global_state(graph, c, pins)
    _restart_worker(c["application.id"])
    state = worker_globals.global_state(graph, c, pins)  # adopts the persistent copy
    assert state.stores[mem.store_name].get("x").value == "1"
