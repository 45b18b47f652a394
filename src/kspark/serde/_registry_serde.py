"""The base of the Schema Registry serdes: settings from the application config
(:meth:`RegistrySerde.configure`), one configured serde, one confluent-kafka serializer pair
and one registry client per process, retries and the errors (see ``_registry_errors``).

The formats (Avro, JSON Schema, Protobuf) are in :mod:`kspark.serde.registry`.
"""

from __future__ import annotations

import copy
import threading
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from kspark.errors import KSparkError, SerializationError
from kspark.serde._base import Serde, cannot_serialize
from kspark.serde._registry_errors import Failure, registry_error, with_retries
from kspark.serde._registry_settings import Settings, client_for, own_config, settings_from
from kspark.serde._registry_types import from_plain, to_plain, wrong_field

__all__ = ["RegistrySerde"]

_CONFIGURED: dict[tuple, "RegistrySerde"] = {}
_CODECS: dict[tuple, "_Codec"] = {}
_LOCK = threading.Lock()


class _Codec:
    """confluent-kafka's serializer and deserializer of one serde and its settings, made
    on first use (a serde that only reads never needs a schema to write with)."""

    def __init__(self, serde: "RegistrySerde", settings: Settings):
        self.serde, self.settings = serde, settings
        self.client = client_for(settings)
        self._made: dict[str, Any] = {}
        # Avro's fast paths (``_registry_fast``): a writer per topic, a reader per schema id;
        # None: checked, and confluent's path it stays
        self.fast: dict[tuple[str, Any], Any] = {}
        self._lock = threading.Lock()

    def get(self, op: str) -> Any:
        made = self._made.get(op)
        if made is None:
            with self._lock:
                made = self._made.get(op)
                if made is None:
                    made = self.serde._make(op, self.client, self.settings)
                    self._made[op] = made
        return made


