"""kspark: a StreamsBuilder topology run by KafkaStreams on Spark local[2], ``autostop.at=eol``.

W1: map_values(w1) then filter out the dropped records (one JSON parse per record, as the
other Python systems do). W2: ``group_by_key().count()`` (kspark's default store, logged)
``.to_stream().to(dst)`` with a Long value serde. W3: ``group_by_key().windowed_by(
TimeWindows.of_size_and_grace(2 min, 1 min)).count()``, its windowed keys mapped to
``<user>@<window start>``. W4: ``KStream.join(KTable)`` with the table from the users topic
(``builder.table``, kspark's default store); the joiner parses both JSON values. Settings
in ``PEERS_KSPARK_CONFIG`` (JSON) are added to the config (of ``kspark_rt_app.py`` too), then those in ``PEERS_KSPARK_MB_CONFIG``
(this one's only), e.g. ``{"max.offsets.per.trigger": 100000}`` to commit about as often as
the real-time run.
"""

import json
import os
import sys
import time
from pathlib import Path

from kspark import KafkaStreams, Serdes, StreamsBuilder, TimeWindows, spark_session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import GRACE_MS, WINDOW_MS, cli, w1, w4, window_key  # noqa: E402


def topology(a):
    """W1, W2, W3 or W4 (``a.workload``) from ``a.src`` (and W4's ``a.table``) to ``a.dst``."""
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    stream = b.stream(a.src, key_serde=raw, value_serde=raw)
    if a.workload == "w1":
        (stream.map_values(w1).filter(lambda k, v: v is not None)
         .to(a.dst, key_serde=raw, value_serde=raw))
    elif a.workload == "w2":
        (stream.group_by_key().count()
         .to_stream().to(a.dst, key_serde=raw, value_serde=Serdes.Long()))
    elif a.workload == "w3":
        (stream.group_by_key()
         .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS)).count()
         .to_stream().map(lambda wk, n: (window_key(wk.key, wk.window.start), n))
         .to(a.dst, key_serde=raw, value_serde=Serdes.Long()))
    else:
        users = b.table(a.table, key_serde=raw, value_serde=raw)
        stream.join(users, w4).to(a.dst, key_serde=raw, value_serde=raw)
    return b.build()


def main() -> None:
    a = cli()
    spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                           "spark.sql.shuffle.partitions": "2"})
    streams = KafkaStreams(topology(a), {
        "application.id": f"peers-{a.dst}-{time.time_ns()}", "bootstrap.servers": a.bootstrap,
        "state.dir": str(Path(a.workdir) / "state"), "autostop.at": "eol",
        "execution.mode": "micro_batch", "max.offsets.per.trigger": a.max_offsets, "producer.linger.ms": 20,
        "producer.batch.num.messages": 10000,
        **json.loads(os.environ.get("PEERS_KSPARK_CONFIG") or "{}"),
        **json.loads(os.environ.get("PEERS_KSPARK_MB_CONFIG") or "{}")}, spark=spark)
    streams.start()
    streams.await_termination()
    streams.close()
    spark.stop()


if __name__ == "__main__":
    main()
