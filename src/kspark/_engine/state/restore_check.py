"""Check changelog records while a store is restored, for stores whose values kspark itself
encodes (suppress and grace buffers, unnamed foreign-key join results, delayed records).

A restore copies changelog bytes straight into the store below its layers; such a store's
values are decoded later, where the record they came from is no longer known. So each one
is parsed as it is copied, and one that does not parse fails the restore with an error
naming the task, the store and the record (topic, partition, offset). Stores of your
serdes are not checked here: their values are read only when used, as in Kafka Streams.

Example:
    >>> from kspark.state import Stores
    >>> from kspark import Serdes
    >>> store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"),
    ...     Serdes.String(), Serdes.Long()).with_logging_disabled().build()
    >>> restore_checker(store, "0_0") is None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark._engine.documents import Invalid
from kspark._engine.state.delayed import SEQ_KEY, DelayedRecordsStore, parse_entry, parse_sequence
from kspark._engine.state.encoding import MalformedError
from kspark._engine.state.internal_serdes import RESET_ADVICE, InternalSerde
from kspark.errors import CorruptStateError

__all__ = ["restore_checker", "Check"]

Check = Callable[[bytes | None, bytes | None, str, int, int], None]


def _parser(store: Any) -> tuple[str, Callable[[bytes | None, bytes], Any]] | None:
    """What the store holds and a parse of one (key, value), raising MalformedError or Invalid."""
    if isinstance(store, DelayedRecordsStore):
        return "delayed records", lambda k, v: parse_sequence(v) if k == SEQ_KEY else parse_entry(v)
    serde = getattr(store, "value_serde", None)
    if isinstance(serde, InternalSerde):
        return serde.what, lambda k, v: serde.parse(store.name(), v)
    inner = getattr(serde, "inner", None)
    if isinstance(inner, InternalSerde):  # a timestamped store: 8 bytes of timestamp first

        def timestamped(k: bytes | None, v: bytes) -> Any:
            if len(v) < 8:
                raise MalformedError(f"{len(v)} bytes, too short for its 8-byte timestamp")
            return inner.parse(store.name(), v[8:])

        return inner.what, timestamped
    return None


def restore_checker(store: Any, task_id: str) -> Check | None:
    """``check(key, value, topic, partition, offset)`` for one changelog record of
    ``store`` (a CorruptStateError if it does not parse), or None if the store's values
    are not kspark's own."""
    found = _parser(store)
    if found is None:
        return None
    what, parse = found
    name = store.name()

    def check(key: bytes | None, value: bytes | None, topic: str, partition: int,
              offset: int) -> None:
        if value is None:
            return
        try:
            parse(key, value)
        except (MalformedError, Invalid) as e:
            why = str(e)
            if value[:1] == b"\x80" and "pickle" not in why:  # behind a timestamp, say
                why += "; the record is a Python pickle, which kspark no longer reads"
            raise CorruptStateError(
                f"task {task_id}: cannot restore store {name!r} ({what}): the record at "
                f"offset {offset} of changelog topic {topic!r} partition {partition} is not in "
                f"kspark's internal format ({why}); kspark never runs such data. The changelog "
                f"was damaged or written by something other than kspark: {RESET_ADVICE}"
            ) from None

    return check
