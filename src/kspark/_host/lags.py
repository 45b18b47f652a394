"""``KafkaStreams.all_local_store_partition_lags()``: per logged store and partition, how
far the application's copy is behind the changelog (Java's ``LagInfo``).

The positions come from the tasks (a real-time thread's reports name its active tasks' and
its standby copies' changelog offsets); the ends from the brokers, read by the driver. As
in Java, an active task (its stores restored, processing) is at its changelog's end: its
lag is 0. A standby copy is where its last update left it. Where a partition has an active
task and standby copies, the active one answers (Java answers for one instance, which never
holds both); a copy answers for a partition no thread holds active now.

Example:
    >>> lags = partition_lags("app", {"counts": 2}, None, {},
    ...                       lambda tps: {tp: 10 for tp in tps})
    >>> lags["counts"][1]
    LagInfo(current_offset_position=10, end_offset_position=10, offset_lag=0)
    >>> lags = partition_lags("app", {"counts": 2}, {("app-counts-changelog", 0)},
    ...                       {("app-counts-changelog", 1): 4}, lambda tps: {tp: 10 for tp in tps})
    >>> lags["counts"][1].offset_lag, sorted(lags["counts"])
    (6, [0, 1])
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from kspark._engine.state.build import changelog_topic
from kspark.streams_metadata import LagInfo

__all__ = ["partition_lags"]

TP = tuple[str, int]


def partition_lags(app_id: str, logged: Mapping[str, int], active: Collection[TP] | None,
                   standby: Mapping[TP, int], end_offsets: Callable[[list[TP]], dict[TP, int]]
                   ) -> dict[str, dict[int, LagInfo]]:
    """``{store: {partition: LagInfo}}`` of ``logged`` (store -> its changelog's
    partitions): for the changelog partitions of ``active`` tasks (None: every partition,
    as after a micro-batch, whose tasks all ran) and ``standby`` copies (changelog
    partition -> the offset the copy holds); ``end_offsets``: the brokers' ends."""
    topics = {changelog_topic(app_id, store): store for store in logged}
    if active is None:
        active = {(t, p) for t, store in topics.items() for p in range(logged[store])}
    wanted = sorted(tp for tp in {*active, *standby} if tp[0] in topics)
    ends = end_offsets(wanted) if wanted else {}
    out: dict[str, dict[int, LagInfo]] = {}
    for tp in wanted:
        end = ends.get(tp)
        if end is not None:
            at = end if tp in active else min(standby[tp], end)
            out.setdefault(topics[tp[0]], {})[tp[1]] = LagInfo(at, end)
    return out
