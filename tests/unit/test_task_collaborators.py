"""A hosted task uses what it is handed: no module-level singleton is reached from the task
lifecycle or its drivers, only from the worker's task manager (``_host/task_manager.py``)."""

import ast
import inspect
import pathlib

import kspark
from kspark._host.port import CountingCollector, QueryListener, TaskShelf
from kspark._iq.host import QueryHost
from kspark._host.task_manager import NO_QUERIES, TaskManager, task_manager
from kspark._spark.routing import RoutingCollector

KSPARK = pathlib.Path(kspark.__file__).parent
SINGLETONS = {"registry", "query_host", "installed_task_hooks"}
SINGLETON_MODULES = {"kspark._worker", "kspark._iq.host"}
# the task lifecycle, and the drivers that run it (they get their manager handed, or ask
# task_manager() for this worker's)
GUARDED = ("_host/task.py", "_spark/task_batch.py", "_spark/realtime/thread_loop.py",
           "_spark/realtime/stream_thread.py")


def singletons_reached(source: str) -> list[str]:
    """Every call of a process-wide singleton's accessor and every import of its module in
    ``source``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else None
            if name in SINGLETONS:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.ImportFrom) and node.module in SINGLETON_MODULES:
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name in SINGLETON_MODULES]
    return found


def test_the_guard_sees_calls_and_imports():
    source = ("from kspark._worker import registry\nimport kspark._iq.host\n"
              "def f():\n    registry().pop('tasks', 1)\n    m.query_host().hold(t)\n")
    assert singletons_reached(source) == [
        "1: from kspark._worker import ...", "2: import kspark._iq.host",
        "4: registry()", "5: query_host()"]


def test_the_task_lifecycle_and_its_drivers_reach_no_module_level_singleton():
    reached = {path: singletons_reached((KSPARK / path).read_text()) for path in GUARDED}
    assert reached == {path: [] for path in GUARDED}, \
        "hand it through the task manager (_host/task_manager.py) instead"


def test_the_task_manager_is_the_one_place_that_reaches_them():
    assert singletons_reached((KSPARK / "_host/task_manager.py").read_text())


def _methods(protocol):
    return {n: inspect.signature(f).parameters.keys() for n, f in vars(protocol).items()
            if inspect.isfunction(f) and not n.startswith("_")}


def test_the_collaborators_meet_their_protocols():
    """The production ones and the test manager's defaults, member by member (the
    protocols are mypy's, not runtime-checkable)."""
    for protocol, impls in ((QueryListener, (QueryHost, type(NO_QUERIES))),
                            (TaskShelf, (TaskManager,))):
        for impl in impls:
            assert _methods(protocol).items() <= _methods(impl).items(), impl
    collector = RoutingCollector(None, None, 0)  # type: ignore[arg-type]
    assert {"sent", "logged"} <= set(CountingCollector.__annotations__)
    assert (collector.sent, collector.logged) == (0, 0)
    assert _methods(CountingCollector).keys() <= _methods(RoutingCollector).keys()


def test_the_process_manager_is_one_per_process():
    assert task_manager() is task_manager()
