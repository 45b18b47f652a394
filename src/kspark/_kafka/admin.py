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
from kspark._kafka.admin_offsets import OffsetAdmin
from kspark._kafka.factory import new_admin
from kspark._kafka.retry import Stall, transient
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._config_defaults import default_of
from kspark.errors import (
    BrokerUnreachableError,
    KSparkError,
    MissingSinkTopicError,
    MissingSourceTopicError,
    TransactionsUnavailableError,
)

__all__ = ["Admin"]

log = logging.getLogger("kspark")
_RETIRED: list[Any] = []  # clients replaced by renew()


class Admin(GroupAdmin, OffsetAdmin):
    """A small wrapper over confluent-kafka's AdminClient whose errors name what failed:
    an unreachable cluster, a refused login or certificate, or a missing ACL.

    ``where`` is a :class:`~kspark._kafka.settings.ClientSettings` (or a bare bootstrap
    address for an unsecured cluster).
    """

    def __init__(self, where: ClientSettings | str,
                 timeout_ms: int = default_of("request.timeout.ms"),
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
