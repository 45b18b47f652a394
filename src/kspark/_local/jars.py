"""Fetch Apache Kafka's jars from Maven Central into a cache, once, without Maven.

Two sets: the broker's (``kafka_libs``) and Java Kafka Streams with its test utilities
(``streams_test_libs``), which the conformance suite runs as the reference. Each is the
pinned list of jars below, downloaded by :mod:`kspark._local.download` (each checked against
the SHA-1 the repository publishes) into a temporary directory that is renamed into place
when all are there: a directory without its ``.complete`` marker never counts.

The lists are what Maven resolves for ``broker-pom.xml`` and ``streams-pom.xml`` (shipped
beside this module; their direct dependencies are checked against the lists by
``tests/unit/test_jar_download.py``). After changing a POM or ``KAFKA_VERSION``, regenerate
them with Maven, once, by a developer::

    mvn -f src/kspark/_local/broker-pom.xml dependency:list -DincludeScope=runtime

>>> len(BROKER_JARS), len(STREAMS_JARS)
(46, 12)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kspark._local.download import (Artifact, download_all, human_size, print_progress,
                                    repository)

__all__ = ["BROKER_JARS", "KAFKA_VERSION", "STREAMS_JARS", "kspark_home", "kafka_libs",
           "streams_test_libs"]

KAFKA_VERSION = "4.1.1"

# broker-pom.xml's runtime dependencies: kafka_2.13 and log4j2 for its logging
BROKER_JARS = tuple(Artifact.parse(c) for c in (
    "com.dynatrace.hash4j:hash4j:0.22.0",
    "com.fasterxml.jackson.core:jackson-annotations:2.19.0",
    "com.fasterxml.jackson.core:jackson-core:2.19.0",
    "com.fasterxml.jackson.core:jackson-databind:2.19.0",
    "com.fasterxml.jackson.dataformat:jackson-dataformat-csv:2.19.0",
    "com.fasterxml.jackson.dataformat:jackson-dataformat-yaml:2.19.0",
    "com.fasterxml.jackson.datatype:jackson-datatype-jdk8:2.19.0",
    "com.github.ben-manes.caffeine:caffeine:3.2.0",
    "com.github.luben:zstd-jni:1.5.6-10",
    "com.google.re2j:re2j:1.8",
    "com.typesafe.scala-logging:scala-logging_2.13:3.9.5",
    "com.yammer.metrics:metrics-core:2.2.0",
    "commons-beanutils:commons-beanutils:1.9.4",
    "commons-collections:commons-collections:3.2.2",
    "commons-digester:commons-digester:2.1",
    "commons-logging:commons-logging:1.3.2",
    "commons-validator:commons-validator:1.9.0",
    "net.sf.jopt-simple:jopt-simple:5.0.4",
    "net.sourceforge.argparse4j:argparse4j:0.7.0",
    "org.apache.kafka:kafka-clients:4.1.1",
    "org.apache.kafka:kafka-coordinator-common:4.1.1",
    "org.apache.kafka:kafka-group-coordinator-api:4.1.1",
    "org.apache.kafka:kafka-group-coordinator:4.1.1",
    "org.apache.kafka:kafka-metadata:4.1.1",
    "org.apache.kafka:kafka-raft:4.1.1",
    "org.apache.kafka:kafka-server-common:4.1.1",
    "org.apache.kafka:kafka-server:4.1.1",
    "org.apache.kafka:kafka-share-coordinator:4.1.1",
    "org.apache.kafka:kafka-storage-api:4.1.1",
    "org.apache.kafka:kafka-storage:4.1.1",
    "org.apache.kafka:kafka-tools-api:4.1.1",
    "org.apache.kafka:kafka-transaction-coordinator:4.1.1",
    "org.apache.kafka:kafka_2.13:4.1.1",
    "org.apache.logging.log4j:log4j-api:2.24.3",
    "org.apache.logging.log4j:log4j-core:2.24.3",
    "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
    "org.bitbucket.b_c:jose4j:0.9.6",
    "org.hdrhistogram:HdrHistogram:2.2.2",
    "org.jspecify:jspecify:1.0.0",
    "org.lz4:lz4-java:1.8.0",
    "org.pcollections:pcollections:4.0.2",
    "org.scala-lang:scala-library:2.13.16",
    "org.scala-lang:scala-reflect:2.13.16",
    "org.slf4j:slf4j-api:1.7.36",
    "org.xerial.snappy:snappy-java:1.1.10.7",
    "org.yaml:snakeyaml:2.4",
))

# streams-pom.xml's runtime dependencies: kafka-streams, its test utilities and slf4j-nop
STREAMS_JARS = tuple(Artifact.parse(c) for c in (
    "com.fasterxml.jackson.core:jackson-annotations:2.19.0",
    "com.fasterxml.jackson.core:jackson-core:2.19.0",
    "com.fasterxml.jackson.core:jackson-databind:2.19.0",
    "com.github.luben:zstd-jni:1.5.6-10",
    "org.apache.kafka:kafka-clients:4.1.1",
    "org.apache.kafka:kafka-streams-test-utils:4.1.1",
    "org.apache.kafka:kafka-streams:4.1.1",
    "org.lz4:lz4-java:1.8.0",
    "org.rocksdb:rocksdbjni:9.7.3",
    "org.slf4j:slf4j-api:1.7.36",
    "org.slf4j:slf4j-nop:1.7.36",
    "org.xerial.snappy:snappy-java:1.1.10.7",
))


def kspark_home() -> Path:
    """kspark's cache directory: ``$KSPARK_HOME``, else ``~/.cache/kspark``."""
    return Path(os.environ.get("KSPARK_HOME") or Path.home() / ".cache" / "kspark")


def kafka_libs(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory holding the broker's jars, downloading them the first time."""
    return _fetched("kafka", BROKER_JARS, home, quiet)


def streams_test_libs(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory holding kafka-streams and kafka-streams-test-utils, fetched once."""
    return _fetched("kafka-streams", STREAMS_JARS, home, quiet)


def _fetched(name: str, jars: tuple[Artifact, ...], home: Path | None, quiet: bool) -> Path:
    libs = (home or kspark_home()) / f"{name}-{KAFKA_VERSION}" / "libs"
    if (libs / ".complete").exists():
        return libs
    repo = repository()
    if not quiet:
        print(f"kspark: fetching Apache Kafka {KAFKA_VERSION}'s jars ({name}, {len(jars)} "
              f"files) from {repo} into {libs} (once)...", flush=True)
    libs.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="libs-", dir=libs.parent))
    try:
        total = sum(p.stat().st_size for p in
                    download_all(jars, tmp, repo, None if quiet else print_progress))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / ".complete").touch()
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)
    if not quiet:
        print(f"kspark: {len(jars)} jars, {human_size(total)}, in {libs}", flush=True)
    return libs
