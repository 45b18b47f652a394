"""The task runtime's port (``_host/port.py``) over confluent-kafka: the one door a hosted task
has to the cluster (its clients come from ``_kafka``: the producer, the transactions and the
group reader are kept per worker process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._host.context import HostContext
from kspark._host.port import Output
from kspark._host.restore import (checkpoint_task, invalidate_checkpoint,
                                  logged_partitions, restore_task)
from kspark._kafka.clients import commit_offsets, task_producer
from kspark._graph.resources import progress_topic
from kspark._kafka.transactions import (Marker, TaskTransactions, encode_marker,
                                        read_marker, task_transactions)
from kspark._worker import registry

__all__ = ["KafkaTaskIO", "DISCARD", "kafka_task_io"]

TP = tuple[str, int]


class _Discard:
    """Where a replayed batch's Kafka writes go: an earlier attempt committed them."""

    sent = 0

    def send(self, topic, key, value, timestamp, headers, partition) -> None:
        pass

    def send_many(self, topic, records) -> None:
        pass

    def flush(self) -> None:
        pass


DISCARD = _Discard()


class KafkaTaskIO:
    """The port for task ``task_id`` of ``ctx`` (its marker partition: ``marker_partition``
    of the application's progress topic)."""

    def __init__(self, ctx: HostContext, task_id: str, marker_partition: int):
        self.ctx, self.task_id = ctx, task_id
        self.marker_tp = (progress_topic(ctx.app_id), marker_partition)
        self.marker: Marker | None = None  # the task's last commit, as open_output read it

    def open_output(self, batch: tuple[str, int] | None, fence: bool) -> Output:
        ctx = self.ctx
        if ctx.eos:
            if fence:  # a new producer: init_transactions ends every older attempt's
                self._forget_kept()
            tx, marker = task_transactions(ctx.settings, ctx.app_id, self.task_id,
                                           self.marker_tp, batch, begin=False)
            self.marker = marker
            if tx is None:
                return Output(marker, DISCARD, None, replay=True)
            return Output(marker, tx.producer, tx)
        marker = self.marker = read_marker(ctx.settings, ctx.app_id, self.task_id,
                                           self.marker_tp)
        producer = task_producer(ctx.settings, f"{ctx.app_id}-{self.task_id}-producer",
                                 skip_failed=ctx.skip_failed)
        return Output(marker, producer)

    def _forget_kept(self) -> None:
        ctx = self.ctx
        key = (ctx.app_id, ctx.settings, self.task_id, self.marker_tp)
        kept: TaskTransactions | None = registry().pop("transactions", key)
        if kept is not None:
            kept.close()

    def commit_offsets(self, inputs: Mapping[TP, int], marker: Marker) -> None:
        commit_offsets(self.ctx.settings, self.ctx.app_id, inputs,
                       (self.marker_tp, encode_marker(marker)))

    def changelog_ends(self, task: Any) -> dict[TP, int]:
        parts = logged_partitions(task, self.ctx.builders)
        return self.ctx.admin().end_offsets(parts.values()) if parts else {}

    def restore(self, task: Any, batch: tuple[str, int] | None, saved: Any, again: bool,
                host: Any) -> dict[TP, int]:
        m = self.marker  # what its last commit's run wrote after that commit is skipped
        return restore_task(task, self.ctx.builders, batch, saved, again, host=host,
                            settings=self.ctx.settings,
                            uncommitted=None if m is None else (m.query, m.batch + 1))

    def invalidate_checkpoint(self, task: Any) -> None:
        invalidate_checkpoint(task)

    def checkpoint(self, task: Any, host: Any) -> dict[TP, int]:
        return checkpoint_task(task, self.ctx.builders, host=host, settings=self.ctx.settings)


def kafka_task_io(ctx: HostContext, partition: int) -> KafkaTaskIO:
    """The port of task ``partition`` of ``ctx``'s sub-topology (the one way both drivers'
    tasks reach Kafka: ``task_manager.TaskManager`` hands it to each task it makes)."""
    return KafkaTaskIO(ctx, f"{ctx.plan.stage}_{partition}", ctx.plan.first_marker + partition)
