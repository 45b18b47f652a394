"""Interactive queries on Spark (docs/interactive-queries.md): a running application's
stores read from outside, answered by the workers holding each task, in both execution
modes; what they answer equals the TopologyTestDriver's stores."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer

from kspark._cli import main as cli
from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder, TimeWindows)
from kspark.errors import InvalidStateStoreError, UnknownStateStoreError
from kspark.query import (FailureReason, KeyQuery, Position, PositionBound, RangeQuery,
                          StateQueryRequest, WindowKeyQuery)
from kspark.state import Stores
from kspark.testing import TopologyTestDriver
from tests.matrix import full_matrix_only

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
KEYS = [f"user-{i}" for i in range(12)]


def _topology(src, out):
    b = StreamsBuilder()
    words = b.stream(src, key_serde=S, value_serde=S)
    grouped = words.group_by_key()
    grouped.count(Materialized.as_("counts")).to_stream().to(out, key_serde=S, value_serde=L)
    grouped.count(Materialized.as_(Stores.in_memory_key_value_store("mem-counts")))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10_000)).count(
        Materialized.as_("windowed"))
    return b.build()


def _records(n):
    return [(KEYS[i % len(KEYS)], f"w{i}", 1_000 + 997 * i) for i in range(n)]


def _produce(broker, topic, records):
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True,
                  "partitioner": "murmur2_random"})  # as Java's producer partitions
    for k, v, ts in records:
        p.produce(topic, key=k.encode(), value=v.encode(), timestamp=ts)
    p.flush(10)


def _expected(records, src, out):
    """The TopologyTestDriver's stores after the same input (the cache off: a query reads
    what was committed, below any cache)."""
    with TopologyTestDriver(_topology(src, out), {"statestore.cache.max.bytes": 0}) as d:
        pipe = d.create_input_topic(src, S, S)
        for k, v, ts in records:
            pipe.pipe_input(k, v, ts)
        counts = {kv.key: kv.value for kv in d.get_key_value_store("counts").all()}
        windows = [(kv.key.key, kv.key.window.start, kv.value)
                   for kv in d.get_window_store("windowed").all()]
    return counts, windows


def _create(admin, *topics, partitions=2):
    admin.create_topics({t: partitions for t in topics})


@pytest.mark.timeout(600)
@pytest.mark.parametrize("execution_mode", [full_matrix_only("micro_batch", reason="in the "
    "suite, micro-batch stores are read by the conformance sample (against Java) and the "
    "standalone-cluster run"), "real_time"])
def test_stores_read_after_a_run_equal_the_test_drivers(broker, spark, admin, app_config,
                                                        topic_name, execution_mode, tmp_path,
                                                        capsys):
    src, out = topic_name("iq-in"), topic_name("iq-out")
    _create(admin, src, out)
    records = _records(300)
    _produce(broker, src, records)
    counts, windows = _expected(records, src, out)
    cfg = app_config(execution_mode=execution_mode, processing_guarantee="exactly_once_v2",
                     statestore_cache_max_bytes=0,
                     **({"max_offsets_per_trigger": 100} if execution_mode == "micro_batch"
                        else {}))
    with KafkaStreams(_topology(src, out), cfg, spark=spark) as streams:
        streams.start()
        assert streams.await_termination(300)
        kv = streams.store(StoreQueryParameters.from_name_and_type(
            "counts", QueryableStoreTypes.key_value_store()))
        assert {e.key: e.value for e in kv.all()} == counts
        assert all(kv.get(k) == counts[k] for k in KEYS) and kv.get("nobody") is None
        assert [e.key for e in kv.range("user-1", "user-2")] == sorted(
            k for k in counts if "user-1" <= k <= "user-2")
        assert kv.approximate_num_entries() >= 1
        mem = streams.store(StoreQueryParameters.from_name_and_type(
            "mem-counts", QueryableStoreTypes.key_value_store()))
        assert {e.key: e.value for e in mem.all()} == counts
        win = streams.store(StoreQueryParameters.from_name_and_type(
            "windowed", QueryableStoreTypes.window_store()))
        got = sorted((e.key.key, e.key.window.start, e.value) for e in win.all())
        assert got == sorted(windows)
        k, start, n = windows[0]
        assert [(e.key, e.value) for e in win.fetch(k, 0, 10**12)] == sorted(
            (s, c) for kk, s, c in windows if kk == k)

        # IQv2: one partition answers a key, with the position it reflects
        meta = streams.query_metadata_for_key("counts", "user-3", S)
        assert meta.active_host is not None and 0 <= meta.partition < 2
        result = streams.query(StateQueryRequest.in_store("counts")
                               .with_query(KeyQuery.with_key("user-3"))
                               .with_partitions({meta.partition}))
        only = result.get_only_partition_result()
        assert only.get_result() == counts["user-3"]
        changelog = f"{cfg['application.id']}-counts-changelog"
        ends = _committed_ends(broker, changelog)
        assert only.get_position().get_partition_positions(changelog)[meta.partition] == \
            ends[meta.partition]
        at_ends = PositionBound.at(Position.from_map({changelog: ends}))
        met = streams.query(StateQueryRequest.in_store("counts")
                            .with_query(RangeQuery.with_no_bounds()).with_position_bound(at_ends))
        assert {e.key: e.value for r in met.get_partition_results().values()
                for e in r.get_result()} == counts
        ahead = PositionBound.at(Position.from_map({changelog: {0: ends[0] + 10**6}}))
        behind = streams.query(StateQueryRequest.in_store("counts").with_query(
            KeyQuery.with_key("user-3")).with_partitions({0}).with_position_bound(ahead))
        assert behind.get_partition_results()[0].get_failure_reason() is \
            FailureReason.NOT_UP_TO_BOUND
        windowed = streams.query(StateQueryRequest.in_store("windowed").with_query(
            WindowKeyQuery.with_key_and_window_start_range(k, 0, 10**12)))
        assert sorted((e.key, e.value.value) for r in windowed.get_partition_results().values()
                      for e in r.get_result()) == sorted((s, c) for kk, s, c in windows
                                                         if kk == k)

        # the operators' command line, from another config file: JSON lines
        props = tmp_path / "app.properties"
        props.write_text(f"application.id={cfg['application.id']}\n"
                         f"bootstrap.servers={broker}\n")
        capsys.readouterr()
        assert cli.main(["store", "get", "--config", str(props), "--store", "counts",
                         "--key", "user-3"]) == 0
        assert capsys.readouterr().out.splitlines() == [json.dumps(counts["user-3"])]
        assert cli.main(["store", "all", "--config", str(props), "--store", "counts"]) == 0
        rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert {r["key"]: r["value"] for r in rows} == counts
        assert cli.main(["store", "all", "--config", str(props), "--store", "nope"]) == 2
        assert "counts" in capsys.readouterr().err

        # clear errors for a wrong name or type
        with pytest.raises(UnknownStateStoreError, match="counts.*mem-counts.*windowed"):
            streams.store(StoreQueryParameters.from_name_and_type(
                "cuonts", QueryableStoreTypes.key_value_store()))
        with pytest.raises(InvalidStateStoreError, match="window"):
            streams.store(StoreQueryParameters.from_name_and_type(
                "windowed", QueryableStoreTypes.key_value_store()))


def _committed_ends(broker, topic):
    """The end offset of each partition of ``topic`` (read_committed's view)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker, "group.id": "iq-ends",
                  "isolation.level": "read_committed"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(2)}
    finally:
        c.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("guarantee", [full_matrix_only("at_least_once", reason="the suite "
    "runs exactly_once_v2, the guarantee with a rule to check"), "exactly_once_v2"])
