"""kspark-zipless.pth: a Python process started with Spark's copy of the installed pyspark
(``<pyspark>/python/lib/pyspark.zip``) first on ``PYTHONPATH`` imports the installed
package instead, whose compiled modules are cached (see src/_kspark_zipless.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pyspark

ZIP = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"
SHOW = ("import sys, pyspark; print(pyspark.__file__); "
        "print([p for p in sys.path if 'pyspark' in p])")


def _run(env: dict) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SHOW], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()


def test_the_zip_of_the_installed_pyspark_is_dropped():
    assert ZIP.exists(), "pip-installed pyspark ships python/lib/pyspark.zip"
    where, left = _run({"PYTHONPATH": str(ZIP)})
    assert where == pyspark.__file__
    assert str(ZIP) not in left


def test_keep_switch_and_other_zips_are_left_alone(tmp_path):
    where, _ = _run({"PYTHONPATH": str(ZIP), "KSPARK_KEEP_PYSPARK_ZIP": "1"})
    assert where.startswith(str(ZIP))  # imported from the zip, as Spark asked
    other = tmp_path / "spark" / "python" / "lib" / "pyspark.zip"
    other.parent.mkdir(parents=True)
    other.write_bytes(ZIP.read_bytes())
    where, left = _run({"PYTHONPATH": str(other)})
    assert where.startswith(str(other))  # another Spark install's pyspark stays first
    assert str(other) in left
