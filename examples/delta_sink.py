"""Page views in, per-minute counts out: into a Delta table, read back with Spark.

Start a local broker first (after ``make setup``, from the project's root):

    . .venv/bin/activate
    kspark broker start       # Kafka on 127.0.0.1:9092
    python examples/delta_sink.py

It creates a topic of its own, ``views-<run>``, writes a few page views to it, and runs a
topology that counts the views of each page per minute (a windowed count) as an
incremental batch run (KIP-95, ``autostop.at=eol``). The counts go to the Kafka topic
``view-counts-<run>`` and, through ``KStream.to_spark("delta")``, to a Delta table in a
temporary directory (``--table`` to choose), exactly once. When the run ends the table holds
every count; the example reads it back with ``spark.read`` (the snapshot's Parquet files,
as the Delta log lists them: Delta Lake's own Spark reader has no release for Spark 4.3 yet,
docs/spark-interop.md) and the Kafka topic with ``kspark.spark.read_topic``, and prints both.

Elsewhere: ``--bootstrap-servers`` (or the environment variable ``KSPARK_BOOTSTRAP_SERVERS``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kspark import KafkaStreams, Serdes, StreamsBuilder, TimeWindows
from kspark.dsl import TimeWindowedSerde

BOOTSTRAP = "127.0.0.1:9092"
MINUTE = 60_000
VIEWS = [  # (page, user, timestamp ms)
    ("/docs", "ann", 0), ("/home", "bob", 5_000), ("/docs", "cy", 30_000),
    ("/docs", "ann", 70_000), ("/home", "dee", 75_000), ("/docs", "bob", 80_000),
]


def page_counts(views: str, counts: str, table: str):
    """The topology: views per page per minute, to Kafka and to a Delta table."""
    builder = StreamsBuilder()
    per_minute = (builder.stream(views, key_serde=Serdes.String(), value_serde=Serdes.String())
                  .group_by_key()
                  .windowed_by(TimeWindows.of_size_with_no_grace(MINUTE))
                  .count()
                  .to_stream())
    per_minute.to(counts, key_serde=TimeWindowedSerde(Serdes.String(), MINUTE),
                  value_serde=Serdes.Long())
    per_minute.to_spark("delta", path=table, name="page-counts")
    return builder.build()


def main(argv: list[str] | None = None, spark=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers",
                    default=os.environ.get("KSPARK_BOOTSTRAP_SERVERS", BOOTSTRAP))
    ap.add_argument("--table", default=None, help="the Delta table's directory (default: a "
                    "new temporary one)")
    a = ap.parse_args(argv)
    run = uuid.uuid4().hex[:8]
    views, counts = f"views-{run}", f"view-counts-{run}"
    work = tempfile.mkdtemp(prefix="kspark-delta-example-")
    table = a.table or os.path.join(work, "page_counts")
    admin = AdminClient({"bootstrap.servers": a.bootstrap_servers})
    for f in admin.create_topics([NewTopic(views, 1, 1), NewTopic(counts, 1, 1)]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": a.bootstrap_servers})
    failed: list = []
    base = 1_699_999_980_000  # a whole minute (2023-11-14 22:13 UTC): the windows print round
    for page, user, ts in VIEWS:
        producer.produce(views, key=page.encode(), value=user.encode(), timestamp=base + ts,
                         on_delivery=lambda err, msg: err and failed.append(err))
    producer.flush(30)
    if failed:
        raise SystemExit(f"could not write the page views to {views}: {failed[0]}")

    streams = KafkaStreams(page_counts(views, counts, table), {
        "application.id": f"page-counts-{run}", "bootstrap.servers": a.bootstrap_servers,
        "state.dir": os.path.join(work, "state"), "autostop.at": "eol",
        "processing.guarantee": "exactly_once_v2", "statestore.cache.max.bytes": 0,
    }, spark=spark)
    streams.start()
    streams.await_termination()
    streams.close()

    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

    from kspark.spark import read_topic

    session = spark or SparkSession.builder.getOrCreate()
    table_df = session.read.parquet(*DeltaTable(table).file_uris())
    print(f"Delta table {table} (version {DeltaTable(table).version()}):")
    for r in table_df.orderBy("window_start", "key", "value").collect():
        print(f"  {r.key} {r.window_start:%H:%M}-{r.window_end:%H:%M} {r.value}")
    topic_df = read_topic(session, counts, TimeWindowedSerde(Serdes.String(), MINUTE),
                          Serdes.Long(), config={"bootstrap.servers": a.bootstrap_servers})
    print(f"Kafka topic {counts}: {topic_df.count()} counts, "
          f"{'the same' if _rows(topic_df) == _rows(table_df) else 'DIFFERENT'} rows")
    return 0


def _rows(df) -> list:
    return sorted((r.key, str(r.window_start), r.value) for r in df.collect())


if __name__ == "__main__":
    sys.exit(main())