def test_a_written_key_becomes_visible_in_real_time_mode_and_only_once_committed(
        broker, spark, admin, app_config, topic_name, guarantee):
    """A streaming real-time application: each key written is visible through a KeyQuery
    soon after (bounded by its commit interval), and under exactly_once_v2 only once its
    output is committed (a read_committed reader sees it)."""
    src, out = topic_name("iq-rt-in"), topic_name("iq-rt-out")
    _create(admin, src, out)
    cfg = app_config(execution_mode="real_time", autostop_at="none",
                     processing_guarantee=guarantee, commit_interval_ms=500)
    with KafkaStreams(_topology(src, out), cfg, spark=spark) as streams:
        streams.start()
        kv = streams.store(StoreQueryParameters.from_name_and_type(
            "counts", QueryableStoreTypes.key_value_store()))
        reader = _OutputReader(broker, out)
        for key in KEYS[:4]:
            _produce(broker, src, [(key, "w", int(time.time() * 1000))])
            deadline = time.monotonic() + 120
            while kv.get(key) != 1:
                assert time.monotonic() < deadline, f"{key} never became visible"
                time.sleep(0.02)
            if guarantee == "exactly_once_v2":  # committed: its output is readable now
                assert reader.has(key, timeout_s=10), f"{key} was visible before its commit"
        reader.close()


class _OutputReader:
    """A read_committed reader of the count topic's records, by key."""

    def __init__(self, broker, topic):
        import uuid

        from confluent_kafka import Consumer

        self.seen: set[str] = set()
        self.c = Consumer({"bootstrap.servers": broker, "group.id": f"r-{uuid.uuid4().hex}",
                           "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
        self.c.subscribe([topic])

    def has(self, key, timeout_s):
        deadline = time.monotonic() + timeout_s
        while key not in self.seen and time.monotonic() < deadline:
            for m in self.c.consume(100, 0.2):
                if m.error() is None and m.key() is not None:
                    self.seen.add(m.key().decode())
        return key in self.seen

    def close(self):
        self.c.close()
