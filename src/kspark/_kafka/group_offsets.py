"""The application's consumer group: a worker's group reader, committing a task's input
offsets (with its marker as metadata) and reading what the group has committed.

Example (needs a broker, so not run as a doctest)::

    commit_offsets(config, "app", {("orders", 0): 120}, marker=(("orders", 0), encoded))
    committed_offsets(config, "app", [("orders", 0)])   # {("orders", 0): 120}
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kspark._kafka.factory import new_consumer
from kspark._kafka.retry import Stall, transient
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._worker import registry
from kspark.errors import SinkWriteError

_RETIRED: list[Consumer] = []  # readers replaced by renew_group_reader

__all__ = ["group_reader", "renew_group_reader", "commit_offsets", "committed_offsets"]


def group_reader(where: ClientSettings | str, app_id: str) -> Consumer:
    """A consumer of the group ``app_id`` (never subscribed), one per worker process: reads
    committed markers (read_committed, so a pending transaction's offsets are waited for)
    and gives the group metadata that transactions commit offsets with."""
    settings = as_settings(where)
    return registry().get("groups", (app_id, settings), lambda: new_consumer(settings.conf(
        "consumer", "group", {"group.id": app_id, "enable.auto.commit": False,
                              "isolation.level": "read_committed"}), f"group {app_id}"))


def renew_group_reader(where: ClientSettings | str, app_id: str) -> None:
    """Drop this process's group reader: after a broker restart librdkafka may keep asking
    a group coordinator it cached and never find the new one (librdkafka issue 5511); the
    next :func:`group_reader` call makes a fresh client, which looks the coordinator up."""
    # not closed (a task's transactions may still hold it, for its group metadata) and kept
    # a while: destroying a client with a request in flight can crash librdkafka
    old = registry().pop("groups", (app_id, as_settings(where)))
    if old is not None:
        _RETIRED.append(old)
        del _RETIRED[:-20]


def commit_offsets(where: ClientSettings | str, app_id: str,
                   offsets: Mapping[tuple[str, int], int],
                   marker: tuple[tuple[str, int], str] | None = None) -> None:
    """Commit a task's input offsets to the group ``app_id`` (at-least-once: after the
    batch's output is written; exactly-once commits them in the task's transaction), and
    with them ``marker``: (its topic-partition, the encoded marker with the task's progress)
    as offset metadata, in the same request."""
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    if marker is not None:
        tps.append(TopicPartition(*marker[0], 0, metadata=marker[1]))
    if not tps:
        return
    settings = as_settings(where)
    stall: Stall | None = None
    while True:  # the same offsets again are harmless: retried through a broker restart
        try:
            group_reader(settings, app_id).commit(offsets=tps, asynchronous=False)
            return
        except KafkaException as e:
            err = e.args[0]
            denied = authorization_for(settings, err.code(), err.str(),
                                       {"GROUP": (app_id, "READ", False),
                                        "TOPIC": (tps[0].topic, "READ", False)})
            if denied is not None:
                raise denied from None
            if not transient(err):
                raise SinkWriteError(f"committing input offsets {dict(offsets)} to consumer "
                                     f"group {app_id!r} failed: {err.str()}") from None
            renew_group_reader(settings, app_id)
            stall = stall or Stall.of(f"committing input offsets to consumer group "
                                      f"{app_id!r}", settings)
            stall.wait(err)


def committed_offsets(where: ClientSettings | str, app_id: str,
                      partitions: list[tuple[str, int]],
                      timeout_s: float = 30.0, stable: bool = True,
                      patience_s: float | None = None) -> dict[tuple[str, int], int]:
    """The offsets the group ``app_id`` has committed for ``partitions`` (those it has).

    ``stable``: wait for an open transaction that commits offsets of the group to end (else
    the offsets before it are returned at once). A broker restart is ridden through for
    ``patience_s`` (default ``task.timeout.ms``). A partition answered with an error (say,
    UNSTABLE_OFFSET_COMMIT: a lost task's transaction with its offsets not ended yet) is
    asked again, or fails the call: it is never taken for a partition without a committed
    offset, which would start it over by its reset policy."""
    settings = as_settings(where)
    stall: Stall | None = None
    while True:  # a fresh client each try: a stale group coordinator is not kept
        c = new_consumer(settings.conf("consumer", "offsets", {
            "group.id": app_id, "enable.auto.commit": False,
            "isolation.level": "read_committed" if stable else "read_uncommitted"}),
            f"group {app_id}")
        started = time.monotonic()
        try:
            found = c.committed([TopicPartition(t, p) for t, p in partitions],
                                timeout=timeout_s)
            failed = [tp for tp in found if tp.error is not None]
            if failed:
                raise KafkaException(failed[0].error)
            return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}
        except KafkaException as e:
            err = e.args[0]
            denied = authorization_for(settings, err.code(), err.str(),
                                       {"GROUP": (app_id, "DESCRIBE", False)})
            if denied is not None:
                raise denied from None
            check_client(settings, c, started)
            if not transient(err):
                raise
            stall = stall or Stall.of(f"reading consumer group {app_id!r}'s offsets", settings)
            if patience_s is not None:
                stall.timeout_ms = int(patience_s * 1000)
        finally:
            c.close()
        stall.wait(err)
