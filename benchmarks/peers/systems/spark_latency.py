"""Native PySpark as a passthrough for ``benchmarks/latency.py``: Spark's own Kafka source and
sink (spark-sql-kafka-0-10, jars in ``PEERS_SPARK_JARS``), local[2], no trigger set (Spark's
default: each micro-batch starts as soon as the last one ends), until the runner stops it.

    python spark_latency.py --bootstrap HOST:PORT --src IN --dst OUT --workdir DIR
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_native import session  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--bootstrap", "--src", "--dst", "--workdir"):
        ap.add_argument(name, required=True)
    a = ap.parse_args()
    spark = session()
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
          .option("subscribe", a.src).option("startingOffsets", "earliest").load())
    q = (df.select("key", "value").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", a.bootstrap).option("topic", a.dst)
         .option("checkpointLocation", str(Path(a.workdir) / "checkpoint")).start())
    q.awaitTermination()


if __name__ == "__main__":
    main()
