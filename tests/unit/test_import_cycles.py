"""kspark's modules import one another without a loop, and every import of a kspark module
inside a function (a lazy import) is listed, with its reason, in ``lazy_imports.py``.

Every import counts, at module level or inside a function: a lazy import hides a
dependency, it does not remove it. Only one under ``if TYPE_CHECKING:`` never runs, and does
not count. A package's ``__init__`` counts only when it is named (``from kspark._kafka import
QuietLogger``), not because one of its modules is imported.

The one loop allowed is the DSL's types (``ALLOWED_GROUPS``): a KStream makes KTables and a
KTable makes KStreams, as Java's interfaces name one another.
"""

import ast
import pathlib

import kspark
from tests.unit.lazy_imports import LAZY_IMPORTS, REASONS

ROOT = pathlib.Path(kspark.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that can run, each with whether it is lazy (inside a function
    or lambda); those under ``if TYPE_CHECKING:`` are left out."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    todo = [(node, False) for node in ast.iter_child_nodes(tree)]
    while todo:
        node, lazy = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, lazy))
            continue
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend((n, inner) for n in node.orelse)
        else:
            todo.extend((n, inner) for n in ast.iter_child_nodes(node))
    return found


def _module_level_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run on import: not in functions, not under TYPE_CHECKING."""
    return [node for node, lazy in _imports(tree) if not lazy]


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool,
             modules: set[str]) -> set[str]:
    """The kspark modules an import statement runs."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ""
    if node.level:  # relative: from the package holding ``here``
        package = here.split(".")
        if not is_package:
            package.pop()
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    out = set()
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:  # ``from package import submodule``
            out.add(f"{base}.{alias.name}")
        elif base in modules:
            out.add(base)
    return out


def _scan() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """Each kspark module with the kspark modules it imports (lazily or not), and every lazy
    import as ``(module, line, imported module)``."""
    paths = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    lazy: list[tuple[str, int, str]] = []
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        graph[name] = set()
        for node, is_lazy in _imports(ast.parse(path.read_text(), str(path))):
            targets = _targets(node, name, is_package, modules) - {name}
            graph[name] |= targets
            lazy += [(name, node.lineno, t) for t in sorted(targets) if is_lazy]
    return graph, sorted(lazy)


def import_graph() -> dict[str, set[str]]:
    """Each kspark module and the kspark modules its imports run, lazy ones too."""
    return _scan()[0]


def lazy_imports() -> list[tuple[str, int, str]]:
    """Every lazy import of a kspark module: ``(module, line, imported module)``."""
    return _scan()[1]


def groups(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop per strongly connected group of modules, each as a path ``[a, b, ..., a]``."""
    return [_loop_in(graph, group) for group in groups(graph)]


def _loop_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest loop through the first module of ``group`` (breadth first)."""
    start = min(group)
    came_from: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & group):
            if w == start:  # back at the start: walk the path there backwards
                path = [v]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if w not in came_from:
                came_from[w] = v
                todo.append(w)
    raise AssertionError(f"no loop in {group}")


def test_the_cycle_finder_finds_a_loop_and_names_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_mark_functions_lazy_and_skip_type_checking():
    tree = ast.parse(
        "import kspark.errors\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from kspark.dsl import kstream\n"
        "else:\n    from kspark import serde\n"
        "try:\n    from kspark._engine import task\nexcept ImportError:\n    pass\n"
        "def f():\n    from kspark import config\n")
    names = sorted(ast.unparse(n) for n in _module_level_imports(tree))
    assert names == ["from kspark import serde", "from kspark._engine import task",
                     "from typing import TYPE_CHECKING", "import kspark.errors"]
    assert [ast.unparse(n) for n, lazy in _imports(tree) if lazy] == ["from kspark import config"]


# The strongly connected groups allowed, each with its reason.
ALLOWED_GROUPS = {
    frozenset({"kspark.dsl._aggregation", "kspark.dsl._forms", "kspark.dsl._join_steps",
               "kspark.dsl.branched", "kspark.dsl.cogrouped", "kspark.dsl.grouped",
               "kspark.dsl.grouped_table", "kspark.dsl.kstream", "kspark.dsl.ktable"}):
        "the DSL's types name one another (KStream.to_table, KTable.to_stream, group_by, "
        "branch, cogroup), as Java's KStream and KTable interfaces do",
}


def test_no_import_cycle_among_kspark_modules():
    """Lazy imports count: outside the DSL's types, kspark's imports form no loop."""
    graph = import_graph()
    assert "kspark._engine.task" in graph  # the walk found the modules
    found = [" -> ".join(_loop_in(graph, g)) for g in groups(graph)
             if frozenset(g) not in ALLOWED_GROUPS]
    assert found == [], "import cycles among kspark's modules:\n" + "\n".join(found)


def test_every_lazy_import_is_listed_with_its_reason():
    """A kspark module imported inside a function is in lazy_imports.py, with a reason:
    hoist it to the top of the module, or list it saying why it must wait."""
    unlisted = [f"{m}:{line} imports {t}" for m, line, t in lazy_imports()
                if (m, t) not in LAZY_IMPORTS]
    assert unlisted == [], ("lazy imports not in tests/unit/lazy_imports.py (hoist them, or "
                            "list them with a reason):\n" + "\n".join(unlisted))


def test_the_lazy_import_list_has_no_stale_entries_and_every_reason_is_known():
    found = {(m, t) for m, _, t in lazy_imports()}
    stale = sorted(f"{m} -> {t}" for m, t in LAZY_IMPORTS if (m, t) not in found)
    assert stale == [], "lazy_imports.py lists imports no longer made lazily:\n" + "\n".join(
        stale)
    bad = {k: v for k, v in LAZY_IMPORTS.items() if v.split(":")[0] not in REASONS
           or not v.split(":", 1)[-1].strip()}
    assert bad == {}, f"reasons must be '<kind>: <why>' with a kind of {sorted(REASONS)}"
