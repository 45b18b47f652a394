"""Names and small options of DSL steps, as Kafka Streams' ``Named``, ``Grouped``,
``Printed`` and ``TableJoined``.

Example:
    >>> from kspark import Serdes
    >>> Named.as_("only-big").name
    'only-big'
    >>> g = Grouped.with_("by-word", Serdes.String(), Serdes.Long())
    >>> g.name
    'by-word'
    >>> Printed.to_sys_out().with_label("counts").label
    'counts'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kspark._engine.either import either, shortcuts
from kspark.dsl._overloads import check_serdes

__all__ = ["Named", "Grouped", "Printed", "TableJoined"]


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a name must be a non-empty str, got {name!r}")
    return name


@dataclass(frozen=True)
class Named:
    """The name of the processor a DSL step adds (Java's ``Named.as``)."""

    name: str

    @staticmethod
    def as_(name: str) -> "Named":
        return Named(_name(name))

    def with_name(self, name: str) -> "Named":
        return Named(_name(name))


@dataclass(frozen=True)
class Grouped:
    """Name (of the repartition topic a grouping may need) and serdes of ``group_by`` /
    ``group_by_key``: ``Grouped.with_(key_serde, value_serde)`` or
    ``Grouped.with_(name, key_serde, value_serde)``, ``Grouped.as_(name)``."""

    name: str | None = None
    key_serde: Any = None
    value_serde: Any = None

    def __post_init__(self) -> None:
        check_serdes("Grouped", key_serde=self.key_serde, value_serde=self.value_serde)

    @either
    def with_(self, *args: Any) -> "Grouped":
        if len(args) == 3:
            return replace(self, name=_name(args[0]), key_serde=args[1], value_serde=args[2])
        if len(args) == 2 and not isinstance(args[0], str):
            return replace(self, key_serde=args[0], value_serde=args[1])
        raise TypeError("Grouped.with_() takes (key_serde, value_serde) or (name, key_serde, "
                        f"value_serde), got {len(args)} argument(s)")

    @either
    def as_(self, name: str) -> "Grouped":
        return replace(self, name=_name(name))

    @either
    def with_name(self, name: str) -> "Grouped":
        return replace(self, name=_name(name))

    @either
    def with_key_serde(self, serde: Any) -> "Grouped":
        return replace(self, key_serde=serde)

    @either
    def with_value_serde(self, serde: Any) -> "Grouped":
        return replace(self, value_serde=serde)


@dataclass(frozen=True)
class Printed:
    """Where ``KStream.print`` writes (standard output or a file), with a label and an
    optional ``mapper(key, value) -> str`` (default: ``key, value``)."""

    path: str | None = None
    label: str | None = None
    mapper: Callable[[Any, Any], str] | None = None
    processor_name: str | None = None

    @staticmethod
    def to_sys_out() -> "Printed":
        return Printed()

    @staticmethod
    def to_file(path: str) -> "Printed":
        if not isinstance(path, str) or not path:
            raise TypeError(f"Printed.to_file() takes a file path, got {path!r}")
        return Printed(path=path)

    def with_label(self, label: str) -> "Printed":
        return replace(self, label=str(label))

    def with_key_value_mapper(self, mapper: Callable[[Any, Any], str]) -> "Printed":
        if not callable(mapper):
            raise TypeError(f"Printed.with_key_value_mapper() takes a function, got {mapper!r}")
        return replace(self, mapper=mapper)

    def with_name(self, processor_name: str) -> "Printed":
        return replace(self, processor_name=_name(processor_name))

    def action(self, tag: str) -> Callable[[Any, Any], None]:
        """What to do with each record: ``[label]: text`` to standard output or the file."""
        label = self.label or tag
        mapper = self.mapper or (lambda k, v: f"{k}, {v}")
        path = self.path

        def emit(key: Any, value: Any) -> None:
            line = f"[{label}]: {mapper(key, value)}"
            if path is None:
                print(line, flush=True)
            else:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
        return emit


@dataclass(frozen=True)
class TableJoined:
    """Name and partitioners of a foreign-key join (Java's ``TableJoined``). kspark routes
    the join's internal subscription topics by key with Kafka's default partitioner: a
    custom partitioner is refused when the join is added, never ignored."""

    partitioner: Callable[..., int | None] | None = None
    other_partitioner: Callable[..., int | None] | None = None
    name: str | None = None

    @either
    def with_(self, partitioner: Callable[..., int | None] | None,
              other_partitioner: Callable[..., int | None] | None) -> "TableJoined":
        return replace(self, partitioner=partitioner, other_partitioner=other_partitioner)

    @either
    def as_(self, name: str) -> "TableJoined":
        return replace(self, name=_name(name))

    @either
    def with_name(self, name: str) -> "TableJoined":
        return replace(self, name=_name(name))

    @either
    def with_partitioner(self, partitioner: Callable[..., int | None]) -> "TableJoined":
        return replace(self, partitioner=partitioner)

    @either
    def with_other_partitioner(self, partitioner: Callable[..., int | None]) -> "TableJoined":
        return replace(self, other_partitioner=partitioner)


# Java's static shortcuts named like fields: Grouped.key_serde(S), Grouped.value_serde(S)
shortcuts(Grouped, key_serde="with_key_serde", value_serde="with_value_serde")
