"""Where a running application's state lives, as Kafka Streams tells it: :class:`HostInfo`,
:class:`KeyQueryMetadata` (``KafkaStreams.query_metadata_for_key``),
:class:`StreamsMetadata` (``KafkaStreams.all_metadata_for_store``) and :class:`LagInfo`
(``KafkaStreams.all_local_store_partition_lags``).

In kspark a "host" is the interactive-query endpoint of the Python worker that holds a
task (one per worker process, on the executor Spark placed the task on).

Example:
    >>> m = KeyQueryMetadata(HostInfo("127.0.0.1", 41000), set(), 2)
    >>> m.active_host.port, m.partition
    (41000, 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["HostInfo", "KeyQueryMetadata", "StreamsMetadata", "LagInfo"]


@dataclass(frozen=True)
class HostInfo:
    """A query endpoint's address (Java's ``HostInfo``)."""

    host: str
    port: int

    @classmethod
    def build_from_endpoint(cls, endpoint: str) -> HostInfo:
        """``host:port`` as a HostInfo.

        >>> HostInfo.build_from_endpoint("worker-1:4100")
        HostInfo(host='worker-1', port=4100)
        """
        host, _, port = endpoint.rpartition(":")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where a key of a store lives: the partition the default partitioner gives its
    serialized form, the endpoint of the task holding that partition, and those of the
    workers keeping a standby copy of it (``num.standby.replicas``; they answer stale reads).
    ``active_host`` is None while no worker has announced the task (the application is
    starting or the task is moving)."""

    active_host: HostInfo | None
    standby_hosts: set[HostInfo] = field(default_factory=set)
    partition: int = -1


@dataclass(frozen=True)
class StreamsMetadata:
    """One endpoint: the stores it answers for, and their partitions as
    (changelog topic or store name, partition) pairs, in ``topic_partitions``; the same of
    the standby copies it keeps, in ``standby_state_store_names`` and
    ``standby_topic_partitions``."""

    host_info: HostInfo
    state_store_names: frozenset[str]
    topic_partitions: frozenset[tuple[str, int]]
    standby_state_store_names: frozenset[str] = frozenset()
    standby_topic_partitions: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True)
class LagInfo:
    """How far a store partition's local copy is behind its changelog (Java's ``LagInfo``):
    ``current_offset_position``, the changelog offset the copy holds (an active task's is
    the end, as in Java), ``end_offset_position``, the changelog's end on the brokers, and
    ``offset_lag``, the records in between.

    >>> LagInfo(90, 100)
    LagInfo(current_offset_position=90, end_offset_position=100, offset_lag=10)
    """

    current_offset_position: int
    end_offset_position: int
    offset_lag: int = field(init=False)

    def __post_init__(self) -> None:
        lag = max(0, self.end_offset_position - self.current_offset_position)
        object.__setattr__(self, "offset_lag", lag)
