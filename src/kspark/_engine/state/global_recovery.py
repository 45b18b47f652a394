"""Recovery decisions for global stores, for any host: bring a copy of the global stores to
the offsets a micro-batch pinned, rebuilding it when its offsets cannot be continued (KIP-406).

=================================================  ==============================================
what the copy finds                                 what happens
=================================================  ==============================================
the global topic does not exist now                 the store keeps its contents, with a warning
its topic id changed (deleted and created again)    wiped, rebuilt per the reset policy
its offset below the topic's earliest (deleted)     wiped, rebuilt per the reset policy
its offset past the pinned one (an older batch)     wiped, rebuilt from the earliest offset
otherwise                                           the records up to the pins are applied
=================================================  ==============================================

The reset policy (:func:`global_reset_policy`): the topic's ``offset_reset``, else
``global.consumer.auto.offset.reset``, else ``earliest``; ``latest`` starts the rebuilt copy
at the pinned end (empty). Each rebuild is logged as a warning naming the store, topic and
offsets; the query goes on.

Example:
    >>> why_rebuild_global({("g", 0): 2}, "g", {"0": 5}, "id1", "id1", {("g", 0): 3})
    GlobalRebuild(reason="its offset 2 of partition 0 is below the topic's earliest offset 3 \
(records were deleted)", older_batch=False)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kspark._engine.nodes import RawRecord
from kspark._engine.state.recovery import ChangelogReader, TopicPartition
from kspark._config_defaults import default_of

if TYPE_CHECKING:
    from kspark._engine.global_task import GlobalStateTask

__all__ = ["GlobalPins", "GlobalRebuild", "why_rebuild_global", "global_reset_policy",
           "rebuild_policy", "catch_up_globals", "apply_global_range"]

log = logging.getLogger("kspark")
GlobalPins = dict[str, dict[str, int]]  # {topic: {partition: pinned end}}
_PROGRESS_EVERY_S = 5.0


@dataclass(frozen=True)
class GlobalRebuild:
    """Why a copy's offsets of a global topic cannot be continued; ``older_batch``: they
    are past the pinned ones (a replayed older batch), not invalid."""

    reason: str
    older_batch: bool = False


def why_rebuild_global(offsets: Mapping[TopicPartition, int], topic: str,
                       pins: Mapping[str, int], topic_id: str, id_before: str | None,
                       earliest: Mapping[TopicPartition, int]) -> GlobalRebuild | None:
    """Why the copy's ``offsets`` of ``topic`` cannot be continued to its ``pins``
    (partition -> pinned end), or None if they can: the topic's id changed since the copy
    read it (``id_before``), an offset is below the topic's ``earliest`` (records were
    deleted), or past its pin (an older batch). A copy with no offsets of the topic passes.

    Example:
        >>> why_rebuild_global({("g", 0): 2}, "g", {"0": 5}, "id2", "id1", {("g", 0): 0}).reason
        "topic 'g' was deleted and created again (its id changed)"
        >>> why_rebuild_global({("g", 0): 6}, "g", {"0": 5}, "id1", "id1", {("g", 0): 0})
        ... # doctest: +ELLIPSIS
        GlobalRebuild(reason="its offset 6 of partition 0 is past ...", older_batch=True)
        >>> why_rebuild_global({("g", 0): 4}, "g", {"0": 5}, "id1", "id1", {("g", 0): 0}) is None
        True
    """
    have = {p: o for (t, p), o in offsets.items() if t == topic}
    if not have:
        return None
    if id_before is not None and id_before != topic_id:
        return GlobalRebuild(f"topic {topic!r} was deleted and created again (its id changed)")
    for p, end in pins.items():
        at = have.get(int(p))
        if at is None:
            continue
        if at < earliest[(topic, int(p))]:
            return GlobalRebuild(f"its offset {at} of partition {p} is below the topic's "
                                 f"earliest offset {earliest[(topic, int(p))]} (records were "
                                 "deleted)")
        if at > end:
            return GlobalRebuild(f"its offset {at} of partition {p} is past the micro-batch's "
                                 f"pinned offset {end} (a replayed older batch)", True)
    return None


def global_reset_policy(offset_reset: str | None, configured: str | None) -> str:
    """Where a global store whose offsets are invalid rebuilds from: its topic's
    ``offset_reset``, else ``global.consumer.auto.offset.reset`` (``configured``), else
    ``earliest``.

    Example:
        >>> global_reset_policy(None, None), global_reset_policy(None, "latest")
        ('earliest', 'latest')
        >>> global_reset_policy("earliest", "latest")
        'earliest'
    """
    return offset_reset or configured or default_of("global.consumer.auto.offset.reset")


def rebuild_policy(rebuild: GlobalRebuild, reset_policy: str) -> str:
    """The policy a rebuild follows: an older batch is rebuilt in full (``earliest``)
    whatever the topic's ``reset_policy``; invalid offsets follow it (KIP-406).

    Example:
        >>> rebuild_policy(GlobalRebuild("past the pin", older_batch=True), "latest")
        'earliest'
        >>> rebuild_policy(GlobalRebuild("below the earliest"), "latest")
        'latest'
    """
    return "earliest" if rebuild.older_batch else reset_policy


def catch_up_globals(state: GlobalStateTask, reader: ChangelogReader, pins: GlobalPins,
                     reset_policy: Callable[[str], str]) -> bool:
    """Bring the copy ``state`` to ``pins``: per pinned topic, rebuild it if
    :func:`why_rebuild_global` says so (following :func:`rebuild_policy`), then apply each
    partition's records up to its pin. ``reset_policy``: a topic's policy (see
    :func:`global_reset_policy`). Records the topics' ids in ``state.topic_ids``; returns
    True if anything changed.
    """
    if not pins:
        return False
    ids = reader.topic_ids(pins)
    tps = [(t, int(p)) for t, parts in pins.items() for p in parts]
    earliest = reader.earliest_offsets(tps)
    ids_before = state.topic_ids
    changed = False
    for topic, parts in sorted(pins.items()):
        if topic not in ids:
            log.warning("global topic %r does not exist now; global store %r keeps its contents "
                        "until it is back", topic, state.store_of(topic))
            continue
        rebuild = why_rebuild_global(state.offsets, topic, parts, ids[topic],
                                     ids_before.get(topic), earliest)
        if rebuild is not None:
            policy = rebuild_policy(rebuild, reset_policy(topic))
            log.warning("global store %r: %s; wiping it and rebuilding it from topic %r (%s) "
                        "(KIP-406)", state.store_of(topic), rebuild.reason, topic, policy)
            state.wipe(topic)
            if policy == "latest":
                for p, end in parts.items():
                    state.offsets[(topic, int(p))] = end
            changed = True
        for p, end in sorted(parts.items(), key=lambda kv: int(kv[0])):
            start = state.offsets.get((topic, int(p)), earliest[(topic, int(p))])
            if start < end:
                apply_global_range(state, reader, topic, int(p), start, end)
                changed = True
            state.offsets[(topic, int(p))] = max(start, end)
    state.topic_ids = {**ids_before, **{t: ids[t] for t in pins if t in ids}}
    return changed


def apply_global_range(state: GlobalStateTask, reader: ChangelogReader, topic: str,
                       partition: int, start: int, end: int) -> None:
    """Apply ``[start, end)`` of one partition of a global topic to ``state``, logging
    progress on long restorations."""
    store = state.store_of(topic)
    began = last = time.monotonic()
    done = 0
    for msgs in reader.read(topic, partition, start, end):
        for m in msgs:
            state.update(RawRecord(topic, partition, m.offset(), m.timestamp()[1], m.key(),
                                   m.value(), tuple(m.headers() or ())))
        done += len(msgs)
        if time.monotonic() - last > _PROGRESS_EVERY_S:
            last = time.monotonic()
            log.info("global store %r: restoring topic %r partition %d: offset %d of %d "
                     "(%d records applied)", store, topic, partition, msgs[-1].offset() + 1,
                     end, done)
    if time.monotonic() - began > _PROGRESS_EVERY_S:
        log.info("global store %r: topic %r partition %d restored up to offset %d (%d records, "
                 "%.1f s)", store, topic, partition, end, done, time.monotonic() - began)
