"""kspark's modules import one another without a loop.

Only module-level imports count: those that run when a module is first imported. An import
inside a function runs later, and one under ``if TYPE_CHECKING:`` never runs. A package's
``__init__`` counts only when it is named (``from kspark._kafka import QuietLogger``), not
because one of its modules is imported.
"""

import ast
import pathlib

import kspark

ROOT = pathlib.Path(kspark.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run on import: not in functions, not under TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo = list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))
    return found


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


def import_graph() -> dict[str, set[str]]:
    """Each kspark module and the kspark modules its module-level imports run."""
    paths = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    modules = set(paths)
    graph = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        graph[name] = set().union(*(_targets(n, name, is_package, modules)
                                    for n in _module_level_imports(tree))) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One loop per strongly connected group of modules (Tarjan), each as a path
    ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

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
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_loop_in(graph, group) for group in groups]


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


def test_module_level_imports_skip_functions_and_type_checking():
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


def test_no_import_cycle_among_kspark_modules():
    graph = import_graph()
    assert "kspark._engine.task" in graph  # the walk found the modules
    found = [" -> ".join(loop) for loop in cycles(graph)]
    assert found == [], "import cycles among kspark's modules:\n" + "\n".join(found)
