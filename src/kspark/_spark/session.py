"""Build the SparkSession kspark uses."""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Mapping
from importlib import resources
from typing import Any

from pyspark.sql import SparkSession

from kspark._spark.connect import remote_url
from kspark.errors import ConfigError

__all__ = ["build_session", "ensure_registered", "prepare"]

log = logging.getLogger("kspark")

_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "kspark",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.python.worker.reuse": "true",
    # workers forked warm, importing the installed pyspark (see kspark/_spark/daemon.py)
    "spark.python.daemon.module": "kspark._spark.daemon",
}


def build_session(spark_conf: Mapping[str, Any] | None = None,
                  prepare_source: bool = True) -> SparkSession:
    """Get or create the SparkSession, with kspark's defaults under the given ``spark.*`` keys
    (``prepare_source``: start :func:`prepare` in the background; micro-batch mode's
    planning waits for it, real-time mode reads no data source).

    What ``spark-submit`` (or ``spark-defaults.conf``) already set — ``--master``,
    ``--conf`` — is kept: kspark's defaults fill only what nobody set, and the keys given
    here override both. ``PYSPARK_PYTHON`` is set to the running interpreter unless
    ``spark.pyspark.python`` or ``PYSPARK_PYTHON`` is already given, so Spark's Python
    workers see the same packages.

    With ``spark.remote`` (or ``SPARK_REMOTE`` in the environment) the session is a Spark
    Connect client of that server: no JVM starts here (see :func:`_connect_session`).
    """
    url = remote_url(spark_conf or {}, os.environ)
    if url is not None:
        return _connect_session(url, spark_conf or {}, prepare_source)
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
    if prepare_source:
        prepare(spark)
    return spark


def _connect_session(url: str, spark_conf: Mapping[str, Any],
                     prepare_source: bool = True) -> SparkSession:
    """A Spark Connect session to ``url``, with the given ``spark.*`` keys set on it. What
    only the server's start sets (``spark.master``, executor settings, ...) cannot be set
    from a client: such a key is refused, naming it, rather than ignored."""
    # (PySpark refuses a Connect session in a process that runs a classic one: its
    # functions pick their kind by process, not by session)
    spark = SparkSession.builder.remote(url).getOrCreate()
    for key, value in spark_conf.items():
        if key == "spark.remote" or spark.conf.get(key, None) == str(value):
            continue  # (what the server already has needs no setting, static or not)
        try:
            spark.conf.set(key, str(value))
        except Exception as e:  # noqa: BLE001 - Connect raises its own AnalysisException
            raise ConfigError(
                f"{key} cannot be set from a Spark Connect client ({url}): "
                f"{str(e).splitlines()[0]}; set it where the Connect server starts "
                "(start-connect-server.sh --conf), or remove it") from None
    if prepare_source:
        prepare(spark)
    return spark


class _Preparation(threading.Thread):
    """Registers kspark's data source with a session, then loads it once (see prepare)."""

    def __init__(self, spark: SparkSession):
        super().__init__(name="kspark-prepare-session", daemon=True)
        self.spark = spark
        self.registered = False

    def run(self) -> None:
        from kspark._spark.source import KafkaDataSource
        from kspark._spark.wire import SOURCE_SCHEMA

        try:
            self.spark.dataSource.register(KafkaDataSource)
            self.registered = True
            self.spark.readStream.format(KafkaDataSource.name()).schema(SOURCE_SCHEMA).load()
        except Exception as e:  # noqa: BLE001 - ensure_registered registers again and raises
            log.debug("preparing the session in the background failed: %s", e)


_PREPARED: weakref.WeakKeyDictionary[SparkSession, _Preparation] = weakref.WeakKeyDictionary()


def prepare(spark: SparkSession) -> threading.Thread:
    """Register kspark's Kafka data source with ``spark`` and start the Python processes in
    which Spark plans data sources, in a background thread (once per session).

    Spark starts one such process to look up Python data sources (at the first
    registration) and one to create a source (at the first ``load()``): about 0.5 s and
    0.9 s on the reference machine, on the path to a query's first output. ``spark_session()``
    and ``start()`` call this, so they overlap with the user's code and with ``start()``'s
    Kafka checks; planning calls :func:`ensure_registered`, which waits for it. The
    ``load()`` reads nothing: no query starts.
    """
    thread = _PREPARED.get(spark)
    if thread is None:
        thread = _PREPARED[spark] = _Preparation(spark)
        thread.start()
    return thread


def ensure_registered(spark: SparkSession) -> None:
    """Wait for :func:`prepare`: kspark's Kafka data source is registered with ``spark``
    (registered here, raising Spark's error, if the background registration failed)."""
    thread = prepare(spark)
    thread.join()
    if not getattr(thread, "registered", False):
        from kspark._spark.source import KafkaDataSource

        spark.dataSource.register(KafkaDataSource)
