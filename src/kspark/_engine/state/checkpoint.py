"""The task's checkpoint file: the changelog offset each local store is up to date with.

The format is Kafka Streams' ``.checkpoint``: a version line (0), a count line, then one
``<topic> <partition> <offset>`` line per store changelog.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_checkpoint", "write_checkpoint"]


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
    tmp = path.with_suffix(".tmp")
    body = "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(offsets.items()))
    tmp.write_text(f"0\n{len(offsets)}\n{body}")
    os.replace(tmp, path)
