"""Spark's Python worker daemon, started warm: kspark's default ``spark.python.daemon.module``.

Spark starts one daemon per executor and forks a worker from it for each Python task
(``spark.python.worker.reuse`` keeps workers for later tasks). Two things make the stock
daemon (``pyspark.daemon``) slow to serve kspark's first micro-batch:

- Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the workers' ``PYTHONPATH``,
  and every worker would compile pyspark's modules again from it. ``_kspark_zipless``
  (installed with kspark, run at every Python start by ``kspark-zipless.pth``) drops the zip
  when it is a copy of the installed pyspark; this daemon calls it again, for an executor
  where the ``.pth`` is not installed.
- Each forked worker imports ``pyspark.worker``, pyarrow, confluent-kafka and kspark's
  engine and data source on its own. This daemon imports them once, before forking:
  workers start with them loaded and share their memory pages with the daemon
  (copy-on-write).

Nothing else changes: :func:`pyspark.daemon.manager` serves Spark as usual. Installing
kspark on the executors (which kspark needs anyway) is all it takes; setting
``spark.python.daemon.module=pyspark.daemon`` restores Spark's own daemon.

"""

from __future__ import annotations

__all__: list[str] = []

_PRELOAD = ("pyspark.worker", "pyarrow", "pyarrow.compute", "confluent_kafka",
            "kspark._spark.stage", "kspark._spark.source")


def main() -> None:
    import _kspark_zipless

    _kspark_zipless.main()
    import importlib

    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker that needs it reports the error itself
            pass
    import gc

    gc.collect()
    gc.freeze()  # keep the preloaded objects out of the workers' collections (fewer page copies)
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
