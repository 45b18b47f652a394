"""Spark's Python processes import the installed pyspark, not Spark's zip copy of it.

Spark starts every Python process it needs (the task workers' daemon, and one process per
planning step of a Python data source: ``lookup_data_sources``, ``create_data_source``,
``python_streaming_source_runner``, ``plan_data_source_read``) with
``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on ``PYTHONPATH``. Python
cannot cache compiled modules for a zip, so each process compiles pyspark again: 0.7–1.2 s
of CPU each on the reference machine, on the path to a query's first output.

When pyspark is pip-installed, ``SPARK_HOME`` is the installed package and the zip is a copy
of it whose compiled modules are cached. kspark installs ``kspark-zipless.pth`` next to this
module; Python runs it at every start, and it calls :func:`main` only when ``PYTHONPATH``
names a ``pyspark.zip``. :func:`main` then drops from ``sys.path`` the zips that are copies
of the installed pyspark of the same install (``<installed pyspark>/python/lib/``), and
nothing else: a zip of another Spark install (a ``SPARK_HOME`` of its own) stays first.

Kept out of the ``kspark`` package on purpose: importing ``kspark`` costs 0.2 s, this module
a millisecond. Setting ``KSPARK_KEEP_PYSPARK_ZIP=1`` turns it off.

>>> zips = ["/x/spark/python/lib/pyspark.zip", "/x/site/pyspark/python/lib/pyspark.zip"]
>>> installed_copies(zips, lambda name: "/x/site/pyspark" if name == "pyspark" else None)
['/x/site/pyspark/python/lib/pyspark.zip']
>>> installed_copies(zips, lambda name: None)  # no installed pyspark: keep Spark's zip
[]
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__ = ["installed_copies", "main"]


def installed_copies(path: list[str], package_dir: Callable[[str], str | None]) -> list[str]:
    """The zips on ``path`` that copy an installed package of the same pyspark install:
    ``<root>/python/lib/pyspark.zip`` (and py4j's) where ``<root>`` is the directory that
    ``import pyspark`` finds without the zips (``package_dir(name)``); py4j's zip stays when
    py4j itself is not installed."""
    zips = [p for p in path
            if p.endswith(".zip") and os.path.basename(p).startswith(("pyspark", "py4j"))]
    if not zips:
        return []
    root = package_dir("pyspark")
    if root is None:
        return []
    lib = os.path.realpath(os.path.join(root, "python", "lib"))
    same = [z for z in zips if os.path.dirname(os.path.realpath(z)) == lib]
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
    """Drop from ``sys.path`` the zips that copy the installed pyspark (see the module)."""
    if os.environ.get("KSPARK_KEEP_PYSPARK_ZIP") == "1":
        return
    zips = [p for p in sys.path if p.endswith(".zip")]
    for z in installed_copies(sys.path, _package_dir_without(zips)):
        sys.path.remove(z)
