"""Fetch the Apache Kafka broker's jars from Maven Central into a cache, once."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from kspark._kafka.prereqs import maven_binary
from kspark.errors import PrerequisiteError

__all__ = ["KAFKA_VERSION", "kspark_home", "kafka_libs"]

KAFKA_VERSION = "4.1.1"


def kspark_home() -> Path:
    """kspark's cache directory: ``$KSPARK_HOME``, else ``~/.cache/kspark``."""
    return Path(os.environ.get("KSPARK_HOME") or Path.home() / ".cache" / "kspark")


def kafka_libs(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory holding Kafka's jars, fetching them with Maven the first time."""
    libs = (home or kspark_home()) / f"kafka-{KAFKA_VERSION}" / "libs"
    if (libs / ".complete").exists():
        return libs
    mvn = maven_binary()
    if not quiet:
        print(f"kspark: fetching Apache Kafka {KAFKA_VERSION} jars with Maven into {libs} (once)...",
              flush=True)
    libs.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs-", dir=libs.parent))
    pom = resources.files("kspark._kafka").joinpath("broker-pom.xml")
    with resources.as_file(pom) as pom_path:
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom_path), f"-Dkafka.version={KAFKA_VERSION}",
             "dependency:copy-dependencies", f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not any(tmp.glob("kafka_2.13-*.jar")):
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise PrerequisiteError(
            f"Maven could not fetch Apache Kafka {KAFKA_VERSION}'s jars (exit {proc.returncode}); "
            f"check that Maven Central is reachable. Maven said:\n{tail}"
        )
    (tmp / ".complete").touch()
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)
    return libs
