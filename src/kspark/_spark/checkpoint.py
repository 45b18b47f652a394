"""The Spark checkpoint of an application's query, read and written by the driver through
Hadoop's ``FileSystem`` (so any Hadoop-compatible location works: a local path, ``hdfs://``,
``s3a://``, ...); on Spark Connect through the DataFrame API, by the server.

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

from kspark._spark.documents import Invalid, check_pinned_start, load_json, read_offset_log
from kspark.errors import StreamsError
from kspark._spark.connect import is_connect

__all__ = ["SparkCheckpoint", "Offsets"]

Offsets = dict[str, dict[str, int]]  # {topic: {partition: offset}}, as the source writes them
_PIN = "kspark-start.json"


class SparkCheckpoint:
    """One query's checkpoint directory (which may not exist yet), read and written through
    Hadoop's ``FileSystem`` on a classic session and through the DataFrame API on a Spark
    Connect session (``_ConnectFiles``: the server reads and writes, with its file systems)."""

    def __init__(self, spark: SparkSession, location: str):
        self.location = location
        self._files: Any = (_ConnectFiles(spark, location) if is_connect(spark)
                            else _HadoopFiles(spark, location))

    def _batches(self, log: str) -> list[int]:
        return sorted(int(n) for n in self._files.names(log) if n.isdigit())

    def latest_batch(self) -> int | None:
        """The newest batch in the offset log (planned; maybe not completed)."""
        return max(self._batches("offsets"), default=None)

    def last_committed(self) -> int | None:
        """The newest batch in the commit log (completed)."""
        return max(self._batches("commits"), default=None)

    def offsets(self, batch: int) -> Offsets:
        """The end offsets of ``batch``, all sources merged."""
        return read_offset_log(self._files.read(f"offsets/{batch}") or "",
                               f"{self.location}/offsets/{batch}")

    def query_id(self) -> str | None:
        """The id of the query this checkpoint belongs to (Spark's ``metadata`` file, written
        when the query first starts; it stays the query's id across restarts)."""
        text = self._files.read("metadata")
        if text is None:
            return None
        try:
            return str(load_json(text.splitlines()[0])["id"])
        except (Invalid, IndexError, KeyError, TypeError) as e:
            raise StreamsError(f"Spark's checkpoint file {self.location}/metadata is not a "
                               f"query's metadata ({e}); it was changed or damaged: restore "
                               "it, or reset the application (kspark reset)") from None

    def pinned_start(self) -> Offsets | None:
        text = self._files.read(_PIN)
        return None if text is None else check_pinned_start(text, f"{self.location}/{_PIN}")

    def pin_start(self, start: Offsets) -> None:
        self._files.write(_PIN, json.dumps(start, sort_keys=True))


class _HadoopFiles:
    """Files under a checkpoint location through Hadoop's ``FileSystem`` (classic session)."""

    def __init__(self, spark: SparkSession, location: str):
        jvm = spark._jvm
        if jvm is None:
            raise RuntimeError("the SparkSession has stopped")
        self._jvm: Any = jvm
        self._root = self._jvm.org.apache.hadoop.fs.Path(location)
        self._fs = self._root.getFileSystem(spark._jsc.hadoopConfiguration())

    def _path(self, relative: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self._root, relative)

    def read(self, relative: str) -> str | None:
        """A file's text (a directory: its data files', as a Connect client writes one)."""
        path = self._path(relative)
        if not self._fs.exists(path):
            return None
        if self._fs.isDirectory(path):
            parts = sorted(s.getPath().getName() for s in self._fs.listStatus(path))
            return "".join(self.read(f"{relative}/{n}") or "" for n in parts
                           if not n.startswith((".", "_")))
        stream = self._fs.open(path)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def names(self, relative: str) -> list[str]:
        path = self._path(relative)
        if not self._fs.exists(path):
            return []
        return [s.getPath().getName() for s in self._fs.listStatus(path)]

    def write(self, relative: str, text: str) -> None:
        self._fs.mkdirs(self._root)
        out = self._fs.create(self._path(relative), True)
        try:
            out.write(bytearray(text.encode()))
        finally:
            out.close()


class _ConnectFiles:
    """Files under a checkpoint location through the DataFrame API (Spark Connect): the
    server reads them (``text``, ``binaryFile``) with its own file systems. A file kspark
    writes becomes a directory of one data file (Spark's text writer), which both readers
    read as the file."""

    def __init__(self, spark: SparkSession, location: str):
        self._spark, self._root = spark, location.rstrip("/")

    def read(self, relative: str) -> str | None:
        try:
            rows = self._spark.read.text(f"{self._root}/{relative}", wholetext=True).collect()
        except Exception as e:  # noqa: BLE001 - Connect raises its AnalysisException
            if _missing(e):
                return None
            raise
        return "".join(r.value for r in rows)

    def names(self, relative: str) -> list[str]:
        try:
            rows = (self._spark.read.format("binaryFile").load(f"{self._root}/{relative}")
                    .select("path").collect())
        except Exception as e:  # noqa: BLE001
            if _missing(e):
                return []
            raise
        return [r.path.rstrip("/").rsplit("/", 1)[-1] for r in rows]

    def write(self, relative: str, text: str) -> None:
        (self._spark.createDataFrame([(text,)], "value string").coalesce(1)
         .write.mode("overwrite").text(f"{self._root}/{relative}"))


def _missing(error: BaseException) -> bool:
    """Whether Spark's error says the path does not exist."""
    return "PATH_NOT_FOUND" in str(error) or "Path does not exist" in str(error)
