"""docs/from-java.md's and docs/migrating-from-java.md's Python blocks are true: every one
compiles, and those marked ``<!-- runnable -->`` (on the line before the block's opening
fence) run, asserting what the guide says kspark does."""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "from-java.md"
MIGRATION = DOCS / "migrating-from-java.md"
MARKER = "<!-- runnable -->"


def python_blocks(guide=GUIDE):
    """(line of the opening fence, code, runnable) of each ```python block of the guide."""
    text = guide.read_text(encoding="utf-8")
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((line, m.group(1), before.strip() == MARKER))
    return blocks


BLOCKS = python_blocks()
MIGRATION_BLOCKS = python_blocks(MIGRATION)


def test_the_guide_has_enough_runnable_blocks():
    assert len(BLOCKS) >= 8
    assert sum(runnable for _, _, runnable in BLOCKS) >= 5
    # every marker sits just before a python block
    markers = re.findall(rf"^{re.escape(MARKER)}$", GUIDE.read_text(encoding="utf-8"), re.M)
    assert len(markers) == sum(r for _, _, r in BLOCKS)


@pytest.mark.parametrize("line, code, runnable", BLOCKS, ids=[f"line{b[0]}" for b in BLOCKS])
def test_each_block_compiles_and_the_runnable_ones_run(line, code, runnable):
    compiled = compile(code, f"{GUIDE}:{line}", "exec")
    if runnable:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compiled, {"__name__": f"from_java_line{line}"})


@pytest.mark.parametrize("line, code, runnable", MIGRATION_BLOCKS,
                         ids=[f"line{b[0]}" for b in MIGRATION_BLOCKS])
def test_each_migration_guide_block_compiles_and_the_runnable_ones_run(line, code, runnable):
    assert MIGRATION_BLOCKS and all(r for _, _, r in MIGRATION_BLOCKS)
    compiled = compile(code, f"{MIGRATION}:{line}", "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compiled, {"__name__": f"migration_line{line}"})
