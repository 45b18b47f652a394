"""Where an application's source partitions start, looked up once per start by the driver
of either mode (micro_batch pins them in the Spark checkpoint, ``_spark/resume.py``;
real_time hands them to every epoch's threads, ``_spark/realtime/stream_thread.py``): the
group's committed offset, else the topic's ``auto.offset.reset`` policy. The decision is
``kspark._engine.offset_reset``'s; this module only asks Kafka what it needs.

Example (needs a broker, so not run)::

    starts = resolve_start_offsets(admin, "app", [("orders", 0)], committed={},
                                   resets={}, configured="latest")   # {("orders", 0): <end>}
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kspark._engine.offset_reset import (PartitionLog, needs_reset, start_offsets,
                                         topic_policy)

__all__ = ["resolve_start_offsets"]

log = logging.getLogger("kspark")
TP = tuple[str, int]


def resolve_start_offsets(admin: Any, app_id: str, partitions: list[TP],
                          committed: Mapping[TP, int], resets: Mapping[str, str],
                          configured: str, now_ms: int | None = None) -> dict[TP, int]:
    """The start of each of ``partitions`` (user topics): ``committed`` where it lies in the
    log, else the policy of its topic (``resets``: the sources' own, over ``configured``,
    the config's ``auto.offset.reset``). by_duration looks the offsets up by timestamp at
    ``now_ms`` (default: now). Raises StreamsError for partitions under ``none``."""
    policies = {tp: topic_policy(False, resets.get(tp[0]), configured) for tp in partitions}
    earliest, ends = admin.end_offsets(partitions, earliest=True), admin.end_offsets(partitions)
    logs = {tp: PartitionLog(earliest[tp], ends[tp]) for tp in partitions}
    todo = [tp for tp in partitions if needs_reset(committed.get(tp), logs[tp])]
    since: dict[TP, int | None] = {}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    for duration in sorted({policies[tp].duration_ms for tp in todo
                            if policies[tp].name == "by_duration"}):
        tps = [tp for tp in todo if policies[tp].name == "by_duration"
               and policies[tp].duration_ms == duration]
        since.update(admin.offsets_for_time(tps, now - duration))
    out = start_offsets(app_id, logs, committed, policies, since)
    for tp in todo:
        if committed.get(tp) is not None:
            log.warning("topic %r partition %d: the committed offset %d is outside the log "
                        "[%d, %d]; starting at offset %d (reset policy %s)", *tp,
                        committed[tp], logs[tp].start, logs[tp].end, out[tp], policies[tp])
    fresh = sorted(tp for tp in todo if committed.get(tp) is None)
    if fresh:
        log.info("application %r: %d partition(s) without a committed offset start by their "
                 "reset policy: %s", app_id, len(fresh),
                 ", ".join(f"{t}-{p} at {out[(t, p)]} ({policies[(t, p)]})" for t, p in fresh[:20])
                 + (", ..." if len(fresh) > 20 else ""))
    return out
