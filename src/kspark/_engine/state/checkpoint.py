"""The task's checkpoint files: the changelog offset each local store is up to date with,
and the task's progress (stream time, partition times, punctuation due times).

``.checkpoint`` has Kafka Streams' format: a version line (0), a count line, then one
``<topic> <partition> <offset>`` line per store changelog (an invalid one counts as missing:
the stores are wiped and restored). ``.progress`` is JSON; Kafka Streams keeps the same
facts in its committed offsets' metadata.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kspark.errors import CorruptStateError

__all__ = ["read_checkpoint", "write_checkpoint", "read_progress", "write_progress"]


def read_checkpoint(path: Path) -> dict[tuple[str, int], int] | None:
    """The offsets in ``path``, or None if it is missing or invalid (then state is rebuilt)."""
    try:
        lines = Path(path).read_text().split("\n")
        if lines[0].strip() != "0":
            return None
        n = int(lines[1])
        out = {}
        for line in lines[2:2 + n]:
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
        return out if len(out) == n else None
    except (OSError, ValueError, IndexError):
        return None


def write_checkpoint(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Write ``offsets`` atomically (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(offsets.items()))
    _write_atomically(path, f"0\n{len(offsets)}\n{body}")


def read_progress(path: Path) -> dict | None:
    """A JSON object kspark saved in ``path`` (a task's progress, its changelogs' topic
    ids), or None if the file is missing. A file that is not a JSON object is a
    CorruptStateError naming it: kspark writes these files atomically, so it was damaged.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / ".progress"
    >>> write_progress(p, {"stream_time": 42}); read_progress(p)
    {'stream_time': 42}
    """
    try:
        text = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        data = e
    if not isinstance(data, dict):
        why = f"not JSON ({data})" if isinstance(data, Exception) else "not a JSON object"
        raise CorruptStateError(
            f"the file {str(path)!r} is {why}: it was damaged or not written by kspark. Delete "
            f"it, or the task's whole directory {str(Path(path).parent)!r} (its stores are then "
            f"restored from their changelogs and its stream time starts afresh)")
    return data


def write_progress(path: Path, progress: dict) -> None:
    """Write ``progress`` atomically (temp file, then rename)."""
    _write_atomically(Path(path), json.dumps(progress, sort_keys=True))


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
