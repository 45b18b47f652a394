"""Spark in, Spark out, without Spark: the columns a kspark topic reads as, the Spark sinks
as plain data, and the Delta writer (``docs/spark-interop.md``). No pyspark here: the
``_spark`` glue builds DataFrames and queries over these."""
