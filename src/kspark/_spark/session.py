"""Build the SparkSession kspark uses."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["build_session", "ensure_registered"]

_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "kspark",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.python.worker.reuse": "true",
    # workers forked warm, importing the installed pyspark (see kspark/_spark/daemon.py)
    "spark.python.daemon.module": "kspark._spark.daemon",
}


def build_session(spark_conf: Mapping[str, Any] | None = None) -> SparkSession:
    """Get or create the SparkSession, with kspark's defaults under the given ``spark.*`` keys.

    What ``spark-submit`` (or ``spark-defaults.conf``) already set — ``--master``,
    ``--conf`` — is kept: kspark's defaults fill only what nobody set, and the keys given
    here override both. ``PYSPARK_PYTHON`` is set to the running interpreter unless
    ``spark.pyspark.python`` or ``PYSPARK_PYTHON`` is already given, so Spark's Python
    workers see the same packages.
    """
    from pyspark import SparkConf, SparkContext

    launched: Any = {}
    if SparkContext._jvm is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        # under spark-submit the JVM runs already: its spark.* properties are what
        # spark-submit was given (else the JVM is started below, with our settings)
        SparkContext._ensure_initialized()  # noqa: SLF001 - PySpark's way to reach a running JVM
        launched = dict(SparkConf().getAll())
    conf = {k: v for k, v in _DEFAULTS.items() if k not in launched}
    conf.update({k: str(v) for k, v in (spark_conf or {}).items()})
    python = (conf.get("spark.pyspark.python") or launched.get("spark.pyspark.python")
              or os.environ.get("PYSPARK_PYTHON") or sys.executable)
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    log4j = resources.files("kspark._spark").joinpath("log4j2.properties")
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        conf[key] = f"{java_opts} {conf[key]}" if key in conf else java_opts
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    ensure_registered(spark)
    return spark


def ensure_registered(spark: SparkSession) -> None:
    """Register kspark's Kafka data source with ``spark`` (idempotent)."""
    from kspark._spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
