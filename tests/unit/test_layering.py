"""Only kspark._spark imports pyspark; kspark.testing loads neither pyspark nor confluent_kafka."""

import ast
import pathlib
import subprocess
import sys

import kspark

ROOT = pathlib.Path(kspark.__file__).parent


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_spark_package_imports_pyspark():
    offenders = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                 if "pyspark" in _imports(p) and p.relative_to(ROOT).parts[0] != "_spark"]
    assert offenders == []


def test_testing_package_imports_no_spark_or_kafka_client():
    code = ("import sys, kspark.testing, kspark; "
            "print(sorted({m.split('.')[0] for m in sys.modules}"
            " & {'pyspark', 'confluent_kafka'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_engine_does_not_import_public_dsl_or_hosts():
    for p in (ROOT / "_engine").rglob("*.py"):
        src = p.read_text()
        for banned in ("kspark.dsl", "kspark._spark", "kspark._kafka", "kspark.testing"):
            assert banned not in src, f"{p.name} imports {banned}"


def test_the_task_runtime_imports_no_spark_host():
    """``kspark._host`` (the task lifecycle, once for both modes) stays below the Spark
    glue: the drivers import it, never the other way round."""
    for p in (ROOT / "_host").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("kspark._spark", "pyspark")), \
                    f"_host/{p.name} imports {name}"


def test_planning_is_pure():
    """``kspark._plan`` imports neither pyspark nor the Spark glue nor the task runtime:
    a plan is data, made and tested without Spark."""
    for p in (ROOT / "_plan").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("kspark._spark", "kspark._host", "pyspark")), \
                    f"_plan/{p.name} imports {name}"
