"""Fetch Apache Kafka's jars from Maven Central into a cache, once.

Two sets: the broker's (``kafka_libs``) and Java Kafka Streams with its test utilities
(``streams_test_libs``), which the conformance suite runs as the reference.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from kspark._local.prereqs import maven_binary
from kspark.errors import PrerequisiteError

__all__ = ["KAFKA_VERSION", "kspark_home", "kafka_libs", "streams_test_libs"]

KAFKA_VERSION = "4.1.1"


def kspark_home() -> Path:
    """kspark's cache directory: ``$KSPARK_HOME``, else ``~/.cache/kspark``."""
    return Path(os.environ.get("KSPARK_HOME") or Path.home() / ".cache" / "kspark")


def kafka_libs(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory holding the broker's jars, fetching them with Maven the first time."""
    return _fetched("kafka", "broker-pom.xml", "kafka_2.13-*.jar", home, quiet)


def streams_test_libs(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory holding kafka-streams and kafka-streams-test-utils, fetched once."""
    return _fetched("kafka-streams", "streams-pom.xml", "kafka-streams-test-utils-*.jar",
                    home, quiet)


def _fetched(name: str, pom_name: str, marker_glob: str, home: Path | None,
             quiet: bool) -> Path:
    libs = (home or kspark_home()) / f"{name}-{KAFKA_VERSION}" / "libs"
    if (libs / ".complete").exists():
        return libs
    mvn = maven_binary()
    if not quiet:
        print(f"kspark: fetching Apache Kafka {KAFKA_VERSION} jars ({name}) with Maven into "
              f"{libs} (once)...", flush=True)
    libs.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs-", dir=libs.parent))
    pom = resources.files("kspark._local").joinpath(pom_name)
    with resources.as_file(pom) as pom_path:
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom_path), f"-Dkafka.version={KAFKA_VERSION}",
             "dependency:copy-dependencies", f"-DoutputDirectory={tmp}", "-DincludeScope=runtime"],
            capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not any(tmp.glob(marker_glob)):
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise PrerequisiteError(
            f"Maven could not fetch Apache Kafka {KAFKA_VERSION}'s jars ({name}, exit "
            f"{proc.returncode}); check that Maven Central is reachable. Maven said:\n{tail}"
        )
    (tmp / ".complete").touch()
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)
    return libs
