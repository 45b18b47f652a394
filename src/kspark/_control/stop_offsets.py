"""Stop offsets of an incremental batch run (KIP-95), kept in the application's metadata topic.

``<application.id>-kspark-metadata`` has one partition and is compacted. A batch run
(``autostop.at=eol``) starts by writing the read_committed end offset of every input
partition, then a *completed marker*; a run that ends cleanly appends a *finished marker*.
Records, as in KIP-95: key ``<topic>:<partition>`` with the stop offset as its value (decimal
text), and the marker key ``<application.id>`` with value ``0`` (completed) or ``1``
(finished). A topic or application id cannot contain ``:``, so keys never clash.

- Offsets count only when a completed marker follows them (all or nothing).
- A start that finds a completed, unfinished run resumes it: same stop offsets, even if new
  records arrived (a failure restart, or a run the user stopped).
- A start that finds a finished run (or none) tombstones what the topic holds, then writes
  new stop offsets and the completed marker.
- A streaming start (``autostop.at=none``) tombstones everything: the next batch run is new.

Only the application's one running instance writes (design brief, 8), so there is no race.

Example (needs a broker, so not run)::

    meta = StopOffsets("localhost:9092", "hourly-job")
    run = meta.read()
    stop = run.offsets if run.resumable else meta.begin_run(ends)
    ...
    meta.finish()
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


from kspark._graph.resources import metadata_topic
from kspark._kafka.factory import new_producer
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._kafka.admin import Admin
from kspark._kafka.clients import read_range
from kspark.config import declared_default
from kspark.errors import CorruptStateError, KSparkError

__all__ = ["StopOffsets", "RunState", "format_offsets", "COMPLETED", "FINISHED"]

TP = tuple[str, int]
COMPLETED, FINISHED = b"0", b"1"


@dataclass
class RunState:
    """What the metadata topic says about the last batch run."""

    offsets: dict[TP, int] = field(default_factory=dict)  # valid only if ``completed``
    completed: bool = False
    finished: bool = False
    # keys whose latest record is not a tombstone
    live_keys: set[bytes] = field(default_factory=set)

    @property
    def resumable(self) -> bool:
        """A run was started (its offsets are whole) and did not finish."""
        return self.completed and not self.finished

    @classmethod
    def replay(cls, app_id: str, records: list[tuple[bytes, bytes | None]],
               offsets: list[int] | None = None) -> "RunState":
        """The state after ``(key, value)`` records in log order (at ``offsets`` of the
        metadata topic, for errors). A record kspark could not have written is a
        CorruptStateError naming it.

        >>> s = RunState.replay("app", [(b"a:0", b"55"), (b"app", b"0")])
        >>> s.resumable, s.offsets
        (True, {('a', 0): 55})
        >>> RunState.replay("app", [(b"a:0", b"55"), (b"app", b"0"), (b"app", b"1")]).resumable
        False
        >>> RunState.replay("app", [(b"a:0", b"55"), (b"app", b"0"), (b"a:0", None),
        ...                         (b"app", None), (b"a:0", b"90")]).completed
        False
        >>> RunState.replay("app", [(b"a:0", b"x")], [7])
        Traceback (most recent call last):
        ...
        kspark.errors.CorruptStateError: the metadata topic 'app-kspark-metadata' ...
        """
        s = cls()
        marker = app_id.encode()
        for i, (key, value) in enumerate(records):
            problem = _problem(key, value, marker)
            if problem:
                where = f" offset {offsets[i]}" if offsets is not None else f" record {i}"
                raise CorruptStateError(
                    f"the metadata topic {metadata_topic(app_id)!r} partition 0{where} holds a "
                    f"record kspark did not write ({problem}): the stop offsets of application "
                    f"{app_id!r} cannot be trusted. Delete that topic (kafka-topics --delete "
                    f"--topic {metadata_topic(app_id)}, or a full kspark reset) so that the next "
                    "batch run begins anew")
            if value is None:
                s.live_keys.discard(key)
            else:
                s.live_keys.add(key)
            if key == marker:
                s.completed = value in (COMPLETED, FINISHED)
                s.finished = value == FINISHED
            elif value is None:
                s.offsets.pop(_tp(key), None)
            else:
                s.offsets[_tp(key)] = int(value)
        if not s.completed:
            s.offsets = {}
        return s


def format_offsets(offsets: Mapping[TP, int] | None) -> str:
    """``orders[0]=120 orders[1]=98``, for logs and summaries.

    >>> format_offsets({("orders", 1): 98, ("orders", 0): 120})
    'orders[0]=120 orders[1]=98'
    """
    return " ".join(f"{t}[{p}]={o}" for (t, p), o in sorted((offsets or {}).items())) or "(none)"


def _tp(key: bytes) -> TP:
    topic, _, partition = key.decode().rpartition(":")
    return topic, int(partition)


def _problem(key: bytes | None, value: bytes | None, marker: bytes) -> str:
    """Why ``(key, value)`` is not a record of the metadata topic ('' if it is one)."""
    if key is None:
        return "a null key"
    if key == marker:
        return "" if value in (None, COMPLETED, FINISHED) else f"marker value {value[:20]!r}"
    try:
        topic, sep, partition = key.decode().rpartition(":")
    except UnicodeDecodeError:
        return f"key {key[:40]!r} is not UTF-8"
    if not sep or not topic or not partition.isdigit() or len(partition) > 10:
        return f"key {key[:40]!r} is not <topic>:<partition>"
    if value is not None and (not value.isdigit() or len(value) > 19):
        return f"the offset {value[:20]!r} of key {key[:40]!r} is not a decimal number"
    return ""


class StopOffsets:
    """Reads and writes one application's metadata topic."""

    def __init__(self, where: ClientSettings | str, app_id: str,
                 timeout_ms: int = declared_default("request.timeout.ms"),
                 replication_factor: int = declared_default("replication.factor")):
        self.replication_factor = replication_factor
        self.settings = as_settings(where)
        self.bootstrap, self.app_id, self.timeout_ms = self.settings.bootstrap, app_id, timeout_ms
        self.topic = metadata_topic(app_id)
        self._admin = Admin(self.settings, timeout_ms)

    def exists(self) -> bool:
        return self.topic in self._admin.partition_counts()

    def create(self) -> None:
        """Create the topic (one partition, compacted) if it does not exist."""
        self._admin.create_topics({self.topic: 1}, {"cleanup.policy": "compact"},
                                  replication_factor=self.replication_factor)

    def read(self) -> RunState:
        """Read the whole topic, from its first offset to its end."""
        if not self.exists():
            return RunState()
        tp = (self.topic, 0)
        start = self._admin.end_offsets([tp], earliest=True)[tp]
        end = self._admin.end_offsets([tp])[tp]
        records: list[tuple[bytes, bytes | None]] = []
        offsets: list[int] = []
        for msgs in read_range(self.settings, self.topic, 0, start, end, self.timeout_ms):
            records.extend((m.key(), m.value()) for m in msgs)
            offsets.extend(m.offset() for m in msgs)
        return RunState.replay(self.app_id, records, offsets)

    def begin_run(self, previous: RunState, ends: Mapping[TP, int]) -> dict[TP, int]:
        """Tombstone the previous run's records, then write ``ends`` and the completed marker."""
        self.create()
        writes: list[tuple[bytes, bytes | None]] = [(k, None) for k in sorted(previous.live_keys)]
        writes += [(f"{t}:{p}".encode(), str(o).encode()) for (t, p), o in sorted(ends.items())]
        writes.append((self.app_id.encode(), COMPLETED))
        self._write(writes)
        return dict(ends)

    def finish(self) -> None:
        """The run ended cleanly: append the finished marker."""
        self._write([(self.app_id.encode(), FINISHED)])

    def delete(self, state: RunState) -> int:
        """Tombstone every live record (streaming start, or ``kspark reset
        --delete-stopoffsets``); the number of tombstones written."""
        if not state.live_keys:
            return 0
        self._write([(k, None) for k in sorted(state.live_keys)])
        return len(state.live_keys)

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        errors: list[Any] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)

        # In order, one request at a time: a retry cannot reorder a tombstone and a new
        # value of one key, and may only repeat records, which replaying the compacted topic
        # takes as they come. (An idempotent producer costs 0.5 s more per start.)
        producer = new_producer(self.settings.conf("producer", "metadata", {
            "acks": "all", "max.in.flight.requests.per.connection": 1}), "metadata")
        for key, value in records:
            producer.produce(self.topic, value=value, key=key, partition=0, on_delivery=delivered)
        started = time.monotonic()
        left = producer.flush(self.timeout_ms / 1000)
        for err in errors:
            denied = authorization_for(self.settings, err.code(), err.str(),
                                       {"TOPIC": (self.topic, "WRITE", False)})
            if denied is not None:
                raise denied
        if left:
            check_client(self.settings, producer, started - 1)
        if left or errors:
            why = errors[0].str() if errors else f"{left} record(s) undelivered"
            raise KSparkError(
                f"could not write the stop offsets of application {self.app_id!r} to topic "
                f"{self.topic!r}: {why}; "
                "check the broker and start again (the run's offsets are valid only once "
                "complete)")
