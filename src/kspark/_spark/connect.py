"""Spark Connect: recognise a Connect session, and say once what it cannot do.

A Connect session (``SparkSession.builder.remote(url)``, ``spark.remote`` in the config or
``SPARK_REMOTE`` in the environment) has no ``sparkContext``, no py4j, no RDDs and no
accumulators. kspark's drivers ask :func:`is_connect` where a classic-only path has a
Connect fallback, and :func:`degraded` logs once per process what the fallback costs.

Example:
    >>> remote_url({"spark.remote": "sc://spark:15002"}, {})
    'sc://spark:15002'
    >>> remote_url({}, {"SPARK_REMOTE": "sc://localhost"})
    'sc://localhost'
    >>> remote_url({}, {}) is None
    True
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

__all__ = ["is_connect", "remote_url", "degraded", "default_parallelism"]

log = logging.getLogger("kspark")
_SAID: set[str] = set()


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of a Connect server)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_url(spark_conf: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The Connect server's URL: ``spark.remote`` in the config, else ``SPARK_REMOTE``."""
    url = spark_conf.get("spark.remote") or environ.get("SPARK_REMOTE")
    return str(url) if url else None


def degraded(what: str, why: str) -> None:
    """Log once per process that ``what`` is not available on Spark Connect, and ``why``."""
    if what not in _SAID:
        _SAID.add(what)
        log.warning("Spark Connect: %s (%s)", what, why)


def default_parallelism(spark: Any) -> int:
    """The task slots Spark gives a job by default: ``sparkContext.defaultParallelism`` on a
    classic session; on Connect, the partitions of a range planned without a count (Spark
    gives it the same default), counted by a one-row-per-partition job."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    from pyspark.sql.functions import spark_partition_id

    rows = spark.range(0, 1 << 16).select(spark_partition_id().alias("p")).distinct().count()
    return max(1, int(rows))
