"""The Spark host stays a house a newcomer can live in: small functions, small modules."""

import ast
import pathlib

import kspark

SPARK = pathlib.Path(kspark.__file__).parent / "_spark"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def test_no_spark_host_function_is_over_60_lines_and_no_module_over_400():
    long = []
    for path in sorted(SPARK.glob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"{path.name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.name}: {node.name}() {lines} lines")
    assert long == [], "split these into named parts (see docs/architecture.md)"


def test_no_host_state_is_glued_onto_the_engines_task():
    glued = ("changelog_offsets", "resumed_progress", "changelog_ids", "restored_records",
             "instance_id")
    for path in sorted(SPARK.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id in ("task", "t")):
                assert node.attr not in glued, f"{path.name} sets task.{node.attr}"
