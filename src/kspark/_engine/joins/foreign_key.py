"""Foreign-key KTable joins: each left row joins the right row whose key its value names.

Kafka Streams 4.1's processors (``kstream/internals/foreignkeyjoin``), one class each:

1. :class:`SubscriptionSendProcessor` (the left table's side) turns each left change into
   subscriptions keyed by foreign key, each carrying the hash of the left row's value.
2. :class:`SubscriptionReceiveProcessor` (co-partitioned with the right table) keeps them
   in the subscription store under ``(foreign key, left key)``;
   :class:`SubscriptionJoinProcessor` answers each with the right row;
   :class:`ForeignTableJoinProcessor` answers every subscriber again when the right row
   changes. Responses are keyed by the left key and go to the left record's partition.
3. :class:`ResponseJoinProcessor` (back with the left table) drops a response whose hash is
   not the hash of the left row as it is now (a later change superseded it) and joins.

Messages and store entries are Java's bytes (see :mod:`kspark._engine.joins.fk_wire`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.context import record_dropped
from kspark._engine.joins import fk_wire as w
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.tables.change import Change, out_of_order
from kspark.errors import SerializationError, TopologyError
from kspark.serde import Serdes

_BYTES = Serdes.ByteArray()

__all__ = ["SubscriptionSendProcessor", "SubscriptionReceiveProcessor",
           "SubscriptionJoinProcessor", "ForeignTableJoinProcessor", "ResponseJoinProcessor"]


def _serde(serde: Any, config: Mapping[str, Any], kind: str) -> Any:
    """The given serde, else the config's default (a Serde or a Serdes name)."""
    serde = serde if serde is not None else config.get(f"default.{kind}.serde")
    if serde is None:
        raise TopologyError(
            f"a foreign-key join writes its tables' {kind}s to its internal topics and needs "
            f"their {kind} serdes: give each table one (Materialized.with_{kind}_serde, or "
            f"the serdes of StreamsBuilder.table), or set the config key "
            f"'default.{kind}.serde'")
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


def _newer(what: str, version: int, known: int, context: ProcessorContext) -> SerializationError:
    """A foreign-key join message of a version this kspark does not read (Java's
    UnsupportedVersionException)."""
    meta = context.record_metadata()
    where = "" if meta is None else f" (topic {meta.topic!r}, partition {meta.partition}, " \
        f"offset {meta.offset})"
    return SerializationError(
        f"task {context.task_id()}: a foreign-key join {what} of version {version}{where}; "
        f"this kspark reads version {known} (Kafka Streams 4.1's): a newer Kafka Streams or "
        "kspark wrote it, so run that version, or reset the application")


def _app_topic(context: ProcessorContext, topic: str) -> str:
    """A pseudo topic named as Java decorates it (``<application.id>-<topic>``)."""
    return f"{context.application_id()}-{topic}"


