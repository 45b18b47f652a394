"""Where a source partition starts when the application has no committed offset for it:
Kafka Streams' ``auto.offset.reset`` (the config's, or a source's own ``offset_reset``),
decided once for both execution modes. The hosts look up the partitions' offsets (see
``kspark._host.start_offsets``) and ask :func:`start_offsets`:

==========================================  ================================================
the partition                                starts at
==========================================  ================================================
its committed offset lies in the log         that offset (no reset)
no committed offset, or one outside the log  its topic's policy (:func:`topic_policy`):
an internal (repartition) topic's            its earliest offset, whatever the policy
``earliest``                                 its earliest offset
``latest``                                   its end (read_committed)
``by_duration:<ISO-8601 duration>``          the first offset whose timestamp is at or after
                                             now - duration; its end if there is none
``none``                                     StreamsError naming every such partition
==========================================  ================================================

Example:
    >>> logs = {("orders", 0): PartitionLog(10, 50), ("orders", 1): PartitionLog(0, 8)}
    >>> latest = reset_policy("latest")
    >>> start_offsets("app", logs, {("orders", 0): 42}, {tp: latest for tp in logs})
    {('orders', 0): 42, ('orders', 1): 8}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kspark.errors import StreamsError

__all__ = ["ResetPolicy", "PartitionLog", "reset_policy", "reset_policy_problem", "topic_policy",
           "needs_reset", "reset_offset", "start_offsets", "assigned_start", "EARLIEST"]

TP = tuple[str, int]
_NAMES = ("earliest", "latest", "none")
_BY_DURATION = "by_duration:"
# java.time.Duration.parse's text: PnDTnHnMn.nS (days, hours, minutes, seconds)
_ISO = re.compile(r"([-+]?)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{0,9}))?S)?)?",
                  re.IGNORECASE)
_EXPECTED = ("must be 'earliest', 'latest', 'none' or 'by_duration:<ISO-8601 duration>' "
             "(PnDTnHnMn.nS, e.g. 'by_duration:PT1H')")


@dataclass(frozen=True)
class ResetPolicy:
    """One reset policy: ``name`` (earliest, latest, none or by_duration) and, for
    by_duration, how far back from now a partition starts (``duration_ms``)."""

    name: str
    duration_ms: int = 0
    text: str = ""  # as written (for messages)

    def __str__(self) -> str:
        return self.text or self.name


EARLIEST = ResetPolicy("earliest", text="earliest")


@dataclass(frozen=True)
class PartitionLog:
    """What a partition holds now: its earliest offset and its (read_committed) end."""

    start: int
    end: int


def _duration_ms(iso: str) -> int:
    m = _ISO.fullmatch(iso)
    if m is None or (iso.upper().endswith("T") or not any(m.group(i) for i in (2, 3, 4, 5))):
        raise ValueError(f"{iso!r} is not an ISO-8601 duration (PnDTnHnMn.nS)")
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    ms = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000
    ms += int(((m.group(6) or "") + "000")[:3])
    if m.group(1) == "-" and ms:
        raise ValueError("a negative duration is not supported")
    return ms


def reset_policy(text: str) -> ResetPolicy:
    """The policy ``text`` names, as Kafka's ``AutoOffsetResetStrategy.fromString``; a
    ValueError says what is wrong.

    >>> reset_policy("by_duration:PT1H30M").duration_ms, reset_policy("none").name
    (5400000, 'none')
    """
    if text in _NAMES:
        return ResetPolicy(text, text=text)
    if isinstance(text, str) and text.startswith(_BY_DURATION):
        try:
            return ResetPolicy("by_duration", _duration_ms(text[len(_BY_DURATION):]), text)
        except ValueError as e:
            raise ValueError(f"{_EXPECTED}; {e}") from None
    raise ValueError(_EXPECTED)


def reset_policy_problem(text: object) -> str | None:
    """What is wrong with ``text`` as a reset policy (None: nothing); a config validator.

    >>> reset_policy_problem("by_duration:PT5M") is None, reset_policy_problem("smallest")[:30]
    (True, "must be 'earliest', 'latest', ")
    """
    try:
        reset_policy(text)  # type: ignore[arg-type]
    except ValueError as e:
        return str(e)
    return None


def topic_policy(internal: bool, source: str | None, configured: str) -> ResetPolicy:
    """A topic's policy: internal (repartition) topics always start at their earliest
    offset, as in Kafka Streams; a user topic takes its source's ``offset_reset``, else the
    config's ``auto.offset.reset`` (``configured``).

    >>> str(topic_policy(False, None, "latest")), str(topic_policy(False, "earliest", "latest"))
    ('latest', 'earliest')
    >>> str(topic_policy(True, "latest", "latest"))
    'earliest'
    """
    if internal:
        return EARLIEST
    return reset_policy(source or configured)


def needs_reset(committed: int | None, log: PartitionLog) -> bool:
    """Whether the partition's start follows its reset policy: no committed offset, or one
    outside the log (its records were deleted, or the topic was created again)."""
    return committed is None or not log.start <= committed <= log.end


def reset_offset(policy: ResetPolicy, log: PartitionLog, since: int | None = None) -> int:
    """Where ``policy`` starts a partition without a (valid) committed offset; ``since``:
    by_duration's lookup, the first offset whose timestamp is at or after now - duration
    (None: no record is that recent, so the end). ``none`` has no start: a ValueError."""
    if policy.name == "earliest":
        return log.start
    if policy.name == "latest":
        return log.end
    if policy.name == "by_duration":
        return log.end if since is None else min(max(since, log.start), log.end)
    raise ValueError(f"reset policy {policy} gives no start offset")


def start_offsets(app_id: str, logs: Mapping[TP, PartitionLog], committed: Mapping[TP, int],
                  policies: Mapping[TP, ResetPolicy],
                  since: Mapping[TP, int | None] | None = None) -> dict[TP, int]:
    """Each partition's start: its committed offset if in the log, else its policy's
    (:func:`reset_offset`). Partitions under ``none`` that need a reset fail the start
    together: a StreamsError naming each and what to do."""
    todo = {tp for tp, log in logs.items() if needs_reset(committed.get(tp), log)}
    refused = sorted(tp for tp in todo if policies[tp].name == "none")
    if refused:
        raise StreamsError(_no_offsets(app_id, refused, logs, committed))
    return {tp: reset_offset(policies[tp], log, (since or {}).get(tp)) if tp in todo
            else committed[tp] for tp, log in logs.items()}


def assigned_start(committed: int | None, resolved: tuple[int, int] | None, other: int) -> int:
    """Where a real_time thread assigns a partition, each epoch: the start the driver
    resolved at the run's start (``resolved``: the group's offset it saw, -1 for none, and
    the start) while the group still has the offset the driver saw, so every epoch starts
    there until a task commits; else the group's ``committed`` offset; else ``other``.

    >>> assigned_start(None, (-1, 80), 0), assigned_start(85, (-1, 80), 0)
    (80, 85)
    >>> assigned_start(3, (3, 10), 0), assigned_start(None, None, -2)
    (10, -2)
    """
    if resolved is not None and (-1 if committed is None else committed) == resolved[0]:
        return resolved[1]
    return other if committed is None else committed


def _no_offsets(app_id: str, refused: list[TP], logs: Mapping[TP, PartitionLog],
                committed: Mapping[TP, int]) -> str:
    missing = [f"{t}-{p}" for t, p in refused if committed.get((t, p)) is None]
    outside = [f"{t}-{p} (committed {committed[(t, p)]}, log [{logs[(t, p)].start}, "
               f"{logs[(t, p)].end}])" for t, p in refused if committed.get((t, p)) is not None]
    what = "; ".join(filter(None, [
        f"no committed offset for {', '.join(missing)}" if missing else "",
        f"a committed offset outside the log for {', '.join(outside)}" if outside else ""]))
    topics = ",".join(sorted({t for t, _ in refused}))
    return (f"application {app_id!r} has {what}, and their reset policy is 'none' "
            "(auto.offset.reset, or the source's offset_reset): set it to earliest, latest or "
            "by_duration:<ISO-8601 duration>, or commit a start for them first, e.g. "
            f"kafka-consumer-groups --group {app_id} --reset-offsets --to-earliest "
            f"--topic <topic>:<partitions> --execute (topics: {topics})")
