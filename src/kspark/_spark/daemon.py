"""Spark's Python worker daemon, started warm: kspark's default ``spark.python.daemon.module``.

Spark starts one daemon per executor and forks a worker from it for each Python task
(``spark.python.worker.reuse`` keeps workers for later tasks). Two things make the stock
daemon (``pyspark.daemon``) slow to serve kspark's first micro-batch:

- Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the workers' ``PYTHONPATH``.
  Python cannot cache compiled modules for a zip, so every worker compiles pyspark's
  modules again: about 1.2 s of CPU per process on the reference machine. When pyspark is
  pip-installed, that zip is a copy of the installed package, whose compiled modules are
  cached: this daemon drops the zip (and py4j's) from ``sys.path`` in that case only.
- Each forked worker imports ``pyspark.worker``, pyarrow, confluent-kafka and kspark's
  engine on its own. This daemon imports them once, before forking: workers start with
  them loaded and share their memory pages with the daemon (copy-on-write).

Nothing else changes: :func:`pyspark.daemon.manager` serves Spark as usual. Installing
kspark on the executors (which kspark needs anyway) is all it takes; setting
``spark.python.daemon.module=pyspark.daemon`` restores Spark's own daemon.

>>> zips = ["/x/spark/python/lib/pyspark.zip", "/x/site/pyspark/python/lib/pyspark.zip"]
>>> _installed_copies(zips, lambda name: "/x/site/pyspark" if name == "pyspark" else None)
['/x/site/pyspark/python/lib/pyspark.zip']
>>> _installed_copies(zips, lambda name: None)  # no installed pyspark: keep Spark's zip
[]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__: list[str] = []

_PRELOAD = ("pyspark.worker", "pyarrow", "pyarrow.compute", "confluent_kafka",
            "kspark._spark.stage")


def _installed_copies(path: list[str], package_dir: Callable[[str], str | None]) -> list[str]:
    """The zips on ``path`` that copy an installed package of the same pyspark install:
    ``<root>/python/lib/pyspark.zip`` (and py4j's) where ``<root>`` is the directory that
    ``import pyspark`` finds without the zips (``package_dir(name)``)."""
    zips = [p for p in path
            if p.endswith(".zip") and os.path.basename(p).startswith(("pyspark", "py4j"))]
    root = package_dir("pyspark")
    if root is None:
        return []
    lib = os.path.join(root, "python", "lib")
    same = [z for z in zips if os.path.dirname(os.path.realpath(z)) == os.path.realpath(lib)]
    if any(os.path.basename(z).startswith("py4j") for z in same) and package_dir("py4j") is None:
        same = [z for z in same if not os.path.basename(z).startswith("py4j")]
    return same


def _package_dir_without(zips: list[str]) -> Callable[[str], str | None]:
    import importlib.machinery

    rest = [p for p in sys.path if p not in zips]

    def find(name: str) -> str | None:
        spec = importlib.machinery.PathFinder.find_spec(name, rest)
        if spec is None or not spec.submodule_search_locations:
            return None
        return list(spec.submodule_search_locations)[0]

    return find


def main() -> None:
    zips = [p for p in sys.path if p.endswith(".zip")]
    for z in _installed_copies(sys.path, _package_dir_without(zips)):
        sys.path.remove(z)
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