class SubscriptionSendProcessor(Processor):
    """Left side (Java's ``SubscriptionSendProcessorSupplier``): a Change(new, old) of a
    left row becomes subscriptions. The extractor is ``fn(value)`` or ``fn(key, value)``."""

    def __init__(self, extractor: Callable[..., Any], left_join: bool, hash_topic: str,
                 fk_serde: Any, value_serde: Any, key_serde: Any):
        self.extractor, self.left_join, self.hash_topic = extractor, left_join, hash_topic
        self.keyed = _takes_key(extractor)
        self.fk_serde, self.value_serde, self.key_serde = fk_serde, value_serde, key_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        config = context.app_config()
        self.fk_serde = _serde(self.fk_serde, config, "key")
        self.key_serde = _serde(self.key_serde, config, "key")
        self.value_serde = _serde(self.value_serde, config, "value")
        self.hash_topic = _app_topic(context, self.hash_topic)

    def process(self, record: Record) -> None:
        if out_of_order(self.context, record, "a foreign-key join"):
            return
        self._hash: tuple[int, int] | None = None
        self._hashed = False
        change: Change = record.value
        old_fk = None if change.old is None else self._fk(record.key, change.old)
        new_fk = None if change.new is None else self._fk(record.key, change.new)
        if self.left_join:
            if change.old is not None:
                if old_fk is not None and self._ser(new_fk) != self._ser(old_fk):
                    self._send(record, old_fk, w.DELETE_KEY_NO_PROPAGATE)
                self._send(record, new_fk, w.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            elif change.new is not None:
                self._send(record, new_fk, w.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if change.old is None and change.new is None:
            return
        if change.old is None or old_fk is None:
            if new_fk is None:
                self._skip()
            else:
                self._send(record, new_fk, w.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        elif new_fk is None:
            self._send(record, old_fk, w.DELETE_KEY_AND_PROPAGATE)
        elif self._ser(new_fk) != self._ser(old_fk):
            self._send(record, old_fk, w.DELETE_KEY_NO_PROPAGATE)
            self._send(record, new_fk, w.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        else:
            self._send(record, new_fk, w.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)

    def _fk(self, key: Any, value: Any) -> Any:
        return self.extractor(key, value) if self.keyed else self.extractor(value)

    def _ser(self, fk: Any) -> bytes | None:
        return self.fk_serde.serialize("", fk)

    def _skip(self) -> None:
        record_dropped(self.context, "a foreign-key join skips a row whose foreign key is null")

    def _send(self, record: Record, fk: Any, instruction: int) -> None:
        if not self._hashed:  # the new value's hash, once per record
            new = record.value.new
            self._hash = (None if new is None
                          else w.hash128(self.value_serde.serialize(self.hash_topic, new)))
            self._hashed = True
        meta = self.context.record_metadata()
        wrapper = w.Subscription(self._hash, instruction,
                                 self.key_serde.serialize("", record.key),
                                 meta.partition if meta is not None else 0)
        self.context.forward(Record(fk, w.Framed(w.encode_subscription(wrapper)),
                                    record.timestamp, record.headers))


class SubscriptionReceiveProcessor(Processor):
    """Right side: keeps each subscription in the subscription store (key: CombinedKey,
    value: the timestamped SubscriptionWrapper) and passes it on as a Change."""

    def __init__(self, store: str, fk_serde: Any):
        self.store_name, self.fk_serde = store, fk_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        self.fk_serde = _serde(self.fk_serde, context.app_config(), "key")

    def process(self, record: Record) -> None:
        s = w.decode_subscription(record.value)
        if record.key is None and s.instruction != w.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            record_dropped(self.context, "a foreign-key join skips a subscription with a "
                                         "null foreign key")
            return
        if s.version > w.SUBSCRIPTION_VERSION:
            raise _newer("subscription", s.version, w.SUBSCRIPTION_VERSION, self.context)
        new = ValueAndTimestamp(s, record.timestamp)
        old = None
        if record.key is not None:
            key = w.combined_key(self.fk_serde.serialize("", record.key), s.primary_key)
            stored = self.store.get(key)
            old = None if stored is None else ValueAndTimestamp(
                w.decode_subscription(stored.value), stored.timestamp)
            if s.instruction in (w.DELETE_KEY_AND_PROPAGATE, w.DELETE_KEY_NO_PROPAGATE):
                self.store.delete(key)
            else:
                self.store.put(key, ValueAndTimestamp(bytes(record.value), record.timestamp))
        self.context.forward(Record((record.key, s.primary_key), Change(new, old),
                                    record.timestamp, record.headers))


class SubscriptionJoinProcessor(Processor):
    """Right side: answers a subscription with the right row its foreign key names."""

    def __init__(self, getter: Any, value_serde: Any):
        self.getter, self.value_serde = getter, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.get = self.getter.bind(context)
        self.value_serde = _serde(self.value_serde, context.app_config(), "value")

    def process(self, record: Record) -> None:
        fk, pk = record.key
        vt: ValueAndTimestamp = record.value.new
        s: w.Subscription = vt.value
        foreign, foreign_ts = (None, -1) if fk is None else self.get(fk)
        ts = vt.timestamp if foreign is None else max(vt.timestamp, foreign_ts)
        if s.instruction == w.DELETE_KEY_NO_PROPAGATE:
            return
        if s.instruction == w.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE and foreign is None:
            return
        send = None if s.instruction == w.DELETE_KEY_AND_PROPAGATE else foreign
        data = None if send is None else self.value_serde.serialize("", send)
        response = w.Response(s.hash, data, s.primary_partition)
        self.context.forward(Record(pk, w.Framed(w.encode_response(response),
                                                 s.primary_partition), ts, record.headers))


class ForeignTableJoinProcessor(Processor):
    """Right side: a change of a right row answers every subscriber of its key again."""

    def __init__(self, store: str, fk_serde: Any, value_serde: Any):
        self.store_name, self.fk_serde, self.value_serde = store, fk_serde, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)
        config = context.app_config()
        self.fk_serde = _serde(self.fk_serde, config, "key")
        self.value_serde = _serde(self.value_serde, config, "value")

    def process(self, record: Record) -> None:
        if record.key is None:
            record_dropped(self.context, "a foreign-key join skips a right row with a null key")
            return
        if out_of_order(self.context, record, "a foreign-key join"):
            return
        prefix = w.fk_prefix(self.fk_serde.serialize("", record.key))
        new = record.value.new
        data = None if new is None else self.value_serde.serialize("", new)
        with self.store.prefix_scan(prefix, _BYTES) as entries:
            subscribers = list(entries)
        for entry in subscribers:
            s = w.decode_subscription(entry.value.value)
            response = w.Response(s.hash, data, s.primary_partition)
            self.context.forward(Record(entry.key[len(prefix):], w.Framed(
                w.encode_response(response), s.primary_partition), record.timestamp,
                record.headers))


class ResponseJoinProcessor(Processor):
    """Left side again: joins a response whose hash is that of the left row as it is now
    (else a later change superseded it: dropped), for the result table."""

    def __init__(self, getter: Any, joiner: Callable[[Any, Any], Any], left_join: bool,
                 hash_topic: str, key_serde: Any, value_serde: Any, foreign_serde: Any):
        self.getter, self.joiner, self.left_join = getter, joiner, left_join
        self.hash_topic = hash_topic
        self.key_serde, self.value_serde = key_serde, value_serde
        self.foreign_serde = foreign_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.get = self.getter.bind(context)
        config = context.app_config()
        self.key_serde = _serde(self.key_serde, config, "key")
        self.value_serde = _serde(self.value_serde, config, "value")
        self.foreign_serde = _serde(self.foreign_serde, config, "value")
        self.hash_topic = _app_topic(context, self.hash_topic)

    def process(self, record: Record) -> None:
        r = w.decode_response(record.value)
        if r.version != w.RESPONSE_VERSION:
            raise _newer("response", r.version, w.RESPONSE_VERSION, self.context)
        key = self.key_serde.deserialize("", record.key)
        current, _ = self.get(key)
        current_hash = (None if current is None
                        else w.hash128(self.value_serde.serialize(self.hash_topic, current)))
        if current_hash != r.hash:
            record_dropped(self.context, "a foreign-key join drops a response to a left row "
                                         "that has changed since")
            return
        foreign = (None if r.foreign_value is None
                   else self.foreign_serde.deserialize("", r.foreign_value))
        result = None
        if foreign is not None or (self.left_join and current is not None):
            result = self.joiner(current, foreign)
        self.context.forward(Record(key, result, record.timestamp, record.headers))
