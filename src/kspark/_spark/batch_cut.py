"""Where a capped micro-batch ends in each input partition (``max.offsets.per.trigger``).

A source of one topic is cut by lag: the batch's rows are shared among the partitions in
proportion to what each has left (:func:`cap_by_lag`). A source of several topics feeds
tasks that merge their partitions by timestamp (a join, a merge); Kafka Streams' task
waits for a partition that still has records on the broker before it goes past that
partition's next timestamp (``max.task.idle.ms=0``). Cut by lag, a batch could hold a
stream's records whose table rows (earlier timestamps) were only in the next batch, and
the join would miss them. So such a source is cut by time (:func:`cap_by_time`): every
partition ends before the first record at or after one cut timestamp, the largest that
keeps the batch within the cap; a task that runs out of one partition's records in the
batch then finds the next record of that partition later in time than every record left
in the others, as Kafka Streams would have picked them.

Both are pure: the reader passes the broker's answers (``Admin.offsets_for_time`` and
``Admin.newest_timestamp``), the conformance harness its in-memory topics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["Offsets", "cap_by_lag", "cap_by_time", "cut_at", "rows"]

Offsets = dict[str, dict[str, int]]
# the first offset of each (topic, partition) whose record's timestamp is at or after a
# time (None: no record is that recent), as Kafka's ListOffsets for a timestamp answers
FirstAt = Callable[[int], Mapping[tuple[str, int], "int | None"]]
_MAX_PROBES = 64  # a timestamp is 63 bits: the bisection ends well before


def _lags(start: Offsets, ends: Offsets) -> dict[tuple[str, str], int]:
    return {(t, p): e - start.get(t, {}).get(p, 0) for t, parts in ends.items()
            for p, e in parts.items()}


def cap_by_lag(start: Offsets, ends: Offsets, max_rows: int) -> Offsets:
    """Limit the batch to ``max_rows`` records, shared among partitions in proportion to lag
    (a partition with records left reads at least one).

    >>> cap_by_lag({"t": {"0": 0, "1": 0}}, {"t": {"0": 30, "1": 10}}, 20)
    {'t': {'0': 15, '1': 5}}
    """
    lags = _lags(start, ends)
    total = sum(lags.values())
    if total <= max_rows:
        return ends
    out: Offsets = {t: {} for t in ends}
    for (t, p), lag in lags.items():
        s = start.get(t, {}).get(p, 0)
        out[t][p] = s + (max(1, lag * max_rows // total) if lag > 0 else 0)
    return out


def cut_at(start: Offsets, ends: Offsets, first: Mapping[tuple[str, int], int | None]
           ) -> Offsets:
    """Each partition's end before its first record at or after the cut (``first``), kept
    between its start and its end.

    >>> cut_at({"a": {"0": 2}}, {"a": {"0": 9}}, {("a", 0): 5})
    {'a': {'0': 5}}
    """
    out: Offsets = {}
    for t, parts in ends.items():
        out[t] = {}
        for p, e in parts.items():
            s, at = start.get(t, {}).get(p, 0), first.get((t, int(p)))
            out[t][p] = e if at is None else min(e, max(s, at))
    return out


def rows(start: Offsets, ends: Offsets) -> int:
    """How many records a batch from ``start`` to ``ends`` holds.

    >>> rows({"a": {"0": 2}}, {"a": {"0": 9, "1": 4}})
    11
    """
    return sum(_lags(start, ends).values())


def cap_by_time(start: Offsets, ends: Offsets, max_rows: int, first_at: FirstAt,
                newest: int | None) -> Offsets:
    """The batch cut at the largest timestamp that keeps it within ``max_rows`` records
    (bisected: one ``first_at`` lookup per step; it stops early at half the cap or more).
    ``newest``: the largest record timestamp in the partitions (None: unknown). Where no
    cut by time holds between one record and ``max_rows`` (more records than the cap share
    the oldest timestamp), the batch is cut by lag.

    >>> ts = {"s": [1, 2, 3, 4], "t": [1, 3, 5, 7]}  # each partition's record timestamps
    >>> first = lambda c: {(n, 0): next((i for i, x in enumerate(v) if x >= c), None)
    ...                    for n, v in ts.items()}
    >>> cap_by_time({"s": {"0": 0}, "t": {"0": 0}}, {"s": {"0": 4}, "t": {"0": 4}}, 3,
    ...             first, 7)  # before 2: s's 1 and t's 1 (at least half the cap: done)
    {'s': {'0': 1}, 't': {'0': 1}}
    """
    if rows(start, ends) <= max_rows:
        return ends
    if newest is None:
        return cap_by_lag(start, ends, max_rows)
    lo, hi = 0, newest + 1  # rows before lo: within the cap; before hi: all, above it
    best = cut_at(start, ends, first_at(lo))
    if rows(start, best) > max_rows:
        return cap_by_lag(start, ends, max_rows)
    for _ in range(_MAX_PROBES):
        if hi - lo <= 1 or 2 * rows(start, best) >= max_rows:
            break
        mid = (lo + hi) // 2
        cut = cut_at(start, ends, first_at(mid))
        if rows(start, cut) <= max_rows:
            lo, best = mid, cut
        else:
            hi = mid
    return best if rows(start, best) > 0 else cap_by_lag(start, ends, max_rows)