class RegistrySerde(Serde):
    """A serde whose bytes are Confluent's wire format: magic byte 0, the schema's 4-byte
    big-endian id in the Schema Registry, then the payload. Keys not in its own ``config``
    come from the application config when a task is built (:meth:`configure`)."""

    fmt = ""  # "avro", "json_schema" or "protobuf": the Serdes method that makes it

    def __init__(self, schema_str: str | None, config: Mapping[str, Any] | None,
                 record_type: type | None, message_class: type | None = None):
        self.schema_str, self.record_type, self.message_class = (
            schema_str, record_type, message_class)
        self.config = own_config(config, f"Serdes.{self.fmt}()")
        self.settings: Settings | None = None  # None: not configured (its own config alone)
        self._codec: _Codec | None = None
        kind = record_type or message_class
        fields = "" if message_class else " or a dict of its fields"
        self.takes = f"a {kind.__name__}{fields}" if kind else "a dict of the schema's fields"

    # -- configuration and the per-process caches

    def configure(self, config: Mapping[str, Any], is_key: bool) -> "RegistrySerde":
        """This serde with the application ``config``'s registry settings under its own, for
        keys (``is_key``) or values, as Java's ``Serde.configure(configs, isKey)``: a
        configured copy, the same one for equal settings in a process (never this one
        changed). kspark calls it when it builds a task."""
        settings = settings_from(self.config, config, is_key)
        key = (type(self), self._spec(), settings)
        with _LOCK:
            done = _CONFIGURED.get(key)
            if done is None:
                done = copy.copy(self)
                done.__dict__.update(settings=settings, _codec=None)
                _CONFIGURED[key] = done
        return done

    def _settings(self) -> Settings:
        if self.settings is None:  # used as it is: its own config, as a value serde
            self.settings = settings_from(self.config, {}, is_key=False)
        return self.settings

    def _spec(self) -> tuple:
        return (self.schema_str, self.record_type, self.message_class,
                tuple(sorted(self.config.items())))

    def _codec_of(self, settings: Settings) -> _Codec:
        codec = self._codec
        if codec is None or (codec.settings is not settings and codec.settings != settings):
            key = (type(self), self._spec(), settings)
            with _LOCK:
                codec = _CODECS.get(key)
                if codec is None:
                    codec = _CODECS[key] = _Codec(self, settings)
            self._codec = codec
        return codec

    # -- the per-record path

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        s = self._settings()
        plain = self._plain(topic, data)
        try:
            serializer, ctx = self._codec_of(s).get("write"), _context(topic, s.is_key)
            return with_retries(s, lambda: serializer(plain, ctx))
        except KSparkError:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes one named error
            where = self._failure(s, "write", topic, None)
            raise registry_error(where, e) from _shown(e, s)

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        s, schema_id = self._settings(), _schema_id(data)
        if schema_id is None:
            raise SerializationError(
                f"{self._failure(s, 'read', topic, None).head()}: its {len(data)} bytes have "
                f"no Schema Registry framing (magic byte 0, then a 4-byte schema id), they "
                f"start with {bytes(data[:5])!r}; the record was written without a registry "
                f"serializer")
        try:
            deserializer, ctx = self._codec_of(s).get("read"), _context(topic, s.is_key)
            value = with_retries(s, lambda: deserializer(bytes(data), ctx))
        except KSparkError:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes one named error
            where = self._failure(s, "read", topic, schema_id)
            raise registry_error(where, e) from _shown(e, s)
        try:
            return self._typed(value)
        except Exception as e:  # noqa: BLE001 - the record type refused what was read
            head = self._failure(s, "read", topic, schema_id).head()
            raise SerializationError(f"{head}: read it, but cannot make a {self._kind_name()} "
                                     f"of it ({type(e).__name__}: {s.scrub(str(e))})") from e

    def _failure(self, s: Settings, op: str, topic: str, schema_id: Any) -> Failure:
        """Where a read or write failed, for its error (the subject as far as it is known:
        a record name read from the registry is not, when reading fails)."""
        name = self._record_name() if op == "write" else None
        return Failure(repr(self), s, op, topic, schema_id, s.subject_of(topic, name))

    def _plain(self, topic: str, data: Any) -> Any:
        """``data`` as the serializer takes it (a record type's instance as a dict)."""
        cls = self.record_type
        if cls is None or isinstance(data, Mapping):
            return data
        if not isinstance(data, cls):
            raise cannot_serialize(self, topic, data)
        problem = wrong_field(cls, data)
        if problem:
            raise SerializationError(f"{self!r} cannot write the {self._settings().part} of "
                                     f"topic {topic!r}: {problem} (in {cls.__name__})")
        return to_plain(cls, data)

    def _typed(self, value: Any) -> Any:
        return value if self.record_type is None else from_plain(self.record_type, value)

    # -- what each format gives

    @abstractmethod
    def _make(self, op: str, client: Any, settings: Settings) -> Any:
        """confluent-kafka's serializer (``op`` "write") or deserializer ("read"): each
        format's own."""

    def _record_name(self) -> str | None:
        """The record's name that RecordNameStrategy makes the subject of (each format's
        :meth:`_name_of_record`, worked out once)."""
        name = self.__dict__.get("_name", False)
        if name is False:
            name = self._name = self._name_of_record()
        return name

    def _name_of_record(self) -> str | None:
        return None

    def _kind_name(self) -> str:
        kind = self.record_type or self.message_class
        return kind.__name__ if kind else "value"

    def _to_bytes(self, data: Any) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> Any:
        return self.deserialize("", data)

    # -- identity, printing and pickling (never the client, never a secret)

    def __repr__(self) -> str:
        kind = self.record_type or self.message_class
        what = kind.__name__ if kind else (repr(self._record_name()) if self.schema_str else "")
        return f"Serdes.{self.fmt}({what})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self._spec() == other._spec()  # type: ignore
                and self.settings == other.settings)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.schema_str, self.record_type, self.message_class))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_codec": None}  # the client is made again where it lands


def _shown(cause: BaseException, s: Settings) -> BaseException | None:
    """``cause``, to chain to the error, unless its text shows a secret."""
    text = f"{cause} {cause.__cause__ or ''}"
    return cause if s.scrub(text) == text else None


def _schema_id(data: bytes) -> int | str | None:
    """The schema id of Confluent's framing (magic byte 0 and a 4-byte id, or magic byte 1
    and a 16-byte schema GUID), or None."""
    if len(data) >= 5 and data[0] == 0:
        return int.from_bytes(data[1:5], "big")
    if len(data) >= 17 and data[0] == 1:
        import uuid

        return f"guid {uuid.UUID(bytes=bytes(data[1:17]))}"
    return None


def _context(topic: str, is_key: bool) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
