"""The Spark host: the only package that imports pyspark."""
