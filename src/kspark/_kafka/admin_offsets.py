"""The offsets half of :class:`~kspark._kafka.admin.Admin`: end offsets (read_committed or
not, settled), offsets by time, each retried while a broker restarts or a leader moves."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kspark._kafka.retry import Stall, not_yet_visible, transient
from kspark.errors import KSparkError

__all__ = ["OffsetAdmin", "MISSING_GRACE_S"]

# A new (or just recreated) topic's leader may not be known yet, or the broker's metadata
# lags the request's leader epoch: Java's clients retry these (InvalidMetadataException).
_NO_LEADER_YET = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH)

# A topic the cluster says it lacks while offsets are read: deleted and being created again
# (KIP-406's global topic), or created a moment ago; retried this long, then an error.
MISSING_GRACE_S = 10.0


class OffsetAdmin:
    """Mixed into Admin, whose client (``_admin``), timeout, ``bootstrap``, ``settings``,
    ``_denied`` and ``renew`` it uses."""

    _admin: Any
    timeout_s: float
    bootstrap: str
    settings: Any
    _denied: Callable[[int, str, str, str, str], None]
    renew: Callable[[], None]

    def settled_end_offsets(self, partitions: Iterable[tuple[str, int]],
                            wait_s: float = 5.0) -> dict[tuple[str, int], int]:
        """The read_committed ends once every transaction written so far is settled: a
        committed transaction's markers are written after ``commit_transaction`` returns,
        and until then the last stable offset stays at the transaction's first record (a
        checkpoint taken then would have the next restore read the whole transaction
        again). Waits up to ``wait_s`` for the last stable offset to reach the end written
        so far, then returns what it is (an older end is safe, only slower to restore from).
        """
        parts = sorted(set(partitions))
        written = self.end_offsets(parts, committed=False)
        deadline = time.monotonic() + wait_s
        while True:
            ends = self.end_offsets(parts)
            if all(ends[tp] >= written[tp] for tp in parts) or time.monotonic() >= deadline:
                return ends
            time.sleep(0.005)

    def end_offsets(self, partitions: Iterable[tuple[str, int]],
                    earliest: bool = False, committed: bool = True,
                    patience_s: float | None = None) -> dict[tuple[str, int], int]:
        """The read_committed end (last stable offset) of each topic-partition, or its start
        (``committed=False``: the end of what is written, committed or not: the high
        watermark).

        While a broker restarts, or a leader moves, the answer is an error or no offset at
        all (-1001): that is retried, ``retry.backoff.ms`` apart, for ``patience_s``
        (default: ``task.timeout.ms``), then a TaskTimeoutError names the partition."""
        from confluent_kafka.admin import OffsetSpec

        spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
        return self._list_offsets(partitions, spec, committed, patience_s)

    def offsets_for_time(self, partitions: Iterable[tuple[str, int]], timestamp_ms: int
                         ) -> dict[tuple[str, int], int | None]:
        """The first offset of each topic-partition whose record's timestamp is at or after
        ``timestamp_ms`` (read_committed; None: no record is that recent), as Kafka's
        ``offsetsForTimes``."""
        from confluent_kafka.admin import OffsetSpec

        found = self._list_offsets(partitions, OffsetSpec.for_timestamp(timestamp_ms), True,
                                   None, none_ok=True)
        return {tp: offset if offset >= 0 else None for tp, offset in found.items()}

    def newest_timestamp(self, partitions: Iterable[tuple[str, int]]) -> int | None:
        """The largest record timestamp in ``partitions`` (KIP-734's max timestamp; None:
        they hold no record)."""
        from confluent_kafka.admin import OffsetSpec

        found = self._list_offsets(partitions, OffsetSpec.max_timestamp(), True, None,
                                   none_ok=True, value="timestamp")
        return max((ts for ts in found.values() if ts >= 0), default=None)

    def _list_offsets(self, partitions: Iterable[tuple[str, int]], spec: Any, committed: bool,
                      patience_s: float | None, none_ok: bool = False, value: str = "offset"
                      ) -> dict[tuple[str, int], int]:
        """ListOffsets of ``spec`` for each partition, retried as :meth:`end_offsets` says
        (``none_ok``: -1, "no such record" for a timestamp, is an answer); ``value``: the
        answer's offset or its record's timestamp."""
        from confluent_kafka import IsolationLevel

        isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        todo = {(t, p) for t, p in partitions}
        out: dict[tuple[str, int], int] = {}
        stall: Stall | None = None
        missing: dict[str, float] = {}  # topics the cluster said it lacks, since when
        while todo:
            req = {TopicPartition(t, p): spec for t, p in todo}
            res = self._admin.list_offsets(req, isolation_level=isolation,
                                           request_timeout=self.timeout_s)
            failed: Any = None
            for tp, fut in res.items():
                try:
                    info = fut.result(timeout=self.timeout_s + 1)
                    offset = info.offset
                except KafkaException as e:
                    failed = self._offset_error(tp, e.args[0], missing)
                    continue
                except FutureTimeout:  # no answer at all: a fresh client next time
                    failed = KafkaError(KafkaError._TIMED_OUT, "no answer")
                    self.renew()
                    break
                if offset >= 0 or (none_ok and offset == -1):  # -1001: not known yet
                    out[(tp.topic, tp.partition)] = getattr(info, value)
                    todo.discard((tp.topic, tp.partition))
                else:
                    failed = KafkaError(KafkaError.OFFSET_NOT_AVAILABLE,
                                        f"no offset yet for partition {tp.partition} ({offset})")
            if todo:
                t, p = min(todo)
                stall = stall or self._stall(f"reading the end offset of topic {t!r} "
                                             f"partition {p}", patience_s)
                stall.wait(failed)
        return out

    def _offset_error(self, tp: TopicPartition, err: KafkaError,
                      missing: dict[str, float]) -> KafkaError:
        """``err`` if a retry may help (a leader moving, the broker restarting, a topic
        created a moment ago or being created again: absent for at most MISSING_GRACE_S);
        raises otherwise (a missing ACL, a topic that stays away, ...)."""
        self._denied(err.code(), err.str(), "TOPIC", tp.topic, "DESCRIBE")
        if transient(err) or err.code() in _NO_LEADER_YET or not_yet_visible(err):
            if self._refresh(tp.topic):
                missing.pop(tp.topic, None)
                return err
            since = missing.setdefault(tp.topic, time.monotonic())
            if time.monotonic() - since < MISSING_GRACE_S:
                return err
            raise KSparkError(f"cannot read the end offset of topic {tp.topic!r} partition "
                              f"{tp.partition} at {self.bootstrap}: the topic does not exist "
                              f"(for {MISSING_GRACE_S:.0f} s of retries; {err.str()}); create "
                              f"it, or check the name") from None
        raise KSparkError(f"cannot read the end offset of topic {tp.topic!r} partition "
                          f"{tp.partition} at {self.bootstrap}: {err.str()}") from None

    def _refresh(self, topic: str) -> bool:
        """Ask the cluster for ``topic``'s metadata: librdkafka keeps a leader and its epoch
        from before a broker restarted (its requests then fail with FENCED_LEADER_EPOCH
        until the metadata is asked again), and says "no leaders found" (_NOENT) both while
        the broker is down and for a topic that does not exist. False: the cluster answered
        and the topic does not exist (not worth retrying)."""
        try:
            md = self._admin.list_topics(topic=topic, timeout=min(2.0, self.timeout_s))
        except KafkaException:
            return True  # no answer: the broker is down or restarting
        t = md.topics.get(topic)
        return t is not None and (t.error is None
                                  or t.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART)

    def _stall(self, what: str, patience_s: float | None) -> Stall:
        stall = Stall.of(what, self.settings)
        if patience_s is not None:
            stall.timeout_ms = int(patience_s * 1000)
        return stall
