"""Every code block of README.md and docs/*.md that is meant to run runs (issue 57, item 8).

- Each ```python block compiles, and is marked on the line(s) just above its fence either
  ``<!-- runnable -->`` or ``<!-- not run: <reason> -->``; an unmarked block fails here
  with its file and line. A runnable block runs in-process in a fresh namespace with its
  stdout captured (they are TopologyTestDriver examples: no broker, no Spark); what it
  prints must be what the comment lines right after its ``print(...)`` show. A block not
  run still has its ``kspark`` imports executed, so it names nothing kspark lacks.
- In ```bash / ```sh / ```console blocks, each command that starts with ``kspark`` (after
  an optional ``$ `` prompt or ``VAR=value`` assignments) is parsed by kspark's own CLI
  parser, so the docs show no option that does not exist. ``<app>`` placeholders and
  ``[--opt value ...]`` optional parts are read as plain words.

The convention is described in docs/testing.md ("Code blocks in the docs").
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import sys
import types
from unittest import mock

import pytest

from kspark._cli.main import build_parser
from tests.doc_blocks import Block, blocks, documents

RUNNABLE = "<!-- runnable -->"
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>\S.*?) -->")
PYTHON = ("python", "py", "python3")
SHELL = ("bash", "sh", "shell", "console")
OPERATORS = set("|&;<>()")

ALL = [b for doc in documents() for b in blocks(doc)]
PY = [b for b in ALL if b.lang in PYTHON]


def run_marker(block: Block) -> str | None:
    """``"run"``, ``"not run: <reason>"`` or None, from the comments above the block."""
    if RUNNABLE in block.markers:
        return "run"
    reasons = [m["reason"] for m in map(NOT_RUN.fullmatch, block.markers) if m]
    return f"not run: {reasons[0]}" if reasons else None


def shown_output(code: str) -> str:
    """The comment lines right after each ``print(...)`` line, without their ``# ``: what
    the block says it prints."""
    lines, shown = code.splitlines(), []
    for i, line in enumerate(lines):
        if line.strip().startswith("print("):
            for after in lines[i + 1:]:
                if not after.strip().startswith("#"):
                    break
                shown.append(after.strip()[1:].strip())
    return "\n".join(shown)


def test_every_python_block_is_marked_run_or_not_run():
    unmarked = [b.where for b in PY if run_marker(b) is None]
    assert not unmarked, ("mark each of these <!-- runnable --> or <!-- not run: reason --> "
                          "on the line before its fence (docs/testing.md):\n" + "\n".join(unmarked))
    both = [b.where for b in PY if RUNNABLE in b.markers and any(map(NOT_RUN.fullmatch,
                                                                     b.markers))]
    assert not both, f"marked both runnable and not run: {both}"


def test_every_run_marker_sits_above_a_python_block():
    def is_marker(line):
        return line.strip() == RUNNABLE or NOT_RUN.fullmatch(line.strip()) is not None

    for doc in documents():
        in_text = sum(map(is_marker, doc.read_text(encoding="utf-8").splitlines()))
        on_python = sum(is_marker(m) for b in PY if b.path == doc for m in b.markers)
        assert in_text == on_python, f"{doc.name}: a run marker not just above a ```python block"


def test_the_docs_have_their_blocks():
    """A guard for the extractor: finding no blocks would pass everything else."""
    assert len(PY) >= 30
    assert sum(run_marker(b) == "run" for b in PY) >= 15
    assert len(KSPARK_LINES) >= 15


@pytest.mark.parametrize("block", PY, ids=[b.where for b in PY])
def test_each_python_block_compiles_and_the_runnable_ones_run(block):
    compiled = compile(block.code, block.where, "exec", dont_inherit=True)
    if run_marker(block) != "run":
        kspark_imports(block)
        return
    module = types.ModuleType(f"doc_block_{block.path.stem}_{block.line}".replace("-", "_"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), mock.patch.dict(sys.modules, {module.__name__: module}):
        exec(compiled, module.__dict__)       # a module of its own, as a pasted script has
    assert out.getvalue().strip() == shown_output(block.code), (
        f"{block.where} printed what its comments after print(...) do not show")


def kspark_imports(block: Block) -> None:
    """Execute the block's top-level imports from kspark: a fragment still names real API."""
    tree = ast.parse(block.code)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
               and any(name.startswith("kspark") for name in imported_modules(node))]
    exec(compile(ast.Module(imports, []), block.where, "exec", dont_inherit=True), {})


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The module names an import statement reads."""
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [alias.name for alias in node.names]


def kspark_commands(block: Block) -> list[tuple[str, list[str]]]:
    """(line as shown, kspark's arguments) of each kspark command in a shell block."""
    logical = block.code.replace("\\\n", " ").splitlines()
    found = []
    for line in logical:
        text = re.sub(r"^\s*\$ ", "", line)
        text = re.sub(r"<([A-Za-z][\w.-]*)>", r"\1", text)      # <app>: a placeholder
        if not re.search(r"(^|[\s;&|])kspark\s", text):
            continue
        for command in split_commands(text):
            while command and re.fullmatch(r"[A-Za-z_]\w*=\S*", command[0]):
                command = command[1:]                           # VAR=value kspark ...
            if command and command[0] == "kspark":
                words = [w for w in (w.strip("[]") for w in command[1:]) if w not in ("", "...")]
                found.append((line.strip(), words))
    return found


def split_commands(text: str) -> list[list[str]]:
    """The words of each simple command of a shell line, up to its first redirection."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, words, redirected = [], [], False
    for token in lexer:
        if set(token) <= OPERATORS:
            if token in ("&&", "||", ";", "|", "&"):
                commands.append(words)
                words, redirected = [], False
            else:
                if not redirected and words and words[-1].isdigit():
                    words.pop()                                 # 2>&1: a descriptor
                redirected = True
        elif not redirected:
            words.append(token)
    return [*commands, words]


KSPARK_LINES = [(b, line, words) for b in ALL if b.lang in SHELL
                for line, words in kspark_commands(b)]


@pytest.mark.parametrize("block, line, words", KSPARK_LINES,
                         ids=[f"{b.where}:{' '.join(w[:2])}" for b, _, w in KSPARK_LINES])
def test_each_documented_kspark_command_line_parses(block, line, words, capsys):
    try:
        build_parser().parse_args(words)
    except SystemExit as exit:
        assert exit.code == 0, (f"{block.where}: `{line}` is not a valid kspark command "
                                f"line: {capsys.readouterr().err.strip()}")


def test_the_shell_line_reader(tmp_path):
    (b,) = blocks_of(tmp_path, "```bash\n$ kspark reset --application-id <app> \\\n"
                     "    --dry-run >> log 2>&1 && X=1 kspark run m:f [--set k=v ...]\n```\n")
    assert kspark_commands(b) == [
        ("$ kspark reset --application-id <app>      --dry-run >> log 2>&1 && X=1 kspark "
         "run m:f [--set k=v ...]", ["reset", "--application-id", "app", "--dry-run"]),
        ("$ kspark reset --application-id <app>      --dry-run >> log 2>&1 && X=1 kspark "
         "run m:f [--set k=v ...]", ["run", "m:f", "--set", "k=v"])]


def test_a_printed_value_is_checked_against_the_comment_after_print():
    assert shown_output("x = 1\nprint(x)\n# 1\nprint(2)  # two\n    # 2\ny = 3\n") == "1\n2"


def blocks_of(tmp_path, markdown: str) -> list[Block]:
    """The blocks of a Markdown text, written to a file under ``tmp_path``."""
    (tmp_path / "doc.md").write_text(markdown)
    return blocks(tmp_path / "doc.md")
