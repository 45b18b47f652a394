"""Foreign-key KTable joins: each left row joins the right row whose key its value names.

Three steps, as in Kafka Streams, each a processor in its own sub-topology:

1. :class:`SubscribeProcessor` (where the left table lives) turns each left change into
   subscription messages keyed by the foreign key: subscribe to the new foreign key,
   unsubscribe from the old one. Every change gets a new version number per left key.
2. :class:`SubscriptionProcessor` and :class:`RightChangeProcessor` (co-partitioned with
   the right table) keep the subscriptions in a store keyed ``(foreign key, left key)`` and
   answer with responses keyed by the left key: at once for a subscription, and to every
   subscriber when the right row changes.
3. :class:`ResolveProcessor` (partitioned like the left table) drops responses older than
   the newest version it has seen for the key, joins, and keeps the result table.

Messages on the two internal topics are kspark's own byte layout; left keys and values
travel in them serialized with the left table's serdes.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.tables.change import Change, out_of_order
from kspark._engine.tables.processors import TableStoreProcessor
from kspark.serde import Serdes

_BYTES = Serdes.ByteArray()

__all__ = ["SUBSCRIBE", "UNSUBSCRIBE", "UNSUBSCRIBE_AND_PROPAGATE", "RESUBSCRIBE",
           "Subscription", "Response",
           "encode_subscription", "decode_subscription", "encode_response", "decode_response",
           "SubscribeProcessor", "SubscriptionProcessor", "RightChangeProcessor",
           "ResolveProcessor"]

# RESUBSCRIBE: a changed left row subscribes; its answer is passed on even if it makes no
# result (an inner join's tombstone), as Kafka Streams' PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE.
SUBSCRIBE, UNSUBSCRIBE, UNSUBSCRIBE_AND_PROPAGATE, RESUBSCRIBE = 0, 1, 2, 3


class Subscription(NamedTuple):
    instruction: int
    version: int
    left_key: bytes
    left_value: bytes | None


class Response(NamedTuple):
    version: int
    left_value: bytes | None
    right_value: bytes | None
    propagate: bool = False  # forward even a result that is no row (a tombstone)


def _blob(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def _blobs(data: bytes, at: int, n: int) -> list[bytes | None]:
    out = []
    for _ in range(n):
        (size,) = struct.unpack_from(">i", data, at)
        at += 4
        out.append(None if size < 0 else bytes(data[at:at + size]))
        at += max(size, 0)
    return out


def encode_subscription(s: Subscription) -> bytes:
    """Instruction byte, 8-byte version, then the left key and value as length-prefixed bytes.

    >>> decode_subscription(encode_subscription(Subscription(SUBSCRIBE, 7, b"k", None)))
    Subscription(instruction=0, version=7, left_key=b'k', left_value=None)
    """
    return struct.pack(">bq", s.instruction, s.version) + _blob(s.left_key) + _blob(s.left_value)


def decode_subscription(data: bytes) -> Subscription:
    instruction, version = struct.unpack_from(">bq", data)
    key, value = _blobs(data, 9, 2)
    return Subscription(instruction, version, key or b"", value)


def encode_response(r: Response) -> bytes:
    """8-byte version, a propagate byte, then the left and right values as length-prefixed bytes.

    >>> decode_response(encode_response(Response(3, b"l", None)))
    Response(version=3, left_value=b'l', right_value=None, propagate=False)
    """
    return (struct.pack(">q?", r.version, r.propagate) + _blob(r.left_value)
            + _blob(r.right_value))


def decode_response(data: bytes) -> Response:
    version, propagate = struct.unpack_from(">q?", data)
    left, right = _blobs(data, 9, 2)
    return Response(version, left, right, propagate)


def _serde(serde: Any, config: Mapping[str, Any], kind: str) -> Any:
    """The given serde, else the config's default (a Serde or a Serdes name)."""
    serde = serde if serde is not None else config.get(f"default.{kind}.serde")
    return Serdes.by_name(serde) if isinstance(serde, str) else serde


