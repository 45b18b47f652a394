"""Native PySpark: Spark's own Kafka source and sink (spark-sql-kafka-0-10), local[2].

W1: from_json, filter, to_json. W2: groupBy(key).count() in update output mode: Spark
emits the changed counts once per micro-batch, not once per record. W3:
``withWatermark(timestamp, "1 minute").groupBy(window(timestamp, "2 minutes"), key).count()``
in update output mode, on the Kafka record timestamp (equal to the value's ``ts``), the key
written as ``<user>@<window start ms>``. W4: a stream-static join: the users topic read by
Spark's Kafka batch source (``spark.read``), parsed, and joined (broadcast) with the parsed
stream on the user, the record with ``tier`` and ``country`` added, as JSON. All read the
input with ``trigger(availableNow=True)`` and ``maxOffsetsPerTrigger``. The state store is
Spark's default (HDFS-backed, in memory).

``--resolve [VERSION]`` only builds the session, so that Ivy fetches the Kafka connector once
(at PySpark's own version unless another is given), outside any timed run, and prints the
jars' paths; the timed runs get them in ``PEERS_SPARK_JARS`` (``spark.jars``).
"""

import os
import sys
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import GRACE_MS, THRESHOLD, WINDOW_MS, cli  # noqa: E402

PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:{}"
SCHEMA = "id LONG, user STRING, amount DOUBLE, kind STRING, ts LONG, region STRING"
USER_SCHEMA = "user STRING, tier STRING, country STRING"


def long_value(col: str):
    """``col`` as an 8-byte big-endian long, like Kafka's LongSerializer."""
    return F.unhex(F.lpad(F.hex(col), 16, "0")).alias("value")


def session(version: str = pyspark.__version__) -> SparkSession:
    jars = os.environ.get("PEERS_SPARK_JARS")
    builder = (SparkSession.builder.config("spark.jars", jars) if jars
               else SparkSession.builder.config("spark.jars.packages", PACKAGE.format(version)))
    spark = (builder.master("local[2]").appName("peers-spark").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    if sys.argv[1:2] == ["--resolve"]:  # [--resolve [connector version]]
        spark = session(*sys.argv[2:3])
        print("JARS=" + spark.sparkContext.getConf().get("spark.jars"))
        spark.stop()
        return
    a = cli()
    spark = session()
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
          .option("subscribe", a.src).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", a.max_offsets).load())
    if a.workload == "w1":
        rec = F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")
        out = (df.select("key", rec).where(F.col("r.amount") > THRESHOLD)
               .select("key", F.to_json(F.struct(
                   "r.id", "r.user", "r.amount", F.upper("r.kind").alias("kind"), "r.ts",
                   "r.region", F.round(F.col("r.amount") * 100).cast("long").alias("amount_cents"),
               )).alias("value")))
        mode = "append"
    elif a.workload == "w2":
        out = df.groupBy("key").count().select("key", long_value("count"))
        mode = "update"
    elif a.workload == "w3":
        out = (df.withWatermark("timestamp", f"{GRACE_MS // 1000} seconds")
               .groupBy(F.window("timestamp", f"{WINDOW_MS // 1000} seconds"), "key").count()
               .select(F.concat(F.col("key").cast("string"), F.lit("@"),
                                F.unix_millis("window.start").cast("string")).alias("key"),
                       long_value("count")))
        mode = "update"
    else:
        users = (spark.read.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
                 .option("subscribe", a.table).option("startingOffsets", "earliest")
                 .option("endingOffsets", "latest").load()
                 .select(F.from_json(F.col("value").cast("string"), USER_SCHEMA).alias("u"))
                 .select("u.user", "u.tier", "u.country"))
        rec = F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")
        out = (df.select("key", rec).select("key", "r.*").join(F.broadcast(users), "user")
               .select("key", F.to_json(F.struct("id", "user", "amount", "kind", "ts", "region",
                                                  "tier", "country")).alias("value")))
        mode = "append"
    q = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", a.bootstrap)
         .option("topic", a.dst).option("checkpointLocation", str(Path(a.workdir) / "checkpoint"))
         .outputMode(mode).trigger(availableNow=True).start())
    q.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
