"""What a Python worker keeps between Spark tasks: one registry (kspark._worker)."""

import pickle

import pytest

from kspark._host.hooks import FailAfterCommit, TaskHooks
from kspark._worker import KINDS, WorkerRegistry, registry


class _Client:
    def __init__(self, log, name, fail=False):
        self.log, self.name, self.fail = log, name, fail

    def close(self):
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError("broken")


def test_close_closes_one_applications_entries_tasks_before_clients():
    log: list = []
    r = WorkerRegistry()
    r.put("producers", ("a", "p"), _Client(log, "producer"))
    r.put("tasks", ("a", "0_0"), (_Client(log, "task"), object()))
    r.put("groups", ("b", "g"), _Client(log, "other app"))
    r.close("a")
    assert log == ["task", "producer"]
    assert r.get("groups", ("b", "g")) is not None


def test_a_failing_close_does_not_stop_the_others():
    log: list = []
    r = WorkerRegistry()
    r.put("producers", ("a", 1), _Client(log, "one", fail=True))
    r.put("producers", ("a", 2), _Client(log, "two"))
    r.close()
    assert sorted(log) == ["one", "two"] and list(r.items("producers")) == []


def test_get_makes_once_and_pop_and_forget_remove():
    r = WorkerRegistry()
    made = []
    assert r.get("admins", ("", 1), lambda: made.append(1) or "x") == "x"
    assert r.get("admins", ("", 1), lambda: made.append(1) or "y") == "x" and made == [1]
    r.put("transactions", ("a", 1), "tx")
    r.put("transactions", ("a", 2), "tx")
    r.forget("transactions", "tx")
    assert list(r.items("transactions")) == []
    assert r.pop("admins", ("", 1)) == "x" and r.pop("admins", ("", 1)) is None
    with pytest.raises(KeyError):
        r.get("no such kind", ())


def test_the_process_registry_pickles_by_reference_and_hooks_by_value():
    assert set(KINDS) >= {"producers", "transactions", "tasks", "globals"}
    assert registry() is registry()
    hooks = TaskHooks(after_commit=FailAfterCommit(("0_0:1",)))
    assert pickle.loads(pickle.dumps(hooks)) == hooks
    with pytest.raises(RuntimeError, match="injected failure: task 0_0 after committing batch 1"):
        hooks.after_commit("0_0", ("q", 1), 0)
