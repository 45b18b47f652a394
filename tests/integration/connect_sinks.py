"""The Spark sinks and ``read_topic`` on Spark Connect, as a script (a Connect client is a
process of its own: PySpark allows one session kind per process).

``python -m tests.integration.connect_sinks BOOTSTRAP URL SRC WORK_DIR``: runs
``test_spark_sinks.topology`` as a batch run in each execution mode on the Connect server
(its Delta, Parquet and foreach_batch sinks), compares each sink's rows and the output
topic's (read back with ``read_topic`` on Connect) with the TopologyTestDriver's, and prints
``<mode>: sinks agree`` or what differs, then ``client jvm: none`` when the client started
no JVM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kspark import KafkaStreams
from kspark.dsl import TimeWindowedSerde
from kspark.spark import read_topic
from kspark.testing import TopologyTestDriver
from tests.integration.app_base import base_config, connect_session, end, print_client_jvm
from tests.integration.test_spark_sinks import L, S, WINDOW, records, rows_of, topology


def expected(src: str, work: Path, config: dict):
    with TopologyTestDriver(topology(src, "unused", work / "driver"),
                            {**config, "state.dir": str(work / "driver-state")}) as d:
        topic = d.create_input_topic(src, S, S)
        for k, v, ts in records(600):
            topic.pipe_input(k, v, ts)
        return rows_of(d.get_spark_sink_rows("counts-delta"))


def run(spark, broker: str, src: str, work: Path, mode: str) -> list[str]:
    from deltalake import DeltaTable

    out, base = f"{src}-{mode}-out", work / mode
    config = {**base_config(broker, f"connect-sinks-{src}-{mode}", str(base / "state"), mode,
                            "exactly_once_v2"),
              "autostop.at": "eol", "statestore.cache.max.bytes": 0}
    from kspark._kafka.admin import Admin

    Admin(broker).create_topics({out: 2})
    want = expected(src, base, config)
    streams = KafkaStreams(topology(src, out, base), config, spark=spark)
    streams.start()
    assert streams.await_termination(300)
    progress = streams.progress()
    streams.close()
    got = {
        "delta": rows_of(DeltaTable(str(base / "delta")).to_pyarrow_table().to_pylist()),
        "parquet": rows_of(spark.read.parquet(str(base / "parquet")).toArrow().to_pylist()),
        "topic": rows_of(read_topic(spark, out, TimeWindowedSerde(S, WINDOW), L,
                                    config={"bootstrap.servers": broker}).toArrow().to_pylist()),
        "foreach_batch": sum(json.loads(line)["rows"] for line in
                             (base / "batches.jsonl").read_text().splitlines()),
    }
    bad = [k for k, v in got.items() if v != (sum(want.values()) if k == "foreach_batch"
                                               else want)]
    return [f"{mode}: sinks agree ({sum(want.values())} rows, sink_rows "
            f"{progress['sink_rows']})" if not bad else f"{mode}: sinks differ: {bad}"]


def main(argv: list[str]) -> int:
    broker, url, src, work = argv[0], argv[1], argv[2], Path(argv[3])
    spark = connect_session(url)
    for mode in ("micro_batch", "real_time"):
        for line in run(spark, broker, src, work, mode):
            print(line, flush=True)
    print_client_jvm()
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
