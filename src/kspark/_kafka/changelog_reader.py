"""The engine's :class:`~kspark._engine.state.recovery.ChangelogReader` over a Kafka cluster.

Offsets and topic ids come from the admin client (read_committed end offsets), records from
``read_range`` with a restore consumer (read_committed: aborted records are never restored).

Example (needs a broker, so not run)::

    reader = KafkaChangelogReader(admin, as_settings(config), config["source.read.timeout.ms"])
    reader.end_offsets([("app-counts-changelog", 0)])    # {("app-counts-changelog", 0): 42}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kspark._engine.state.recovery import ChangelogRecord, TopicPartition
from kspark._kafka.admin import Admin
from kspark._kafka.range_reader import read_range
from kspark._kafka.settings import ClientSettings

__all__ = ["KafkaChangelogReader"]


class KafkaChangelogReader:
    """Read changelog (and global) topics of one cluster for a restore.

    ``admin``: the cluster's admin client; ``settings``: the client settings the restore
    consumer is made from; ``timeout_ms``: how long a read may make no progress before it
    fails (``source.read.timeout.ms``); ``read``: the range reader (``read_range``; a host
    may pass its own reference to it).
    """

    def __init__(self, admin: Admin, settings: ClientSettings, timeout_ms: int,
                 read: Callable[..., Iterator[list[Any]]] = read_range) -> None:
        self._admin, self._settings, self._timeout_ms = admin, settings, int(timeout_ms)
        self._read = read

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The read_committed end of each topic-partition."""
        return self._admin.end_offsets(partitions)

    def earliest_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The first offset still held of each topic-partition."""
        return self._admin.end_offsets(partitions, earliest=True)

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each existing topic's id (missing topics are left out)."""
        return self._admin.topic_ids(topics)

    def read(self, topic: str, partition: int, start: int,
             end: int) -> Iterator[Sequence[ChangelogRecord]]:
        """Lists of the committed records of ``topic``/``partition`` in ``[start, end)``."""
        return self._read(self._settings, topic, partition, start, end, self._timeout_ms,
                          kind="restore.consumer")
