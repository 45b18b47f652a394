"""What one Python worker process keeps between Spark tasks, in one registry.

A Spark host worker runs task after task of micro-batch after micro-batch. It keeps Kafka
clients (range readers, producers, group readers, admins), exactly-once transactions, tasks
whose in-memory stores are still current, and the global stores' copies, so the next batch
need not rebuild them. Everything it keeps lives here, under an entry kind and a key whose
first part is the application id ("" for clients that every application on the same
cluster shares), so an application can close what it holds. The kept tasks (``tasks``)
are the worker's task manager's (``_host/task_manager.py``), which hands each task what it
uses: the task lifecycle itself never reaches this registry.

The rule about what travels to executors by value, stated once: Spark sends a stage's
function to its workers pickled *by value*, with every module-level name the function's
closure refers to. A dict or object named that way would travel as a copy and be thrown
away after the task. So stage code reaches the registry only through :func:`registry`, a
function of an importable module, which pickles by reference and finds the worker's own
registry; and what a stage function captures (plans, config, settings, hooks) must be
plain data that may be copied.

Example:
    >>> r = WorkerRegistry()
    >>> class Client:
    ...     def close(self): print("closed")
    >>> _ = r.put("producers", ("app", "0_0"), Client())
    >>> r.get("producers", ("app", "0_0")) is not None
    True
    >>> r.close("other")
    >>> r.close("app")
    closed
    >>> r.get("producers", ("app", "0_0")) is None
    True
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["WorkerRegistry", "registry", "KINDS"]

log = logging.getLogger("kspark")

T = TypeVar("T")

# What a worker keeps: Kafka clients, transactions, tasks cached with their host state,
# and the global stores' copies.
KINDS = ("range_readers", "producers", "groups", "admins", "transactions", "tasks", "globals")


class WorkerRegistry:
    """Entries by kind (one of :data:`KINDS`) and key ``(application id, ...)``."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[tuple, Any]] = {k: {} for k in KINDS}
        self._making = threading.RLock()  # threads of a worker (tasks opening at once)

    def get(self, kind: str, key: tuple, make: Callable[[], T] | None = None) -> Any:
        """The entry, or (with ``make``) a new one made and kept (once, whichever thread
        asks first), or None."""
        entries = self._entries[kind]
        found = entries.get(key)
        if found is None and make is not None:
            with self._making:
                found = entries.get(key)
                if found is None:
                    found = entries[key] = make()
        return found

    def put(self, kind: str, key: tuple, value: T) -> T:
        self._entries[kind][key] = value
        return value

    def pop(self, kind: str, key: tuple) -> Any:
        """The entry, removed (None if there was none)."""
        return self._entries[kind].pop(key, None)

    def forget(self, kind: str, value: Any) -> None:
        """Remove every entry of ``kind`` that is ``value`` (not closing it)."""
        entries = self._entries[kind]
        for key in [k for k, v in entries.items() if v is value]:
            del entries[key]

    def items(self, kind: str) -> Iterator[tuple[tuple, Any]]:
        return iter(list(self._entries[kind].items()))

    def clear(self, kind: str) -> None:
        """Forget every entry of ``kind`` without closing it (as a fresh worker would)."""
        self._entries[kind].clear()

    def close(self, app_id: str | None = None) -> None:
        """Close and remove what ``app_id`` holds (everything when None); tasks first, then
        transactions, then clients. A failing close is logged, never raised."""
        for kind in reversed(KINDS):
            entries = self._entries[kind]
            for key in [k for k in entries if app_id is None or k[0] == app_id]:
                value = entries.pop(key)
                for item in value if isinstance(value, tuple) else (value,):
                    close = getattr(item, "close", None)
                    if callable(close):
                        try:
                            close()
                        except Exception as e:  # noqa: BLE001 - closing the rest matters more
                            log.warning("closing %s %r failed: %s", kind, key, e)


_REGISTRY = WorkerRegistry()


def registry() -> WorkerRegistry:
    """This process's registry (see the module's rule on what travels by value)."""
    return _REGISTRY
