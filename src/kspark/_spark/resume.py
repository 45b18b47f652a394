"""Where a query resumes. Kafka is the source of truth for progress, as in Kafka Streams:
every task commits its input offsets to the group ``application.id`` with its batch (inside
the transaction under exactly-once). A query without a Spark checkpoint starts from those
offsets; a query with one checks that the checkpoint agrees with them.

Example:
    >>> # start = resume_offsets(spark, config, ["orders"], {}, "/data/app/checkpoint")
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from kspark._host.start_offsets import resolve_start_offsets
from kspark._kafka.admin import Admin
from kspark._kafka.group_offsets import committed_offsets
from kspark._kafka.range_reader import read_range
from kspark._kafka.settings import as_settings
from kspark._spark.checkpoint import Offsets, SparkCheckpoint
from kspark.errors import ProgressMismatchError

__all__ = ["resume_offsets"]

log = logging.getLogger("kspark")
TP = tuple[str, int]


def resume_offsets(spark: SparkSession, config: Mapping[str, Any], topics: list[str],
                   resets: Mapping[str, str], location: str) -> Offsets | None:
    """The offsets the query's first batch starts from (None: no topics): the group's,
    else each topic's reset policy (``resets``: the sources' own, over the config's
    ``auto.offset.reset``). Pinned in the checkpoint before the first batch is planned,
    so a replay of batch 0 starts from the same place.

    Raises ProgressMismatchError if an existing checkpoint disagrees with the group.
    """
    if not topics:
        return None
    app_id, settings = config["application.id"], as_settings(config)
    admin = Admin(settings, config["request.timeout.ms"])
    counts = admin.check_topics(topics, [])
    tps = [(t, p) for t in topics for p in range(counts[t])]
    # The last completed commit: a pending transaction's offsets are not waited for.
    group = committed_offsets(settings, app_id, tps, stable=False)
    checkpoint = SparkCheckpoint(spark, location)
    if checkpoint.latest_batch() is None:
        start = _fresh_start(admin, app_id, tps, group, resets, config["auto.offset.reset"])
        checkpoint.pin_start(start)
        if group:
            log.info("application %r has no Spark checkpoint at %s: resuming from the offsets "
                     "its consumer group committed", app_id, location)
        return start
    pinned = checkpoint.pinned_start()
    _check_agreement(checkpoint, pinned, group, tps, config)
    return pinned


def _fresh_start(admin: Admin, app_id: str, tps: list[TP], group: dict[TP, int],
                 resets: Mapping[str, str], configured: str) -> Offsets:
    """The group's offset per partition; where it has none (or one outside the log), the
    topic's reset policy (``kspark._host.start_offsets``)."""
    start: Offsets = {}
    for (t, p), offset in resolve_start_offsets(admin, app_id, tps, group, resets,
                                                configured).items():
        start.setdefault(t, {})[str(p)] = offset
    return start


def _check_agreement(checkpoint: SparkCheckpoint, pinned: Offsets | None,
                     group: dict[TP, int], tps: list[TP], config: Mapping[str, Any]) -> None:
    """The group's offset of each partition must lie between the end of the checkpoint's last
    completed batch (or, past it, only records invisible to read_committed) and the end of
    its last planned batch (a batch Spark will replay)."""
    latest = checkpoint.latest_batch()
    planned = checkpoint.offsets(latest) if latest is not None else {}
    committed = checkpoint.last_committed()
    done = checkpoint.offsets(committed) if committed is not None else pinned or {}
    for t, p in tps:
        end_planned = planned.get(t, {}).get(str(p))
        end_done = done.get(t, {}).get(str(p))
        offset = group.get((t, p))
        if offset is None and pinned is not None:  # never committed: where the query began
            offset = pinned.get(t, {}).get(str(p))
        if offset is None:
            continue
        if end_planned is not None and offset > end_planned:
            raise _mismatch(checkpoint, config, t, p, offset, end_planned, ahead=True)
        if (end_done is not None and offset < end_done
                and _has_records(config, t, p, offset, end_done)):
            raise _mismatch(checkpoint, config, t, p, group.get((t, p)), end_done, ahead=False)


def _has_records(config: Mapping[str, Any], topic: str, partition: int, start: int,
                 end: int) -> bool:
    """Whether read_committed sees a record in [start, end) (transaction markers and aborted
    records take offsets a task never sees, so its committed offset can stop short of them)."""
    reader = read_range(as_settings(config), topic, partition, start, end,
                        config["source.read.timeout.ms"])
    try:
        return next(reader, None) is not None
    finally:
        reader.close()  # type: ignore[attr-defined]  # a generator


def _mismatch(checkpoint: SparkCheckpoint, config: Mapping[str, Any], topic: str,
              partition: int, group: int | None, spark_end: int, ahead: bool
              ) -> ProgressMismatchError:
    app_id = config["application.id"]
    where = (f"the Spark checkpoint at {checkpoint.location} disagrees with consumer group "
             f"{app_id!r} on topic {topic!r} partition {partition}: ")
    if ahead and group is not None:
        what = (f"the group has committed offset {group}, but the checkpoint's last batch ends "
                f"at {spark_end}; the checkpoint is older than the application's progress (a "
                "restored copy, or runs with different checkpoint locations) and would process "
                f"offsets {spark_end}..{group - 1} again")
    elif group is None:
        what = (f"the checkpoint has processed up to offset {spark_end}, but the group has no "
                "committed offset for it (the group was deleted)")
    else:
        what = (f"the checkpoint has processed up to offset {spark_end}, but the group's "
                f"committed offset is {group} (the group was reset)")
    return ProgressMismatchError(
        where + what + ". To continue from the group's offsets, delete the checkpoint directory; "
        f"to continue from the checkpoint's, set the group to them (kafka-consumer-groups "
        f"--group {app_id} --reset-offsets --to-offset {spark_end} --topic {topic}:{partition} "
        "--execute)")
