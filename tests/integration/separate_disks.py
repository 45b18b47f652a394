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


_SITECUSTOMIZE = '''"""Executors in two zones (a kspark test harness): a local-cluster
executor (working directory <work>/app-*/<executor id>) takes client tag zone b if its id
is 2 (mod 3), else a."""
import os
import pathlib

_here = pathlib.Path.cwd()
if _here.name.isdigit() and _here.parent.name.startswith("app-"):
    os.environ.setdefault("KSPARK_CLIENT_TAG_ZONE", "b" if int(_here.name) % 3 == 2 else "a")
'''


def zoned_env(root: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` whose local-cluster executors (each in a working directory of its own, see
    :func:`separate_disks_env`) are in two zones, as executors on machines of two racks:
    their Python workers read ``KSPARK_CLIENT_TAG_ZONE`` (b for executor 2, else a), set by a
    ``sitecustomize`` on the path in ``SOAK_SITE`` (the harness adds it to PYTHONPATH)."""
    site = root / "zones"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return {**env, "SOAK_SITE": str(site)}
