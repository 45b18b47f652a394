"""Serdes: turn keys and values into bytes and back, byte-compatible with Java Kafka.

Example:
    >>> from kspark.serde import Serdes
    >>> Serdes.Long().serialize("t", 1)
    b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01'
    >>> Serdes.by_name("String")
    Serdes.String()
"""

from __future__ import annotations

from typing import Any

from kspark.errors import ConfigError
from kspark.serde._base import Serde
from kspark.serde import _builtin as _b

__all__ = ["Serde", "Serdes"]


class Serdes:
    """Factory of the built-in serdes, named as in Java's ``Serdes``."""

    String = _b.StringSerde
    Integer = _b.IntegerSerde
    Long = _b.LongSerde
    Short = _b.ShortSerde
    Float = _b.FloatSerde
    Double = _b.DoubleSerde
    Bytes = _b.BytesSerde
    ByteArray = _b.ByteArraySerde
    UUID = _b.UUIDSerde
    Void = _b.VoidSerde
    Json = _b.JsonSerde
    Avro = _b.AvroSerde

    _NAMES = ("String", "Integer", "Long", "Short", "Float", "Double",
              "Bytes", "ByteArray", "UUID", "Void", "Json")

    @classmethod
    def by_name(cls, name: Any) -> Serde:
        """The built-in serde called ``name`` (``"String"``, or Java's
        ``...Serdes$StringSerde``), or a serde class made into a serde (as Java's
        ``Serdes.StringSerde.class`` in a config: ``Serdes.String``)."""
        if isinstance(name, type) and issubclass(name, Serde):
            return name()
        if not isinstance(name, str):
            raise ConfigError(f"a serde in the config is a Serde, a Serde class or a built-in "
                              f"serde's name such as 'String', got {type(name).__name__} "
                              f"{name!r:.60}")
        short = name.rsplit("$", 1)[-1].rsplit(".", 1)[-1]
        short = short[: -len("Serde")] if short.endswith("Serde") and short != "Serde" else short
        if short not in cls._NAMES:
            raise ConfigError(
                f"unknown serde {name!r}; use one of {', '.join(cls._NAMES)} or pass a Serde "
                "instance"
            )
        return getattr(cls, short)()
