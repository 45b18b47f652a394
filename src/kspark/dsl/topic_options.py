"""How a DSL step reads or writes a topic, as Kafka Streams' ``Consumed``, ``Produced`` and
``Repartitioned`` (and ``AutoOffsetReset``): thin values, each made with the static
factories Java users know and refined with ``with_*``.

Example:
    >>> from kspark import Serdes
    >>> c = Consumed.with_(Serdes.String(), Serdes.Long()).with_offset_reset_policy(
    ...     AutoOffsetReset.latest())
    >>> c.offset_reset
    'latest'
    >>> r = Repartitioned.as_("by-user").with_number_of_partitions(4)
    >>> r.name, r.number_of_partitions
    ('by-user', 4)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.either import either, shortcuts
from kspark.dsl._overloads import check_serdes
from kspark._engine.durations import to_ms
from kspark._engine.offset_reset import reset_policy_problem
from kspark.errors import TopologyError

__all__ = ["AutoOffsetReset", "Consumed", "Produced", "Repartitioned", "check_offset_reset"]


class AutoOffsetReset:
    """Where a source starts when its application has no committed offset (Kafka 4.0's
    ``AutoOffsetReset``): the policies are written as the ``auto.offset.reset`` values."""

    @staticmethod
    def earliest() -> str:
        return "earliest"

    @staticmethod
    def latest() -> str:
        return "latest"

    @staticmethod
    def none() -> str:
        """No committed offset is an error (Kafka Streams' ``none``)."""
        return "none"

    @staticmethod
    def by_duration(duration: Any) -> str:
        """Start at the records of the last ``duration`` (a timedelta or int ms).

        >>> from datetime import timedelta
        >>> AutoOffsetReset.by_duration(timedelta(hours=1))
        'by_duration:PT3600S'
        """
        ms = to_ms(duration, "AutoOffsetReset.by_duration duration")
        if ms < 0:
            raise ValueError(f"AutoOffsetReset.by_duration needs a duration >= 0, got {ms} ms")
        seconds, rest = divmod(ms, 1000)
        return f"by_duration:PT{seconds}{'.%03d' % rest if rest else ''}S"


def check_offset_reset(policy: Any) -> str:
    """``policy`` if it is one of ``auto.offset.reset``'s values, else a TopologyError.

    >>> check_offset_reset("by_duration:PT1H")
    'by_duration:PT1H'
    """
    problem = reset_policy_problem(policy)
    if problem is not None:
        raise TopologyError(f"the offset reset policy of a source (offset_reset=, Consumed."
                            f"with_offset_reset_policy, AutoOffsetReset): {problem}")
    return policy


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a processor name must be a non-empty str, got {name!r}")
    return name


@dataclass(frozen=True)
class Consumed:
    """Serdes, timestamp extractor, offset reset policy and processor name of a source
    (``StreamsBuilder.stream``/``table``/``global_table``)."""

    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: Callable | None = None
    offset_reset: str | None = None
    processor_name: str | None = None

    def __post_init__(self) -> None:
        check_serdes("Consumed", key_serde=self.key_serde, value_serde=self.value_serde)

    @either
    def with_(self, *args: Any) -> "Consumed":
        """Java's overloads: ``with_(key_serde, value_serde[, timestamp_extractor
        [, offset_reset]])``, ``with_(timestamp_extractor)`` or ``with_(offset_reset)`` (on
        a configured value, over its settings)."""
        if len(args) == 1:
            if isinstance(args[0], str):
                return replace(self, offset_reset=args[0])
            if callable(args[0]) or hasattr(args[0], "extract"):
                return replace(self, timestamp_extractor=args[0])
        elif 2 <= len(args) <= 4:
            given = dict(zip(("key_serde", "value_serde", "timestamp_extractor",
                              "offset_reset"), args, strict=False))
            return replace(self, **given)
        raise TypeError("Consumed.with_() takes (key_serde, value_serde[, timestamp_extractor"
                        "[, offset_reset]]), (timestamp_extractor) or (offset_reset), got "
                        f"{len(args)} argument(s)")

    @either
    def as_(self, processor_name: str) -> "Consumed":
        return replace(self, processor_name=_name(processor_name))

    @either
    def with_key_serde(self, serde: Any) -> "Consumed":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "Consumed":
        return replace(self, value_serde=serde)

    @either
    def with_timestamp_extractor(self, extractor: Callable) -> "Consumed":
        return replace(self, timestamp_extractor=extractor)

    @either
    def with_offset_reset_policy(self, policy: str) -> "Consumed":
        """``AutoOffsetReset.earliest()``, ``latest()``, ``none()`` or ``by_duration(d)``."""
        return replace(self, offset_reset=policy)

    @either
    def with_name(self, processor_name: str) -> "Consumed":
        return replace(self, processor_name=_name(processor_name))


@dataclass(frozen=True)
class Produced:
    """Serdes, partitioner and processor name of a sink (``KStream.to``)."""

    key_serde: Any = None
    value_serde: Any = None
    partitioner: Callable[..., int | None] | None = None
    processor_name: str | None = None

    def __post_init__(self) -> None:
        check_serdes("Produced", key_serde=self.key_serde, value_serde=self.value_serde)

    @either
    def with_(self, key_serde: Any, value_serde: Any,
              partitioner: Callable[..., int | None] | None = None) -> "Produced":
        return replace(self, key_serde=key_serde, value_serde=value_serde,
                       partitioner=partitioner if partitioner is not None else self.partitioner)

    @either
    def stream_partitioner(self, partitioner: Callable[..., int | None]) -> "Produced":
        return replace(self, partitioner=partitioner)

    @either
    def as_(self, processor_name: str) -> "Produced":
        return replace(self, processor_name=_name(processor_name))

    @either
    def with_key_serde(self, serde: Any) -> "Produced":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "Produced":
        return replace(self, value_serde=serde)

    @either
    def with_stream_partitioner(self, partitioner: Callable[..., int | None]) -> "Produced":
        return replace(self, partitioner=partitioner)

    @either
    def with_name(self, processor_name: str) -> "Produced":
        return replace(self, processor_name=_name(processor_name))


@dataclass(frozen=True)
class Repartitioned:
    """Name (of the repartition topic, ``<application.id>-<name>-repartition``), serdes,
    partitioner and number of partitions of ``KStream.repartition``."""

    name: str | None = None
    key_serde: Any = None
    value_serde: Any = None
    partitioner: Callable[..., int | None] | None = None
    number_of_partitions: int | None = None

    def __post_init__(self) -> None:
        check_serdes("Repartitioned", key_serde=self.key_serde, value_serde=self.value_serde)

    @either
    def as_(self, name: str) -> "Repartitioned":
        return replace(self, name=_name(name))

    @either
    def with_(self, key_serde: Any, value_serde: Any) -> "Repartitioned":
        return replace(self, key_serde=key_serde, value_serde=value_serde)

    @either
    def with_number_of_partitions(self, n: int) -> "Repartitioned":
        """The repartition topic's number of partitions (Java's ``numberOfPartitions`` and
        ``withNumberOfPartitions``); unset, that of the topics upstream."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise TypeError(f"the number of partitions must be an int >= 1, got {n!r}")
        return replace(self, number_of_partitions=n)

    @either
    def with_name(self, name: str) -> "Repartitioned":
        return replace(self, name=_name(name))

    @either
    def with_key_serde(self, serde: Any) -> "Repartitioned":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "Repartitioned":
        return replace(self, value_serde=serde)

    @either
    def with_stream_partitioner(self, partitioner: Callable[..., int | None]) -> "Repartitioned":
        return replace(self, partitioner=partitioner)


# Java's static shortcuts named like fields: Produced.key_serde(S), Repartitioned.
# number_of_partitions(4), ... (on a value, the fields)
shortcuts(Produced, key_serde="with_key_serde", value_serde="with_value_serde")
shortcuts(Repartitioned, number_of_partitions="with_number_of_partitions")
