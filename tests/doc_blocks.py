"""The fenced code blocks of README.md and docs/*.md, for the tests that keep them true.

A block is its file, the line of its opening fence, its language (the fence's info word,
``""`` when none), its text (dedented by the fence's indentation, for a block inside a list
item) and the HTML comments on the lines just before the fence (``<!-- runnable -->``,
``<!-- not run: a fragment -->``, ``<!-- quick-start -->`` ...), nearest last.

>>> import pathlib, tempfile
>>> doc = pathlib.Path(tempfile.mkdtemp()) / "d.md"
>>> _ = doc.write_text("Text\\n<!-- runnable -->\\n```python\\nprint(1)\\n```\\n"
...                    "- item\\n\\n  ```bash\\n  kspark --help\\n  ```\\n")
>>> [(b.line, b.lang, b.code, b.markers) for b in blocks(doc)]
[(3, 'python', 'print(1)\\n', ['<!-- runnable -->']), (8, 'bash', 'kspark --help\\n', [])]
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

__all__ = ["ROOT", "Block", "blocks", "documents"]

ROOT = pathlib.Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<lang>[\w+-]*)\s*$")
COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and the comments above it."""

    path: pathlib.Path
    line: int
    lang: str
    code: str
    markers: list[str]

    @property
    def where(self) -> str:
        """``docs/x.md:12``, the block's file (from the repository root) and fence line."""
        try:
            name = self.path.relative_to(ROOT).as_posix()
        except ValueError:
            name = str(self.path)
        return f"{name}:{self.line}"


def blocks(path: pathlib.Path) -> list[Block]:
    """Every fenced block of the Markdown file ``path``, in order (see the module's example)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = "".join(line[indent:] + "\n" if line[:indent].strip() == "" else line + "\n"
                       for line in lines[i + 1:end])
        found.append(Block(path, i + 1, opening["lang"], body, _comments_before(lines, i)))
        i = end + 1
    return found


def _comments_before(lines: list[str], i: int) -> list[str]:
    """The HTML comment lines directly above line ``i`` (0-based), top to bottom."""
    start = i
    while start > 0 and COMMENT.match(lines[start - 1]):
        start -= 1
    return [line.strip() for line in lines[start:i]]


def documents() -> list[pathlib.Path]:
    """README.md and every docs/*.md, in name order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
