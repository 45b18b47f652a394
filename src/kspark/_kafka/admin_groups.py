"""The consumer-group half of :class:`~kspark._kafka.admin.Admin`: read, commit and delete
a group's offsets (``kspark reset`` and the tests use them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kspark._kafka.retry import Stall, transient
from kspark.errors import KSparkError

__all__ = ["GroupAdmin"]


class GroupAdmin:
    """Mixed into Admin, whose client (``_admin``), timeout, ``_denied``, ``_stall`` and
    ``renew`` it uses."""

    _admin: Any
    timeout_s: float
    _denied: Callable[[int, str, str, str, str], None]
    _stall: Callable[[str, float | None], Stall]
    renew: Callable[[], None]

    def group_offsets(self, group: str,
                      patience_s: float | None = None) -> dict[tuple[str, int], int]:
        """The offsets consumer group ``group`` committed ({} if it has none). While the
        group coordinator moves or a broker restarts, asks again for ``patience_s``
        (default ``task.timeout.ms``): an unanswered request is never read as "no offsets"."""
        from concurrent.futures import TimeoutError as FutureTimeout

        from confluent_kafka import ConsumerGroupTopicPartitions

        stall: Stall | None = None
        while True:
            try:
                (fut,) = self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s).values()
                res = fut.result(timeout=self.timeout_s + 1)
                return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions
                        if tp.offset >= 0}
            except KafkaException as e:  # no such group yet: no offsets; refused: say so
                err = e.args[0]
                self._denied(err.code(), err.str(), "GROUP", group, "DESCRIBE")
                if not transient(err):
                    return {}
                failed: Any = err
            except FutureTimeout:
                failed = KafkaError(KafkaError._TIMED_OUT, "no answer")
            if failed.code() == KafkaError._TIMED_OUT:
                self.renew()
            stall = stall or self._stall(f"reading consumer group {group!r}'s offsets",
                                         patience_s)
            stall.wait(failed)

    def delete_group(self, group: str) -> None:
        """Delete an empty consumer group and its committed offsets."""
        (fut,) = self._admin.delete_consumer_groups(
            [group], request_timeout=self.timeout_s).values()
        try:
            fut.result(timeout=self.timeout_s)
        except KafkaException as e:
            self._denied(e.args[0].code(), e.args[0].str(), "GROUP", group, "DELETE")
            raise KSparkError(
                f"could not delete consumer group {group!r}: {e.args[0].str()}") from None

    def commit_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``{(topic, partition): offset}`` for ``group`` (which must have no members)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        parts = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        futures = self._admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, parts)], request_timeout=self.timeout_s)
        for fut in futures.values():
            try:
                fut.result(timeout=self.timeout_s)
            except KafkaException as e:
                self._denied(e.args[0].code(), e.args[0].str(), "GROUP", group, "READ")
                raise KSparkError(f"could not commit offsets for consumer group {group!r}: "
                                  f"{e.args[0].str()}") from None

