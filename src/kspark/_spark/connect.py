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

__all__ = ["is_connect", "remote_url", "degraded", "default_parallelism", "bound_retries",
           "is_connect_error", "abandon", "RETRIES"]

# The Connect client's retries of a call that cannot reach the server: 5 with PySpark's
# back-off (x4 from 50 ms) wait about 17 s in all. PySpark's default (15) waits 10 minutes or
# more, during which an application whose server died would look alive; a server that
# restarts has lost the query and the session anyway, so waiting longer gains nothing. (Only
# a server that cannot be reached counts: a call that takes long is not retried.)
RETRIES = 5

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


def bound_retries(spark: Any) -> None:
    """Bound the Connect client's retries of ``spark`` (:data:`RETRIES`), said once."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    policies = spark.client.get_retry_policies()
    if any(getattr(p, "max_retries", 0) == RETRIES for p in policies):
        return
    spark.client.set_retry_policies([DefaultPolicy(max_retries=RETRIES)])
    log.info("Spark Connect: calls that cannot reach the server are retried %d times (about "
             "17 s) before the application fails: a server that is lost loses the "
             "application's query", RETRIES)


def is_connect_error(error: BaseException) -> bool:
    """Whether ``error`` is a Spark Connect client's (the server failed or is unreachable)."""
    return type(error).__module__.startswith(("pyspark.errors.exceptions.connect", "grpc"))


def abandon(spark: Any) -> None:
    """Close the client of a Connect session whose server stopped answering: the session is
    gone with the server, and its calls still retrying (progress, releases of finished
    operations) end at once instead of each waiting out its retries."""
    try:
        spark.client.close()
    except Exception as e:  # noqa: BLE001 - closing a dead channel may complain
        log.debug("closing the Spark Connect client failed: %s", e)


def default_parallelism(spark: Any) -> int:
    """The task slots Spark gives a job by default: ``sparkContext.defaultParallelism`` on a
    classic session; on Connect, the partitions of a range planned without a count (Spark
    gives it the same default), counted by a one-row-per-partition job."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    from pyspark.sql.functions import spark_partition_id

    rows = spark.range(0, 1 << 16).select(spark_partition_id().alias("p")).distinct().count()
    return max(1, int(rows))
