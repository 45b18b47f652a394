"""Executors with disks of their own on ``local-cluster``: a Spark home whose ``work``
directory is the test's, so that each executor runs in ``<work>/<app>/<executor>`` and a
relative ``state.dir`` lands in a directory of its own, as on separate machines."""

from __future__ import annotations

import os
from pathlib import Path

import pyspark

STATE_DIR = "kspark-state"  # relative: one per executor (and one in the driver's cwd)


def separate_disks_env(root: Path) -> dict[str, str]:
    """The environment of a driver process whose local-cluster executors each get their own
    working directory under ``root / "work"``."""
    home = root / "spark-home"
    home.mkdir(parents=True, exist_ok=True)
    source = Path(pyspark.__file__).parent
    for name in ("bin", "jars", "python", "sbin"):
        if (source / name).exists() and not (home / name).exists():
            (home / name).symlink_to(source / name)
    return {**os.environ, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": "2.13"}


def executor_state_dirs(root: Path) -> list[Path]:
    """The state directories the executors made (``<work>/<app>/<executor>/kspark-state``)."""
    return sorted((root / "spark-home" / "work").glob(f"*/*/{STATE_DIR}"))