def _takes_key(fn: Callable[..., Any]) -> bool:
    """Whether a foreign-key extractor is ``fn(key, value)`` rather than ``fn(value)``.

    >>> _takes_key(lambda v: v), _takes_key(lambda k, v: k)
    (False, True)
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature: value only
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return len(positional) == 2


class SubscribeProcessor(Processor):
    """Left side: a Change(new, old) of a left row becomes subscription messages.

    The extractor is ``fn(value)`` or ``fn(key, value)``, as Kafka Streams accepts both.
    """

    def __init__(self, extractor: Callable[..., Any], version_store: str, key_serde: Any,
                 value_serde: Any):
        self.extractor = extractor
        self.keyed = _takes_key(extractor)  # fn(key, value) rather than fn(value)
        self.version_store = version_store
        self.key_serde, self.value_serde = key_serde, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.versions = context.get_state_store(self.version_store)
        config = context.app_config()
        self.key_serde = _serde(self.key_serde, config, "key")
        self.value_serde = _serde(self.value_serde, config, "value")

    def process(self, record: Record) -> None:
        if record.key is None or out_of_order(self.context, record, "a foreign-key join"):
            return
        change: Change = record.value
        if change.new is None and change.old is None:
            return  # a delete of a row this table never had: nothing to join or retract
        version = (self.versions.get(record.key) or 0) + 1
        self.versions.put(record.key, version)
        key = self.key_serde.serialize("", record.key)
        new_fk = None if change.new is None else self._fk(record.key, change.new)
        old_fk = None if change.old is None else self._fk(record.key, change.old)
        if change.new is None:
            self._send(old_fk, UNSUBSCRIBE_AND_PROPAGATE, version, key, None, record)
            return
        if change.old is not None and old_fk != new_fk and old_fk is not None:
            self._send(old_fk, UNSUBSCRIBE, version, key, None, record)
        value = self.value_serde.serialize("", change.new)
        # a moved row must unset its old result when the new key has no match (RESUBSCRIBE);
        # a row that keeps its foreign key answers only with a match, as Java's
        # PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
        moved = change.old is not None and old_fk != new_fk
        self._send(new_fk, RESUBSCRIBE if moved else SUBSCRIBE, version, key, value, record)

    def _fk(self, key: Any, value: Any) -> Any:
        return self.extractor(key, value) if self.keyed else self.extractor(value)

    def _send(self, fk: Any, instruction: int, version: int, key: bytes, value: bytes | None,
              record: Record) -> None:
        message = encode_subscription(Subscription(instruction, version, key, value))
        self.context.forward(Record(fk, message, record.timestamp, record.headers))


def _store_key(fk_bytes: bytes, left_key: bytes) -> bytes:
    return struct.pack(">i", len(fk_bytes)) + fk_bytes + left_key


class SubscriptionProcessor(Processor):
    """Right side: records a subscription and answers it with the right row's current value.

    The subscription store maps ``(foreign key, left key)`` to the version, left value and
    timestamp of the latest subscription.
    """

    def __init__(self, subscriptions: str, right_store: str, fk_serde: Any, right_value_serde: Any,
                 left: bool = False):
        self.subscriptions_name, self.right_store = subscriptions, right_store
        self.fk_serde, self.right_value_serde = fk_serde, right_value_serde
        self.left = left

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.subscriptions = context.get_state_store(self.subscriptions_name)
        self.right = context.get_state_store(self.right_store)
        config = context.app_config()
        self.fk_serde = _serde(self.fk_serde, config, "key")
        self.right_value_serde = _serde(self.right_value_serde, config, "value")

    def process(self, record: Record) -> None:
        s = decode_subscription(record.value)
        fk = record.key
        store_key = None if fk is None else _store_key(self.fk_serde.serialize("", fk), s.left_key)
        if s.instruction in (SUBSCRIBE, RESUBSCRIBE):
            if store_key is not None:
                self.subscriptions.put(store_key, struct.pack(">qq", s.version, record.timestamp)
                                       + _blob(s.left_value))
            vt = None if fk is None else self.right.get(fk)
            right = None if vt is None else self.right_value_serde.serialize("", vt.value)
            ts = record.timestamp if vt is None else max(record.timestamp, vt.timestamp)
            self._respond(s.left_key, Response(s.version, s.left_value, right,
                                               s.instruction == RESUBSCRIBE), ts, record)
            return
        if store_key is not None:
            self.subscriptions.delete(store_key)
        if s.instruction == UNSUBSCRIBE_AND_PROPAGATE:
            # an inner join's delete is stamped max(delete, right row), as Java's
            # SubscriptionJoinProcessor; a left join answers first through the null foreign
            # key, at the delete's own time
            vt = None if fk is None or self.left else self.right.get(fk)
            ts = record.timestamp if vt is None else max(record.timestamp, vt.timestamp)
            self._respond(s.left_key, Response(s.version, None, None, True), ts, record)

    def _respond(self, left_key: bytes, response: Response, ts: int, record: Record) -> None:
        self.context.forward(Record(left_key, encode_response(response), ts, record.headers))


class RightChangeProcessor(Processor):
    """Right side: a change of a right row answers every subscriber of its key again."""

    def __init__(self, subscriptions: str, fk_serde: Any, right_value_serde: Any):
        self.subscriptions_name = subscriptions
        self.fk_serde, self.right_value_serde = fk_serde, right_value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.subscriptions = context.get_state_store(self.subscriptions_name)
        config = context.app_config()
        self.fk_serde = _serde(self.fk_serde, config, "key")
        self.right_value_serde = _serde(self.right_value_serde, config, "value")

    def process(self, record: Record) -> None:
        if record.key is None or out_of_order(self.context, record, "a foreign-key join"):
            return
        fk_bytes = self.fk_serde.serialize("", record.key)
        prefix = struct.pack(">i", len(fk_bytes)) + fk_bytes
        new = record.value.new
        right = None if new is None else self.right_value_serde.serialize("", new)
        with self.subscriptions.prefix_scan(prefix, _BYTES) as entries:
            subscribers = list(entries)
        for entry in subscribers:
            version, _ = struct.unpack_from(">qq", entry.value)  # (version, left timestamp)
            (left_value,) = _blobs(entry.value, 16, 1)
            response = Response(version, left_value, right, True)
            # an update from the right side carries the right record's timestamp
            self.context.forward(Record(entry.key[len(prefix):], encode_response(response),
                                        record.timestamp, record.headers))


class ResolveProcessor(TableStoreProcessor):
    """Left partitioning again: the newest response per left key becomes the join result."""

    def __init__(self, result_store: str, version_store: str, joiner: Callable[[Any, Any], Any],
                 left: bool, key_serde: Any, value_serde: Any, right_value_serde: Any,
                 materialized: Any = None):
        super().__init__(result_store, materialized)
        self.version_store, self.joiner, self.left = version_store, joiner, left
        self.key_serde, self.value_serde = key_serde, value_serde
        self.right_value_serde = right_value_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.versions = context.get_state_store(self.version_store)
        config = context.app_config()
        self.key_serde = _serde(self.key_serde, config, "key")
        self.value_serde = _serde(self.value_serde, config, "value")
        self.right_value_serde = _serde(self.right_value_serde, config, "value")

    def process(self, record: Record) -> None:
        r = decode_response(record.value)
        seen = self.versions.get(record.key)
        if seen is not None and r.version < seen:
            return  # answers an older subscription of this key: superseded
        self.versions.put(record.key, r.version)
        key = self.key_serde.deserialize("", record.key)
        left = None if r.left_value is None else self.value_serde.deserialize("", r.left_value)
        right = (None if r.right_value is None
                 else self.right_value_serde.deserialize("", r.right_value))
        new = None
        if left is not None and (right is not None or self.left):
            new = self.joiner(left, right)
        old = self._get(key)
        if new is None and old is None and not r.propagate:
            return  # a new left row without a match: Kafka Streams sends no answer
        self._write(Record(key, None, record.timestamp, record.headers), new, old)
