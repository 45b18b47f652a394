"""Admin helpers: reach the cluster, check topics, create and delete them."""

from __future__ import annotations

import logging
import time
from concurrent.futures import TimeoutError as FutureTimeout
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from kspark._kafka.admin_groups import GroupAdmin
from kspark._kafka.factory import new_admin
from kspark._kafka.retry import Stall, not_yet_visible, transient
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark.config import declared_default
from kspark.errors import (
    BrokerUnreachableError,
    KSparkError,
    MissingSinkTopicError,
    MissingSourceTopicError,
    TransactionsUnavailableError,
)

__all__ = ["Admin"]

log = logging.getLogger("kspark")
# A new (or just recreated) topic's leader may not be known yet, or the broker's metadata
# lags the request's leader epoch: Java's clients retry these (InvalidMetadataException).
# A topic the cluster says it lacks while offsets are read: deleted and being created again
# (KIP-406's global topic), or created a moment ago; retried this long, then an error.
MISSING_GRACE_S = 10.0

_NO_LEADER_YET = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH)

_RETIRED: list[Any] = []  # clients replaced by renew()


class Admin(GroupAdmin):
    """A small wrapper over confluent-kafka's AdminClient whose errors name what failed:
    an unreachable cluster, a refused login or certificate, or a missing ACL.

    ``where`` is a :class:`~kspark._kafka.settings.ClientSettings` (or a bare bootstrap
    address for an unsecured cluster).
    """

    def __init__(self, where: ClientSettings | str,
                 timeout_ms: int = declared_default("request.timeout.ms"),
                 extra: Mapping[str, Any] | None = None):
        self.settings = as_settings(where)
        self.bootstrap = self.settings.bootstrap
        self.timeout_s = timeout_ms / 1000
        conf = self.settings.conf("admin", "admin", {"socket.timeout.ms": timeout_ms})
        conf.update(extra or {})
        self._conf = conf
        self._admin = new_admin(conf, "admin")

    def renew(self) -> None:
        """A fresh client: after a broker restart librdkafka may keep asking a coordinator
        it cached and never find the new one (librdkafka issues 5456 and 5511)."""
        _RETIRED.append(self._admin)  # kept: destroying a client with requests in flight
        del _RETIRED[:-20]  # can crash librdkafka; the oldest go once 20 are kept
        self._admin = new_admin(self._conf, "admin")

    def _denied(self, code: int, detail: str, rtype: str, name: str, op: str) -> None:
        """Raise an AuthorizationError if ``code`` is one, for ``op`` on ``name``."""
        error = authorization_for(self.settings, code, detail, {rtype: (name, op, False)})
        if error is not None:
            raise error

    def partition_counts(self, patience_s: float | None = None) -> dict[str, int]:
        """Every topic's partition count (of the topics this principal may DESCRIBE);
        BrokerUnreachableError when no broker answers within ``request.timeout.ms`` (at
        start: is the address right?), or the security error that kept kspark out
        (authentication, certificate). A running application passes ``patience_s``
        (``task.timeout.ms``): a broker restart is ridden through, and a longer outage is a
        TaskTimeoutError."""
        started = time.monotonic()
        limit = max(self.timeout_s, patience_s or 0.0)
        while True:  # in short steps: a refused login or certificate is named at once
            step = min(2.0, max(0.1, started + limit - time.monotonic()))
            try:
                md = self._admin.list_topics(timeout=step)
                break
            except KafkaException as e:
                check_client(self.settings, self._admin, started)
                if time.monotonic() - started < limit:
                    continue
                cause = e.args[0] if e.args else e
            if patience_s:
                stall = self._stall("listing the cluster's topics", patience_s)
                stall.began = started
                raise stall.timeout_error(str(cause))
            raise BrokerUnreachableError(
                f"no Kafka broker answered at bootstrap.servers={self.bootstrap!r} within "
                f"{self.timeout_s:g}s ({cause}). Is the broker running "
                "(kspark broker status) and is the address right? If the cluster is secured, "
                "set security.protocol (and sasl.*/ssl.*) as docs/security.md shows"
            ) from None
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def _check_describe(self, topics: Iterable[str], op: str) -> None:
        """A topic missing from the listing may only be hidden: ask for it by name, and
        raise an AuthorizationError if DESCRIBE on it is denied."""
        for topic in topics:
            try:
                md = self._admin.list_topics(topic=topic, timeout=self.timeout_s)
            except KafkaException:
                continue
            t = md.topics.get(topic)
            if t is not None and t.error is not None:
                self._denied(t.error.code(), t.error.str(), "TOPIC", topic, op)

    def check_topics(self, sources: Iterable[str], sinks: Iterable[str]) -> dict[str, int]:
        """Partition counts of the sources; missing source or sink topics raise, naming them."""
        counts = self.partition_counts()
        missing = [t for t in sources if t not in counts]
        self._check_describe(missing, "DESCRIBE")
        if missing:
            raise MissingSourceTopicError(
                f"source topic(s) {', '.join(repr(t) for t in missing)} not found at "
                f"{self.bootstrap}; create them before starting the application"
            )
        missing = [t for t in sinks if t not in counts]
        self._check_describe(missing, "DESCRIBE")
        if missing:
            raise MissingSinkTopicError(
                f"sink topic(s) {', '.join(repr(t) for t in missing)} not found at "
                f"{self.bootstrap}; create them before starting the application"
            )
        return {t: counts[t] for t in sources}

    def create_topics(self, topics: Mapping[str, int], config: Mapping[str, str] | None = None,
                      exist_ok: bool = True, replication_factor: int = -1) -> None:
        """Create ``{topic: partitions}`` with ``replication_factor`` (-1: the brokers'
        ``default.replication.factor``)."""
        new = [NewTopic(t, n, replication_factor, config=dict(config or {}))
               for t, n in topics.items()]
        for topic, fut in self._admin.create_topics(new, operation_timeout=self.timeout_s).items():
            try:
                fut.result(timeout=self.timeout_s)
            except KafkaException as e:
                if exist_ok and e.args[0].name() == "TOPIC_ALREADY_EXISTS":
                    continue
                self._denied(e.args[0].code(), e.args[0].str(), "TOPIC", topic, "CREATE")
                raise KSparkError(f"could not create topic {topic!r}: {e.args[0].str()}") from None
        self._wait_visible(topics)

    def delete_topics(self, topics: Iterable[str]) -> None:
        """Delete topics that exist (missing ones are ignored) and wait until they are gone."""
        existing = set(self.partition_counts())
        todo = [t for t in topics if t in existing]
        if not todo:
            return
        for topic, fut in self._admin.delete_topics(todo, operation_timeout=self.timeout_s).items():
            try:
                fut.result(timeout=self.timeout_s)
            except KafkaException as e:
                self._denied(e.args[0].code(), e.args[0].str(), "TOPIC", topic, "DELETE")
                raise KSparkError(f"could not delete topic {topic!r}: {e.args[0].str()}") from None
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline and set(todo) & set(self.partition_counts()):
            time.sleep(0.2)

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

    def _list_offsets(self, partitions: Iterable[tuple[str, int]], spec: Any, committed: bool,
                      patience_s: float | None, none_ok: bool = False
                      ) -> dict[tuple[str, int], int]:
        """ListOffsets of ``spec`` for each partition, retried as :meth:`end_offsets` says
        (``none_ok``: -1, "no such record" for a timestamp, is an answer)."""
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
                    offset = fut.result(timeout=self.timeout_s + 1).offset
                except KafkaException as e:
                    failed = self._offset_error(tp, e.args[0], missing)
                    continue
                except FutureTimeout:  # no answer at all: a fresh client next time
                    failed = KafkaError(KafkaError._TIMED_OUT, "no answer")
                    self.renew()
                    break
                if offset >= 0 or (none_ok and offset == -1):  # -1001: not known yet
                    out[(tp.topic, tp.partition)] = offset
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

    def delete_records(self, before: Mapping[tuple[str, int], int]) -> None:
        """Delete the records before ``{(topic, partition): offset}`` (Kafka Streams purges
        its repartition topics so after a commit)."""
        if not before:
            return
        req = [TopicPartition(t, p, o) for (t, p), o in sorted(before.items())]
        for tp, fut in self._admin.delete_records(
                req, request_timeout=self.timeout_s, operation_timeout=self.timeout_s).items():
            try:
                fut.result(timeout=self.timeout_s + 1)
            except FutureTimeout:
                raise KSparkError(f"could not purge topic {tp.topic!r} partition "
                                  f"{tp.partition}: no answer within {self.timeout_s:g} s"
                                  ) from None
            except KafkaException as e:
                self._denied(e.args[0].code(), e.args[0].str(), "TOPIC", tp.topic, "DELETE")
                raise KSparkError(f"could not purge topic {tp.topic!r} partition {tp.partition} "
                                  f"before offset {tp.offset}: {e.args[0].str()}") from None

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each existing topic's id (a topic deleted and created again gets a new one)."""
        from confluent_kafka import TopicCollection

        todo = set(topics)
        out: dict[str, str] = {}
        stall: Stall | None = None
        while todo:  # a topic not answered for (a broker restarting) is asked again
            futures = self._admin.describe_topics(TopicCollection(sorted(todo)),
                                                  request_timeout=self.timeout_s)
            failed: Any = None
            for name, fut in futures.items():
                try:
                    out[name] = str(fut.result(timeout=self.timeout_s + 1).topic_id)
                except KafkaException as e:
                    if not transient(e.args[0]):
                        todo.discard(name)  # missing: callers compare offsets and see it
                        continue
                    failed = e.args[0]
                    continue
                except FutureTimeout:
                    failed = KafkaError(KafkaError._TIMED_OUT, "no answer")
                    continue
                todo.discard(name)
            if todo:
                stall = stall or self._stall(f"describing topic {min(todo)!r}", None)
                stall.wait(failed)
        return out

    def topic_config(self, topic: str, key: str) -> str | None:
        """One config value of ``topic`` (None if it cannot be read)."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        res = ConfigResource(ResourceType.TOPIC, topic)
        try:
            (fut,) = self._admin.describe_configs([res], request_timeout=self.timeout_s).values()
            entry = fut.result(timeout=self.timeout_s).get(key)
        except KafkaException:
            return None
        return None if entry is None else entry.value

    def max_message_bytes(self, topics: Iterable[str]) -> int | None:
        """The largest ``max.message.bytes`` among ``topics`` (None: none could be read; a
        topic whose config cannot be read is logged and left out)."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        sizes = []
        for topic in topics:  # one request per topic: batched answers failed to parse at times
            res = ConfigResource(ResourceType.TOPIC, topic)
            try:
                (fut,) = self._admin.describe_configs(
                    [res], request_timeout=self.timeout_s).values()
                entry = fut.result(timeout=self.timeout_s).get("max.message.bytes")
            except KafkaException as e:
                log.warning("cannot read max.message.bytes of topic %r (%s); the producer keeps "
                            "its own message.max.bytes for it", topic, e.args[0].str())
                continue
            if entry is not None and entry.value is not None:
                sizes.append(int(entry.value))
        return max(sizes, default=None)

    def check_transactions(self) -> None:
        """Exactly-once needs transactions: the transaction state log must fit on the live
        brokers. Raises TransactionsUnavailableError naming the broker setting otherwise."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        try:
            nodes = self._admin.describe_cluster(request_timeout=self.timeout_s).result(
                timeout=self.timeout_s).nodes
            resource = ConfigResource(ResourceType.BROKER, str(nodes[0].id))
            (fut,) = self._admin.describe_configs([resource],
                                                  request_timeout=self.timeout_s).values()
            configs = fut.result(timeout=self.timeout_s)
        except KafkaException as e:
            if e.args[0].code() in (KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                                    KafkaError.TOPIC_AUTHORIZATION_FAILED):
                log.warning("cannot check the brokers' transaction settings (%s: %s may not "
                            "describe the cluster or its configs, which an application does "
                            "not need); exactly-once starts without the check",
                            e.args[0].str(), self.settings.principal())
                return
            check_client(self.settings, self._admin, time.monotonic() - self.timeout_s)
            raise BrokerUnreachableError(f"cannot describe the cluster at {self.bootstrap}: "
                                         f"{e.args[0].str()}") from None
        keys = ["transaction.state.log.min.isr"]
        if "__transaction_state" not in self.partition_counts():  # made at the first use
            keys.insert(0, "transaction.state.log.replication.factor")
        for key in keys:  # (a broker down for a rolling restart leaves min.isr enough)
            entry = configs.get(key)
            if entry is not None and entry.value is not None and int(entry.value) > len(nodes):
                raise TransactionsUnavailableError(
                    f"processing.guarantee=exactly_once_v2 needs Kafka transactions, but the "
                    f"brokers at {self.bootstrap} have {key}={entry.value} and only "
                    f"{len(nodes)} broker(s) are live, so no transaction can start. Set {key} "
                    f"to at most {len(nodes)} on the brokers (a single-node cluster needs 1), "
                    "or use processing.guarantee=at_least_once")

    def _wait_visible(self, topics: Mapping[str, int]) -> None:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            counts = self.partition_counts()
            if all(counts.get(t) == n for t, n in topics.items()):
                return
            time.sleep(0.1)
