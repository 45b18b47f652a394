"""The pure half of ``kspark reset``: the offset-reset scenarios of Kafka's
``kafka-streams-application-reset`` (``--to-earliest``, ``--to-latest``, ``--to-offset``,
``--shift-by``, ``--to-datetime``, ``--by-duration``, ``--from-file``), read as Java reads
them, and the offsets each one gives a topic-partition.

Rules, as Java's ``StreamsResetter``:

- one scenario at a time (:func:`choose_scenario`); none is ``--to-earliest``;
- ``--to-offset``, ``--shift-by`` and ``--from-file`` are clamped to the partition's log:
  at most its end (latest), at least its start (earliest);
- ``--shift-by N`` moves the committed offset by N (N may be negative); a partition without
  a committed offset moves from where the application would start it (its
  ``auto.offset.reset``: the start of the log, or its end for ``latest``);
- ``--to-datetime`` and ``--by-duration`` (now minus the duration) take each partition's
  first record at or after that time; a partition with none goes to its end;
- ``--to-datetime`` is ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+hh``,
  ``+hhmm``, ``+hh:mm``); without one it is UTC, as Java's ``Utils.getDateTime``;
- ``--by-duration`` is an ISO-8601 duration ``PnDTnHnMnS`` as Java's ``Duration.parse``;
- ``--from-file`` is CSV, one ``topic,partition,offset`` a line.

Example:
    >>> tp = ("in", 0)
    >>> plan_offsets([tp], Scenario("shift", -5), current={tp: 3}, earliest={tp: 0},
    ...              latest={tp: 10})
    ({('in', 0): 0}, {('in', 0): '3 - 5 = -2 is before the log start 0'})
    >>> parse_datetime("1970-01-01T01:00:00.000+01:00"), parse_duration("PT1M30S")
    (0, 90000)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from kspark.errors import KSparkError

__all__ = ["Scenario", "SCENARIOS", "choose_scenario", "make_scenario", "plan_offsets", "clamp",
           "parse_datetime", "parse_duration", "parse_offsets_file"]

TP = tuple[str, int]

# option name -> scenario kind
SCENARIOS = {"--to-earliest": "earliest", "--to-latest": "latest", "--to-offset": "offset",
             "--shift-by": "shift", "--to-datetime": "datetime", "--by-duration": "duration",
             "--from-file": "file"}

_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
                       r"(Z|[+-]\d{2}(?::?\d{2})?)?")
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Scenario:
    """One offset-reset scenario: its kind (a value of :data:`SCENARIOS`) and argument
    (the offset, the shift, the time in epoch ms, or the file's offsets); ``lines``: the
    file's line of each topic-partition, ``option``: how the user gave it."""

    kind: str = "earliest"
    value: Any = None
    option: str = "--to-earliest"
    lines: Mapping[TP, int] = field(default_factory=dict)


def choose_scenario(given: Mapping[str, Any]) -> tuple[str, Any]:
    """The one scenario option given (``{option: value or None}``), ``("--to-earliest",
    True)`` if none; more than one is an error naming them.

    >>> choose_scenario({"--to-offset": 5, "--shift-by": None})
    ('--to-offset', 5)
    """
    chosen = [(o, v) for o, v in given.items() if v is not None and v is not False]
    if len(chosen) > 1:
        raise KSparkError(f"give one offset-reset option, not {' and '.join(o for o, _ in chosen)}"
                          f" (one of {', '.join(SCENARIOS)})")
    return chosen[0] if chosen else ("--to-earliest", True)


def make_scenario(option: str, value: Any, *, now_ms: int,
                  read_text: Callable[[str], str]) -> Scenario:
    """The :class:`Scenario` of one option and its value as given on the command line:
    ``--to-datetime`` and ``--by-duration`` (from ``now_ms``) become a time, ``--from-file``
    the offsets ``read_text(path)`` holds.

    >>> make_scenario("--by-duration", "PT1S", now_ms=5000, read_text=open).value
    4000
    """
    kind = SCENARIOS[option]
    if kind == "datetime":
        return Scenario(kind, parse_datetime(value), f"{option} {value}")
    if kind == "duration":
        return Scenario(kind, now_ms - parse_duration(value), f"{option} {value}")
    if kind == "file":
        try:
            text = read_text(value)
        except OSError as e:
            raise KSparkError(f"--from-file {value!r} cannot be read ({e.strerror})") from None
        offsets, lines = parse_offsets_file(text, value)
        return Scenario(kind, offsets, f"{option} {value}", lines)
    if kind in ("offset", "shift"):
        return Scenario(kind, int(value), f"{option} {value}")
    return Scenario(kind, None, option)


def clamp(offset: int, earliest: int, latest: int) -> int:
    """``offset`` within ``[earliest, latest]`` (Java's ``checkOffsetRange``).

    >>> clamp(-3, 2, 9), clamp(5, 2, 9), clamp(12, 2, 9)
    (2, 5, 9)
    """
    return latest if offset >= latest else max(offset, earliest)


def plan_offsets(tps: Iterable[TP], scenario: Scenario, *, current: Mapping[TP, int],
                 earliest: Mapping[TP, int], latest: Mapping[TP, int],
                 by_time: Mapping[TP, int | None] | None = None, start_at: str = "earliest"
                 ) -> tuple[dict[TP, int], dict[TP, str]]:
    """The offset to commit for each of ``tps`` under ``scenario``, and a note for each
    one moved from what the scenario asked (clamped, or no record at the time)."""
    out: dict[TP, int] = {}
    notes: dict[TP, str] = {}
    for tp in sorted(tps):
        lo, hi = earliest[tp], latest[tp]
        if scenario.kind == "earliest":
            out[tp] = lo
            continue
        if scenario.kind == "latest":
            out[tp] = hi
            continue
        if scenario.kind in ("datetime", "duration"):
            found = (by_time or {}).get(tp)
            out[tp] = hi if found is None else found
            if found is None:
                notes[tp] = f"no record at or after {_utc(scenario.value)}: the log's end"
            continue
        if scenario.kind == "shift":
            base = current.get(tp, hi if start_at == "latest" else lo)
            wanted = base + scenario.value
            what = f"{base} {'-' if scenario.value < 0 else '+'} {abs(scenario.value)} = {wanted}"
        elif scenario.kind == "offset":
            wanted, what = scenario.value, f"--to-offset {scenario.value}"
        else:
            wanted = scenario.value[tp]
            what = f"{wanted} (line {scenario.lines[tp]})"
        out[tp] = clamp(wanted, lo, hi)
        if out[tp] != wanted:
            notes[tp] = (f"{what} is past the log end {hi}" if wanted > hi
                         else f"{what} is before the log start {lo}")
    return out, notes


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def parse_datetime(text: str) -> int:
    """Epoch milliseconds of ``YYYY-MM-DDTHH:mm:SS.sss[zone]`` (Java's
    ``Utils.getDateTime``: the milliseconds are required; no zone is UTC).

    >>> parse_datetime("2024-03-01T12:00:00.250Z") == parse_datetime("2024-03-01T13:00:00.250+0100")
    True
    """
    m = _DATETIME.fullmatch(text.strip())
    if m is None:
        raise KSparkError(f"--to-datetime {text!r} is not YYYY-MM-DDTHH:mm:SS.sss with an "
                          "optional zone (Z, +hh, +hhmm or +hh:mm; none: UTC), e.g. "
                          "2024-03-01T12:00:00.000 or 2024-03-01T12:00:00.000+01:00")
    year, month, day, hour, minute, second, milli = (int(g) for g in m.groups()[:7])
    zone = timezone.utc
    if m.group(8) and m.group(8) != "Z":
        sign = -1 if m.group(8)[0] == "-" else 1
        digits = m.group(8)[1:].replace(":", "")
        zone = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0)))
    try:
        at = datetime(year, month, day, hour, minute, second, milli * 1000, tzinfo=zone)
    except ValueError as e:
        raise KSparkError(f"--to-datetime {text!r} is no date and time: {e}") from None
    return (at - _EPOCH) // timedelta(milliseconds=1)


