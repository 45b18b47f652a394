"""Spark in, Spark out, on a real broker and SparkSession, in both execution modes: a
topology's results in a Delta table, a Parquet directory and a ``foreach_batch`` function,
exactly the TopologyTestDriver's rows, and ``read_topic`` reading the same rows back from
the Kafka output topic (docs/spark-interop.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder, TimeWindows
from kspark.dsl import TimeWindowedSerde
from kspark.errors import SparkSinkError, StreamsError
from kspark.spark import read_topic
from kspark.testing import TopologyTestDriver
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
WINDOW = 60_000
COLUMNS = ["key", "window_start", "window_end", "value", "topic", "partition", "offset",
           "timestamp", "headers"]


class RecordBatches:
    """A ``foreach_batch`` function writing each batch's columns and row count to a file."""

    def __init__(self, path: str):
        self.path = path

    def __call__(self, df, batch_id: int) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"batch": batch_id, "columns": df.columns,
                                "rows": df.count()}) + "\n")


def topology(src: str, out: str, base: Path, fn=None):
    b = StreamsBuilder()
    counts = (b.stream(src, key_serde=S, value_serde=S).group_by_key()
              .windowed_by(TimeWindows.of_size_and_grace(WINDOW, 86_400_000)).count().to_stream())
    counts.to(out, key_serde=TimeWindowedSerde(S, WINDOW), value_serde=L)
    counts.to_spark("delta", path=str(base / "delta"), name="counts-delta")
    counts.to_spark("parquet", path=str(base / "parquet"), name="counts-parquet")
    counts.foreach_batch(fn or RecordBatches(str(base / "batches.jsonl")), name="counts-fn")
    return b.build()


def records(n: int) -> list[tuple[str, str, int]]:
    return [(f"k{i % 17}", f"v{i}", 10_000_000 + 1_000 * (i % 240)) for i in range(n)]


def produce(broker: str, topic: str, data: list[tuple[str, str, int]]) -> None:
    """Write ``data`` (key, value, timestamp) to ``topic``, every record delivered."""
    p = Producer({"bootstrap.servers": broker})
    for k, v, ts in data:
        p.produce(topic, v.encode(), k.encode(), timestamp=ts)
    assert p.flush(30) == 0


def rows_of(rows) -> Counter:
    """Rows without where they are (partition, offset, topic differ between runs)."""
    return Counter((r["key"], r["window_start"], r["window_end"], r["value"], r["timestamp"])
                   for r in rows)


def test_a_batch_run_leaves_exactly_the_drivers_rows_in_delta_parquet_and_the_topic(
        execution_mode, broker, admin, spark, topic_name, app_config, tmp_path):
    src, out = topic_name("sinks-in"), topic_name("sinks-out")
    admin.create_topics({src: 2, out: 2})
    data = records(1200)
    produce(broker, src, data)
    config = app_config(execution_mode=execution_mode, processing_guarantee="exactly_once_v2",
                        statestore_cache_max_bytes=0)
    with TopologyTestDriver(topology(src, out, tmp_path / "driver"),
                            {**config, "state.dir": str(tmp_path / "driver-state")}) as d:
        topic = d.create_input_topic(src, S, S)
        for k, v, ts in data:
            topic.pipe_input(k, v, ts)
        expected = rows_of(d.get_spark_sink_rows("counts-delta"))
    assert sum(expected.values()) == 1200  # an update per record (no cache)

    streams = KafkaStreams(topology(src, out, tmp_path), config, spark=spark)
    streams.start()
    assert streams.await_termination(300)
    progress = streams.progress()
    metrics = streams.metrics()
    streams.close()
    assert metrics.value("rows-total", "spark-sink-metrics", sink="counts-delta") == 1200

    delta = _delta_snapshot(spark, tmp_path / "delta")
    assert delta.columns == COLUMNS
    assert dict(delta.dtypes)["value"] == "bigint"
    assert dict(delta.dtypes)["window_start"] == "timestamp"
    assert rows_of(delta.toArrow().to_pylist()) == expected
    parquet = spark.read.parquet(str(tmp_path / "parquet"))
    assert rows_of(parquet.toArrow().to_pylist()) == expected
    back = read_topic(spark, out, TimeWindowedSerde(S, WINDOW), L,
                      config={"bootstrap.servers": broker})
    assert back.columns == COLUMNS
    assert rows_of(back.toArrow().to_pylist()) == expected

    batches = [json.loads(line) for line in (tmp_path / "batches.jsonl").read_text().splitlines()]
    assert {tuple(b["columns"]) for b in batches} == {tuple(COLUMNS)}
    assert sum(b["rows"] for b in batches) == 1200
    assert progress["sink_rows"] == 3 * 1200 and progress["sink_batches"] >= 3, progress
    # the sinks' topics are purged once written
    sink_topics = [t for t in admin.partition_counts() if t.startswith(config["application.id"])
                   and t.endswith("-spark-sink")]
    assert len(sink_topics) == 3
    tps = [(t, p) for t in sink_topics for p in range(2)]
    assert admin.end_offsets(tps, earliest=True) == admin.end_offsets(tps)


