"""Joined and StreamJoined: the serdes (and, for stream-stream joins, store names and
logging) a join uses.

Example:
    >>> from kspark import Serdes
    >>> sj = (StreamJoined.with_(Serdes.String(), Serdes.Long(), Serdes.String())
    ...       .with_store_name("j"))
    >>> sj.store_name
    'j'
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.either import either, shortcuts
from kspark.dsl._overloads import check_serdes
from kspark._engine.durations import to_ms

__all__ = ["Joined", "StreamJoined"]


@dataclass(frozen=True)
class Joined:
    """Serdes of a stream-table join: the stream's key and value (used when the stream is
    repartitioned before the join, and by the grace period's buffer) and the table's value;
    and the grace period of a join with a versioned table."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    grace_ms: int | None = None
    name: str | None = None  # the join processor's (and a repartition topic's) name

    def __post_init__(self) -> None:
        check_serdes("Joined", key_serde=self.key_serde,
                     value_serde=self.value_serde,
                     other_value_serde=self.other_value_serde)

    @either
    def with_(self, key_serde: Any, value_serde: Any, other_value_serde: Any = None,
              name: str | None = None) -> "Joined":
        return replace(self, key_serde=key_serde, value_serde=value_serde,
                       other_value_serde=other_value_serde, name=name or self.name)

    @either
    def as_(self, name: str) -> "Joined":
        """A join named ``name``: its processor, and ``<name>-repartition`` when the stream is
        repartitioned first (Java's ``Joined.as``)."""
        return replace(self, name=name)

    @either
    def with_name(self, name: str) -> "Joined":
        return replace(self, name=name)

    @either
    def with_grace_period(self, grace_ms: Any) -> "Joined":
        """Hold each stream record until stream time passes its timestamp plus ``grace_ms``,
        then join it with the table's value as of its timestamp, in timestamp order (Kafka
        Streams' ``Joined.withGracePeriod``; the table must be versioned). Records later
        than that join at once.

        Example:
            >>> Joined().with_grace_period(5000).grace_ms
            5000
        """
        grace_ms = to_ms(grace_ms, "Joined.with_grace_period grace")
        if grace_ms < 0:
            raise ValueError(f"the grace period must not be negative, got {grace_ms} ms")
        return replace(self, grace_ms=grace_ms)

    @either
    def with_key_serde(self, serde: Any) -> "Joined":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "Joined":
        return replace(self, value_serde=serde)

    @either
    def with_other_value_serde(self, serde: Any) -> "Joined":
        return replace(self, other_value_serde=serde)


@dataclass(frozen=True)
class StreamJoined:
    """Serdes, store names and logging of a windowed stream-stream join's stores: this
    side's window store holds ``value_serde`` bytes, the other's ``other_value_serde``
    bytes (each defaulting to its stream's serde, then to the config's default). With
    ``with_store_name(n)`` the stores are named as in Kafka Streams: ``n-this-join-store``
    and ``n-other-join-store`` (inner), ``n-this-join-store``, ``n-outer-other-join-store``
    and ``n-left-shared-join-store`` (left), ``n-outer-this-join-store``,
    ``n-outer-other-join-store`` and ``n-outer-shared-join-store`` (outer)."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    store_name: str | None = None
    logging: bool = True
    log_config: tuple[tuple[str, str], ...] = ()
    name: str | None = None  # the join's processors (``<name>-this-join``, ...) and topics

    def __post_init__(self) -> None:
        check_serdes("StreamJoined", key_serde=self.key_serde,
                     value_serde=self.value_serde,
                     other_value_serde=self.other_value_serde)

    @either
    def with_(self, key_serde: Any, value_serde: Any, other_value_serde: Any) -> "StreamJoined":
        return replace(self, key_serde=key_serde, value_serde=value_serde,
                       other_value_serde=other_value_serde)

    @either
    def as_(self, store_name: str) -> "StreamJoined":
        """Stores named for ``store_name`` (Java's ``StreamJoined.as``)."""
        return replace(self, store_name=store_name)

    @either
    def with_name(self, name: str) -> "StreamJoined":
        """Name the join's processors ``<name>-this-join``, ``<name>-other-join``, ... and
        the repartition topics before it ``<name>-left-repartition`` and
        ``<name>-right-repartition`` (Java's ``StreamJoined.withName``)."""
        return replace(self, name=name)

    @either
    def with_key_serde(self, serde: Any) -> "StreamJoined":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "StreamJoined":
        return replace(self, value_serde=serde)

    @either
    def with_other_value_serde(self, serde: Any) -> "StreamJoined":
        return replace(self, other_value_serde=serde)

    @either
    def with_store_name(self, name: str) -> "StreamJoined":
        return replace(self, store_name=name)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> "StreamJoined":
        return replace(self, logging=True, log_config=tuple((config or {}).items()))

    def with_logging_disabled(self) -> "StreamJoined":
        return replace(self, logging=False, log_config=())


# Java's static shortcuts named like fields: Joined.key_serde(S), ...
shortcuts(Joined, key_serde="with_key_serde", value_serde="with_value_serde",
          other_value_serde="with_other_value_serde")
