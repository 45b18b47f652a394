"""Checks of the JSON documents the Spark host reads back: task markers in a micro-batch's
rows, the global stores' checkpoint, the pinned start and the offset log in the Spark
checkpoint.

Each returns the parsed document with its types made sure, or raises a
``CorruptStateError`` saying what is wrong, where it was read and what to do.

Example:
    >>> check_task_marker(b'{"ranges": [["in", 0, 5, 9]]}')
    {'ranges': [['in', 0, 5, 9]]}
    >>> check_task_marker(b'{"ranges": [["in", 0, 5]]}')
    Traceback (most recent call last):
    ...
    kspark.errors.CorruptStateError: a task marker in a micro-batch's rows is malformed: ...
"""

from __future__ import annotations

import json
from typing import Any

from kspark._engine.documents import (
    Invalid,
    check_offsets,
    need_dict,
    need_int,
    need_list,
    need_str,
)
from kspark.errors import CorruptStateError

__all__ = ["load_json", "check_task_marker", "check_global_checkpoint", "check_pinned_start",
           "read_offset_log", "parse_offset_log", "CLOCK"]


# A topology with delayed records (KIP-311) pins a clock in each micro-batch's offsets: this
# entry (a colon: no Kafka topic has this name) holds the wall-clock time, rounded down to
# the source's ``clock_ms``. A micro-batch fires the delayed records due by its pinned time,
# so a replayed batch fires the same ones; and a tick of the clock starts a micro-batch
# even when no input arrived, so due records do not wait for input.
CLOCK = "kspark:clock"


def parse_offset_log(text: str) -> dict[str, dict[str, int]]:
    r"""The end offsets in one file of Spark's offset log (a version line, a metadata line,
    then one line per source, ``-`` for a source without offsets), all sources merged; the
    pinned clock left out (see ``CLOCK``).

    Example:
        >>> parse_offset_log('v1\n{}\n{"t": {"0": 5}, "kspark:clock": {"0": 1000}}\n-')
        {'t': {'0': 5}}
    """
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines()[2:]:
        if line.strip() and line.strip() != "-":
            for topic, parts in json.loads(line).items():
                if topic != CLOCK:
                    out.setdefault(topic, {}).update({str(p): int(o) for p, o in parts.items()})
    return out


def load_json(text: str | bytes) -> Any:
    """``json.loads``, its errors (and a too deep nesting) as Invalid."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise Invalid(f"not JSON ({e})") from None


def _ranges(doc: Any) -> None:
    for i, r in enumerate(need_list(doc, "the ranges")):
        topic, *numbers = need_list(r, f"range {i}", 4)
        need_str(topic, f"the topic of range {i}")
        for n, what in zip(numbers, ("partition", "start", "end"), strict=True):
            need_int(n, f"the {what} of range {i}")


def check_task_marker(raw: str | bytes) -> Any:
    """The value of a task marker (see ``wire.TaskMarker``): ``{"ranges": [[topic,
    partition, start, end], ...], "globals": ..., "clock": ...}``."""
    try:
        doc = need_dict(load_json(raw), "the marker")
        unknown = sorted(set(doc) - {"ranges", "globals", "clock"})
        if unknown or "ranges" not in doc:
            raise Invalid(f"its fields are {sorted(doc)} (ranges, globals, clock belong)")
        _ranges(doc["ranges"])
        if doc.get("globals") is not None:
            check_offsets(doc["globals"], "'globals'")
        if doc.get("clock") is not None:
            need_int(doc["clock"], "'clock'")
        return doc
    except Invalid as e:
        raise CorruptStateError(
            f"a task marker in a micro-batch's rows is malformed: {e}. kspark's source writes "
            "them; a damaged Spark shuffle or checkpoint is the likely cause: delete the "
            "checkpoint (checkpoint.location) so the application resumes from its consumer "
            "group's offsets") from None


def check_global_checkpoint(raw: str, path: str) -> dict[str, Any]:
    """The global stores' checkpoint file: ``{"offsets": {topic: {partition: offset}},
    "topic_ids": {topic: id}}``."""
    try:
        doc = need_dict(load_json(raw), "the checkpoint")
        check_offsets(doc.get("offsets"), "'offsets'")
        for topic, tid in need_dict(doc.get("topic_ids", {}), "'topic_ids'").items():
            need_str(tid, f"'topic_ids'[{topic!r}]")
        return doc
    except Invalid as e:
        raise CorruptStateError(
            f"the global stores' checkpoint {path!r} is malformed: {e}. It was damaged or not "
            "written by kspark; delete it (the global stores are then rebuilt from their "
            "topics)") from None


def check_pinned_start(raw: str, path: str) -> dict[str, dict[str, int]]:
    """The start offsets pinned in the Spark checkpoint: ``{topic: {partition: offset}}``."""
    try:
        return check_offsets(load_json(raw), "the start offsets")
    except Invalid as e:
        raise CorruptStateError(
            f"the start offsets pinned in {path!r} are malformed: {e}. It was damaged or not "
            "written by kspark; delete the checkpoint (checkpoint.location) so the "
            "application resumes from its consumer group's offsets") from None


def read_offset_log(text: str, path: str) -> dict[str, dict[str, int]]:
    """The end offsets in one file of Spark's offset log (see :func:`parse_offset_log`).

    >>> read_offset_log('v1\\n{}\\n{"t": {"0": "x"}}', "offsets/3")
    Traceback (most recent call last):
    ...
    kspark.errors.CorruptStateError: the Spark offset log file 'offsets/3' is malformed ...
    """
    try:
        offsets = parse_offset_log(text)
        return check_offsets(offsets, "the offsets")
    except (Invalid, ValueError, TypeError, AttributeError, RecursionError) as e:
        raise CorruptStateError(
            f"the Spark offset log file {path!r} is malformed ({type(e).__name__}: {e}). It was "
            "damaged or not written by this application's query; delete the checkpoint "
            "(checkpoint.location) so the application resumes from its consumer group's "
            "offsets") from None