def _delta_snapshot(spark, path: Path):
    """The Delta table's current snapshot read by Spark: the Parquet files its log lists."""
    from deltalake import DeltaTable

    return spark.read.parquet(*DeltaTable(str(path)).file_uris())


def failing(df, batch_id: int) -> None:
    if df.count():
        raise ValueError(f"the warehouse refused batch {batch_id}")


def test_a_failing_sink_fails_the_application_naming_it(execution_mode, broker, admin, spark,
                                                        topic_name, app_config, tmp_path):
    src, out = topic_name("sinks-fail-in"), topic_name("sinks-fail-out")
    admin.create_topics({src: 1, out: 1})
    produce(broker, src, records(20))
    streams = KafkaStreams(topology(src, out, tmp_path, failing),
                           app_config(execution_mode=execution_mode), spark=spark)
    streams.start()
    with pytest.raises(StreamsError, match="Spark sink 'counts-fn' .*the warehouse refused"):
        streams.await_termination(300)
    assert streams.state() == KafkaStreams.State.ERROR
    streams.close()


def test_a_sink_with_table_writes_a_catalog_table(broker, admin, spark, topic_name, app_config,
                                                  tmp_path):
    """``table=``: Spark's ``toTable`` (Iceberg's way, where the session has its catalog), here
    a Parquet table of the session's catalog, external at ``options={"path": ...}``."""
    src = topic_name("sinks-table-in")
    admin.create_topics({src: 1})
    produce(broker, src, records(30))
    table = f"views_{src.replace('-', '_')}"
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to_spark(
        "parquet", table=table, options={"path": str(tmp_path / "table")}, name="views")
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()
    got = sorted((r.key, r.value) for r in spark.table(table).collect())
    assert got == sorted((k, v) for k, v, _ in records(30))


def test_read_topic_sends_what_its_serdes_cannot_read_to_the_dead_letter_topic(
        broker, admin, spark, topic_name):
    src, dlq = topic_name("read-bad"), topic_name("read-bad-dlq")
    admin.create_topics({src: 1, dlq: 1})
    p = Producer({"bootstrap.servers": broker})
    p.produce(src, L.serialize(src, 5), b"good")
    p.produce(src, b"bad", b"bad")
    p.flush(10)
    with pytest.raises(Exception, match=f"offset 1 of topic '{src}' partition 0"):
        read_topic(spark, src, S, L, config={"bootstrap.servers": broker}).collect()
    rows = read_topic(spark, src, S, L, config={"bootstrap.servers": broker,
                                               "errors.dead.letter.queue.topic.name": dlq})
    assert [(r.key, r.value) for r in rows.collect()] == [("good", 5)]
    (dead,) = read_topic(spark, dlq, S, Serdes.ByteArray(),
                         config={"bootstrap.servers": broker}).collect()
    headers = {h.key: h.value for h in dead.headers}
    assert (dead.key, dead.value) == ("bad", b"bad")
    assert headers["__streams.errors.offset"] == b"1"
    assert b"expects 8 bytes" in headers["__streams.errors.message"]


