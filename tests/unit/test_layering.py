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


# Each package by concern and the packages it must never import (docs/architecture.md,
# "Packages and their import directions"): clients at the bottom, then the application's
# own protocols over Kafka, the task runtime and interactive queries, the client, the Spark
# glue; the local development infrastructure only where something starts it.
NEVER = {
    "_kafka": ("_local", "_control", "_iq", "_host", "_spark", "_cli", "_client"),
    "_control": ("_local", "_host", "_iq", "_spark", "_cli", "_client"),
    "_engine": ("_kafka", "_local", "_control", "_iq", "_host", "_spark", "_cli", "_client"),
    "_iq": ("_local", "_host", "_spark", "_cli", "_client"),
    "_host": ("_local", "_spark", "_cli", "_client"),
    "_client": ("_local", "_spark", "_cli"),
}
# who may start a broker, a cluster or a registry, or fetch Kafka's jars
STARTS_LOCAL_INFRA = {"_cli", "demo", "_spark/connect_server.py", "_spark/located.py"}


def _kspark_imports(path: pathlib.Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        out.update(n for n in names if n.startswith("kspark."))
    return out


def test_each_package_imports_only_downward():
    found = []
    for package, banned in NEVER.items():
        for p in (ROOT / package).rglob("*.py"):
            for name in _kspark_imports(p):
                if name.split(".")[1] in banned:
                    found.append(f"{p.relative_to(ROOT)} imports {name}")
    assert found == []


def test_only_launchers_import_the_local_infrastructure():
    found = []
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in ("_local", *STARTS_LOCAL_INFRA) or str(rel) in STARTS_LOCAL_INFRA:
            continue
        found += [f"{rel} imports {n}" for n in _kspark_imports(p) if n.startswith("kspark._local")]
    assert found == []


def test_every_package_says_what_lives_there():
    missing = [str(p.relative_to(ROOT)) for p in ROOT.rglob("__init__.py")
               if not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()]
    assert missing == []


def test_code_below_config_reads_defaults_from_the_leaf():
    """``kspark.config`` imports the engine, the graph, the clients and the serdes, so none
    of them imports it back: they read a key's default from ``_config_defaults`` (the
    packages above config, ``_control`` and ``_host`` and up, import it)."""
    found = [f"{p.relative_to(ROOT)} imports kspark.config"
             for package in ("_engine", "_graph", "_kafka", "serde")
             for p in (ROOT / package).rglob("*.py") if "kspark.config" in _kspark_imports(p)]
    assert found == []
