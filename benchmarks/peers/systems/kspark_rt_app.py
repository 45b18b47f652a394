"""kspark in real-time mode (``execution.mode=real_time``): the same topology as
``kspark_app.py``, run by long-running stream threads on Spark local[2]; it closes once the
consumer group has committed the whole input.

Commits every second (``commit.interval.ms=1000``): W2's cache is flushed at each commit,
as in Kafka Streams, so W2 writes about one output and one changelog record per input record
(the micro-batch run flushes once per 500,000 records: about one per five). Settings in
``PEERS_KSPARK_CONFIG`` (JSON) are added to both kspark runs' config, e.g.
``{"statestore.cache.max.bytes": 0}`` to make them do the same work per record; settings in
``PEERS_KSPARK_RT_CONFIG`` to this one's only, e.g. ``{"commit.interval.ms": 5000}`` to
commit about as often as the micro-batch run.
"""

import json
import os
import sys
import time
from pathlib import Path

from kspark import KafkaStreams, spark_session
from kspark._kafka.admin import Admin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kspark_app import topology  # noqa: E402
from workload import cli  # noqa: E402


def main() -> None:
    a = cli()
    spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                           "spark.sql.shuffle.partitions": "2"})
    app_id = f"peers-{a.dst}-{time.time_ns()}"
    streams = KafkaStreams(topology(a), {
        "application.id": app_id, "bootstrap.servers": a.bootstrap,
        "state.dir": str(Path(a.workdir) / "state"), "execution.mode": "real_time",
        "commit.interval.ms": 1000, "producer.linger.ms": 20,
        "producer.batch.num.messages": 10000,
        **json.loads(os.environ.get("PEERS_KSPARK_CONFIG") or "{}"),
        **json.loads(os.environ.get("PEERS_KSPARK_RT_CONFIG") or "{}")}, spark=spark)
    admin = Admin(a.bootstrap, 20000)
    inputs = [(a.src, p) for p in range(a.partitions)]
    ends = admin.end_offsets(inputs)
    streams.start()
    while not streams.await_termination(0.5):
        committed = admin.group_offsets(app_id)
        if all(committed.get(tp, 0) >= ends[tp] for tp in inputs):
            break
    streams.close()
    spark.stop()


if __name__ == "__main__":
    main()
