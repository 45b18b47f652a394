"""Checks of the JSON documents kspark writes for itself and reads back from Kafka or disk:
a task's progress, offsets by topic and partition.

Each check returns the document with its types made sure, or raises :class:`Invalid`
saying which field is wrong; the caller names where the document came from (file, topic,
partition, offset) in the error it raises.

Example:
    >>> check_progress({"stream_time": 5, "partition_time": [["in", 0, 5]]})["stream_time"]
    5
    >>> check_progress({"stream_time": "5"})
    Traceback (most recent call last):
    ...
    kspark._engine.documents.Invalid: 'stream_time' must be an integer, got '5'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Invalid", "need_int", "need_str", "need_dict", "need_list", "check_offsets",
           "check_progress"]


class Invalid(ValueError):  # noqa: N818 - its name shows in _spark's offset-log errors
    """A document of the wrong shape (the message names the field)."""


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def need_int(v: Any, what: str) -> int:
    if type(v) is not int:
        raise Invalid(f"{what} must be an integer, got {_show(v)}")
    return v


def need_str(v: Any, what: str) -> str:
    if type(v) is not str:
        raise Invalid(f"{what} must be a string, got {_show(v)}")
    return v


def need_dict(v: Any, what: str) -> dict:
    if type(v) is not dict:
        raise Invalid(f"{what} must be an object, got {_show(v)}")
    return v


def need_list(v: Any, what: str, size: int | None = None) -> list:
    if type(v) is not list or (size is not None and len(v) != size):
        raise Invalid(f"{what} must be a list{'' if size is None else f' of {size}'}, "
                      f"got {_show(v)}")
    return v


def check_offsets(doc: Any, what: str) -> dict[str, dict[str, int]]:
    """``{topic: {partition: offset}}`` (partitions as decimal strings, as JSON keeps them).

    >>> check_offsets({"t": {"0": 5}}, "offsets")
    {'t': {'0': 5}}
    """
    for topic, parts in need_dict(doc, what).items():
        for p, o in need_dict(parts, f"{what}[{topic!r}]").items():
            if not p.lstrip("-").isdigit():
                raise Invalid(f"{what}[{topic!r}] has partition {_show(p)}, not a number")
            need_int(o, f"{what}[{topic!r}][{p!r}]")
    return doc


def check_progress(doc: Any, fields: Mapping[str, tuple[str, ...]] | None = None,
                   nested: bool = True) -> dict[str, Any]:
    """A task's progress (see ``StreamTask.progress``) with the host's additions (``query``,
    ``batch``, ``previous``). ``fields``: each processor's declared ``progress_fields``;
    saved fields of a processor must be among them (processors not listed are ignored)."""
    doc = need_dict(doc, "the progress")
    known = {"stream_time", "stores", "partition_time", "punctuations", "processors",
             "query", "batch", "previous"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise Invalid(f"unknown field(s) {', '.join(map(repr, unknown))}")
    if "stream_time" in doc:
        need_int(doc["stream_time"], "'stream_time'")
    for name, observed in need_dict(doc.get("stores", {}), "'stores'").items():
        need_int(observed, f"'stores'[{name!r}]")
    for i, entry in enumerate(need_list(doc.get("partition_time", []), "'partition_time'")):
        t, p, ts = need_list(entry, f"'partition_time'[{i}]", 3)
        need_str(t, f"the topic of 'partition_time'[{i}]")
        need_int(p, f"the partition of 'partition_time'[{i}]")
        need_int(ts, f"the time of 'partition_time'[{i}]")
    for key, entry in need_dict(doc.get("punctuations", {}), "'punctuations'").items():
        interval, due = need_list(entry, f"'punctuations'[{key!r}]", 2)
        need_int(interval, f"the interval of 'punctuations'[{key!r}]")
        need_int(due, f"the due time of 'punctuations'[{key!r}]")
    for node, saved in need_dict(doc.get("processors", {}), "'processors'").items():
        for field, value in need_dict(saved, f"'processors'[{node!r}]").items():
            if fields is not None and node in fields and field not in fields[node]:
                raise Invalid(f"processor {node!r} has no progress field {field!r} (it keeps "
                              f"{', '.join(map(repr, fields[node])) or 'none'})")
            need_int(value, f"'processors'[{node!r}][{field!r}]")
    if "query" in doc:
        need_str(doc["query"], "'query'")
    if "batch" in doc:
        need_int(doc["batch"], "'batch'")
    if doc.get("previous") is not None:
        if not nested:
            raise Invalid("'previous' inside 'previous'")
        check_progress(doc["previous"], fields, nested=False)
    return doc
