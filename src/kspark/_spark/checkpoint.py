"""The Spark checkpoint of an application's query, read and written by the driver through
Hadoop's ``FileSystem`` (so any Hadoop-compatible location works: a local path, ``hdfs://``,
``s3a://``, ...).

Spark's offset log holds, per micro-batch, each source's end offsets (``offsets/<batch>``:
a version line, a metadata line, then one line per source); its commit log
(``commits/<batch>``) lists the batches that completed. kspark adds one file,
``kspark-start.json``: the offsets the query's first batch started from, pinned before
the query starts (Spark asks the source for them again when it replays batch 0).

Example:
    >>> # SparkCheckpoint(spark, "/data/state/my-app/checkpoint").latest_batch()
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from kspark._spark.documents import check_pinned_start, read_offset_log

__all__ = ["SparkCheckpoint", "Offsets"]

Offsets = dict[str, dict[str, int]]  # {topic: {partition: offset}}, as the source writes them
_PIN = "kspark-start.json"


class SparkCheckpoint:
    """One query's checkpoint directory (which may not exist yet)."""

    def __init__(self, spark: SparkSession, location: str):
        self.location = location
        jvm = spark._jvm
        if jvm is None:
            raise RuntimeError("the SparkSession has stopped")
        self._jvm: Any = jvm
        self._root = self._jvm.org.apache.hadoop.fs.Path(location)
        self._fs = self._root.getFileSystem(spark._jsc.hadoopConfiguration())

    def _path(self, relative: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self._root, relative)

    def _read(self, relative: str) -> str | None:
        path = self._path(relative)
        if not self._fs.exists(path):
            return None
        stream = self._fs.open(path)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def _batches(self, log: str) -> list[int]:
        path = self._path(log)
        if not self._fs.exists(path):
            return []
        names = (s.getPath().getName() for s in self._fs.listStatus(path))
        return sorted(int(n) for n in names if n.isdigit())

    def latest_batch(self) -> int | None:
        """The newest batch in the offset log (planned; maybe not completed)."""
        return max(self._batches("offsets"), default=None)

    def last_committed(self) -> int | None:
        """The newest batch in the commit log (completed)."""
        return max(self._batches("commits"), default=None)

    def offsets(self, batch: int) -> Offsets:
        """The end offsets of ``batch``, all sources merged."""
        return read_offset_log(self._read(f"offsets/{batch}") or "",
                               f"{self.location}/offsets/{batch}")

    def pinned_start(self) -> Offsets | None:
        text = self._read(_PIN)
        return None if text is None else check_pinned_start(text, f"{self.location}/{_PIN}")

    def pin_start(self, start: Offsets) -> None:
        self._fs.mkdirs(self._root)
        out = self._fs.create(self._path(_PIN), True)
        try:
            out.write(bytearray(json.dumps(start, sort_keys=True).encode()))
        finally:
            out.close()