def parse_duration(text: str) -> int:
    """Milliseconds of an ISO-8601 duration ``PnDTnHnMnS`` (Java's ``Duration.parse``:
    days are 24 hours; each number may have a sign, the seconds a fraction).

    >>> parse_duration("P1DT2H"), parse_duration("-PT0.5S"), parse_duration("pt-1m")
    (93600000, -500, -60000)
    """
    m = _DURATION.fullmatch(text.strip())
    if m is None or m.group(3) == "T" or m.group(3) is None and m.group(2) is None:
        raise KSparkError(f"--by-duration {text!r} is not an ISO-8601 duration PnDTnHnMnS, e.g. "
                          "PT1H (an hour ago), P1DT12H (a day and a half ago), PT30M")
    sign, days, _, hours, minutes, seconds, fraction = m.groups()
    nanos = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60 * 10**9
    secs = int(seconds or 0) * 10**9
    frac = int((fraction or "").ljust(9, "0"))
    secs += -frac if (seconds or "").startswith("-") else frac
    total = (nanos + secs) * (-1 if sign == "-" else 1)
    return total // 10**6 if total >= 0 else -(-total // 10**6)


def parse_offsets_file(text: str, source: str) -> tuple[dict[TP, int], dict[TP, int]]:
    """``({(topic, partition): offset}, {(topic, partition): line number})`` of a
    ``--from-file`` CSV: one ``topic,partition,offset`` a line (blank lines and spaces
    around the fields are ignored). A bad line is an error naming it.

    >>> parse_offsets_file("orders,0,42\\norders,1,7\\n", "f.csv")[0]
    {('orders', 0): 42, ('orders', 1): 7}
    """
    offsets: dict[TP, int] = {}
    lines: dict[TP, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        where = f"--from-file {source} line {number} ({line.strip()!r})"
        if len(fields) != 3 or not fields[0]:
            raise KSparkError(f"{where} is not TOPIC,PARTITION,OFFSET")
        try:
            partition, offset = int(fields[1]), int(fields[2])
        except ValueError:
            raise KSparkError(f"{where}: the partition and the offset must be whole numbers "
                              "(TOPIC,PARTITION,OFFSET)") from None
        if partition < 0:
            raise KSparkError(f"{where}: partition {partition} is negative")
        tp = (fields[0], partition)
        if tp in lines:
            raise KSparkError(f"{where} repeats topic {tp[0]!r} partition {partition} (line "
                              f"{lines[tp]}): keep one line for it")
        offsets[tp], lines[tp] = offset, number
    if not offsets:
        raise KSparkError(f"--from-file {source} is empty: write one TOPIC,PARTITION,OFFSET "
                          "line for each input partition")
    return offsets, lines
