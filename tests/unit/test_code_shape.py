"""kspark stays a house a newcomer can live in: small functions, small modules."""

import ast
import pathlib

import kspark

KSPARK = pathlib.Path(kspark.__file__).parent
SPARK = KSPARK / "_spark"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def oversized(root: pathlib.Path) -> list[str]:
    """Every module under ``root`` over MAX_MODULE_LINES lines and every function (method,
    nested function) over MAX_FUNCTION_LINES, named by its path from ``root``."""
    long = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}: {node.name}() {lines} lines")
    return long


def test_the_size_check_walks_subpackages(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "pkg" / "deep.py").write_text(f"def long():\n{body}")
    (tmp_path / "small.py").write_text("def short():\n    return 1\n")
    assert oversized(tmp_path) == [f"pkg/deep.py: long() {MAX_FUNCTION_LINES + 1} lines"]


def test_no_function_is_over_60_lines_and_no_module_over_400():
    long = oversized(KSPARK)
    assert long == [], "split these into named parts (see docs/architecture.md):\n" + \
        "\n".join(long)


def test_no_host_state_is_glued_onto_the_engines_task():
    glued = ("changelog_offsets", "resumed_progress", "changelog_ids", "restored_records",
             "instance_id")
    for path in sorted(SPARK.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id in ("task", "t")):
                assert node.attr not in glued, f"{path.name} sets task.{node.attr}"