# micro_batch in the full matrix (the suite's time); the sink's own query is a Spark
# micro-batch query in both modes, so one mode exercises its replay; make soak runs both
@sampled_modes("real_time")
def test_the_delta_table_stays_exact_through_a_driver_sigkill(execution_mode, broker, tmp_path):
    """One round of ``make soak`` with the Delta sink (``--delta``; the soak runs many,
    killing drivers and executors): the driver SIGKILLed mid-run, the application started
    again; the Delta table holds every input record once, as do the Kafka outputs, and the
    app's cached counts (the batch path of count()) end exact."""
    from tests.integration import soak

    f = soak.soak(broker, rounds=1, records=2400, guarantee="exactly_once_v2", keys=20,
                  seed=20261127, master="local[2]", work_dir=str(tmp_path),
                  victims=("driver",), max_delay_s=0.5, max_offsets=600, slow_ms=1,
                  mode=execution_mode, delta=True, counts=True)
    (kill,) = f.kills
    assert kill.pids, "the app finished before its driver could be killed"
    assert f.delta is not None and f.delta[0] == 2400, f.delta
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions) == (0, 0, 0, 0), f


def test_a_jdbc_sink_appends_each_batch_to_its_table(broker, admin, spark, topic_name,
                                                      app_config, tmp_path):
    """The JDBC writer (at least once), into an embedded Derby database (Derby's driver
    ships with Spark): the table gets the driver's rows, without ``headers``. One mode: the
    writer is the sink query's, the same in both (the topology's side runs both modes in
    the tests above)."""
    src = topic_name("sinks-jdbc-in")
    admin.create_topics({src: 1})
    produce(broker, src, records(40))
    url = f"jdbc:derby:{tmp_path / 'db'};create=true"
    options = {"url": url, "dbtable": "views", "driver": "org.apache.derby.jdbc.EmbeddedDriver"}
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to_spark("jdbc", options=options, name="views")
    streams = KafkaStreams(b.build(), app_config(execution_mode="real_time"), spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()
    table = spark.read.format("jdbc").options(**options).load()
    assert [c.lower() for c in table.columns] == ["key", "value", "topic", "partition", "offset",
                                                  "timestamp"]
    got = sorted((r[0], r[1]) for r in table.collect())
    assert got == sorted((k, v) for k, v, _ in records(40))


def test_a_sink_whose_format_the_session_lacks_fails_the_start_naming_it(
        broker, admin, spark, topic_name, app_config):
    src = topic_name("sinks-iceberg-in")
    admin.create_topics({src: 1})
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to_spark("iceberg", table="cat.db.views",
                                                       name="views")
    streams = KafkaStreams(b.build(), app_config(), spark=spark)
    with pytest.raises(SparkSinkError, match="Spark sink 'views' .* could not start its "
                                             "iceberg writer \\(cat.db.views\\)"):
        streams.start()
    streams.close()


def test_a_streaming_real_time_application_writes_its_sinks_as_it_runs(
        broker, admin, spark, topic_name, app_config, tmp_path):
    """Streaming (no batch run): a slot is kept for the sinks beside the stream threads, so
    the table fills while the threads run."""
    import time

    src = topic_name("sinks-streaming-in")
    admin.create_topics({src: 2})
    produce(broker, src, records(50))
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S).to_spark("delta", path=str(tmp_path / "t"),
                                                       name="views")
    streams = KafkaStreams(b.build(), app_config(execution_mode="real_time",
                                                 autostop_at="none"), spark=spark)
    streams.start()
    try:
        deadline = time.monotonic() + 120
        while streams.progress()["sink_rows"] < 50:
            assert time.monotonic() < deadline, streams.progress()
            assert not streams.await_termination(0.5), "the application ended"
        assert streams.state() in (KafkaStreams.State.REBALANCING, KafkaStreams.State.RUNNING)
    finally:
        streams.close()
    from deltalake import DeltaTable

    table = DeltaTable(str(tmp_path / "t")).to_pyarrow_table(columns=["key", "value"])
    assert sorted(zip(table.column("key").to_pylist(), table.column("value").to_pylist(),
                      strict=True)) == sorted((k, v) for k, v, _ in records(50))
