"""Which executor runs each task of a micro-batch: sticky, state-first, spread evenly.

Kafka Streams keeps a stateful task on the instance that holds its stores; kspark's
micro-batch mode does the same with :func:`place`, recomputed before every micro-batch
from what the driver knows (the plan is pure: no Spark here):

- ``executors``: the live executors, each with the state location its tasks see
  (``host:state.dir`` as it resolves there, see ``host_state.state_location``);
- ``where``: each task's state location at its last commit (reported by the tasks);
- ``held``: per executor, how much of each task's state its disk holds (a probe job's
  answer, see :func:`held_state`), asked when the set of executors changes;
- ``previous``: the last placement.

A task goes, in order, to an executor at the state location of its last commit (the
previous one of those, if several share a disk), else to the executor whose disk holds
most of its state, else where it ran before, else to the least loaded executor. Each
stage's tasks are spread evenly (at most ceil(tasks / executors) per executor), since a
stage's tasks run at once: a task over that share moves only when executors are added.
The tasks settled on an executor (placed there, and committed there) take their share
first, those that came to it first before those that came later (:func:`settled_first`): a
task Spark ran elsewhere than placed (a lost executor's task retried on a survivor), or one
placed on a survivor while no replacement was there, never pushes an older task off, it
moves on itself, so a lost executor's tasks go to its replacement and every other task
stays.

While a micro-batch runs, executors it placed tasks on may be lost. Spark would keep their
tasks waiting for the lost executor (its locality wait); :func:`re_place_now` says when
the driver stops the batch's job instead, and :func:`tasks_to_rerun` which tasks then run
again, placed anew.

Example:
    >>> executors = {"0": "h1:/s", "1": "h2:/s"}
    >>> place([["0_0", "0_1", "0_2", "0_3"]], executors, {"0_0": "h2:/s"}, {}, {})
    {'0_0': '1', '0_1': '0', '0_2': '0', '0_3': '1'}
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from kspark._plan.racks import spread_copies
from kspark._engine.state.build import task_store_dir
from kspark._engine.state.checkpoint import read_checkpoint

__all__ = ["place", "held_state", "choose_executor", "settled_first", "re_place_now",
           "tasks_to_rerun", "keep_copies", "fail_over_to_copies", "settle_pins"]


def place(groups: Sequence[Sequence[str]], executors: Mapping[str, str],
          where: Mapping[str, str], held: Mapping[str, Mapping[str, int]],
          previous: Mapping[str, str], arrived: Mapping[str, int] | None = None
          ) -> dict[str, str]:
    """Task id -> executor id for every task of ``groups`` (the tasks of each stage), see
    the module's rules. ``executors`` must not be empty. ``arrived``: per task, when it
    came to its previous executor (a placement count; missing: from the start), see
    :func:`settled_first`.

    >>> place([["a", "b"]], {"0": "x", "1": "y"}, {}, {"1": {"a": 5}}, {"b": "1"})
    {'a': '1', 'b': '0'}
    """
    if not executors:
        raise ValueError("no live executor to place tasks on")
    ids = sorted(executors, key=_order)
    total = dict.fromkeys(ids, 0)
    out: dict[str, str] = {}
    for group in groups:
        share = -(-len(group) // len(ids))
        load = dict.fromkeys(ids, 0)

        def take(task: str, executor: str) -> bool:
            if task in out or load[executor] >= share:  # noqa: B023 - this group's loads
                return False
            out[task] = executor
            load[executor] += 1  # noqa: B023
            total[executor] += 1
            return True

        def least(candidates: Iterable[str]) -> str | None:
            free = [e for e in candidates if load[e] < share]  # noqa: B023
            return min(free, key=lambda e: (load[e], total[e], _order(e)),  # noqa: B023
                       default=None)

        for task in settled_first(group, executors, where, previous, arrived):  # 1. the disk
            there = [e for e in ids if where.get(task) and executors[e] == where[task]]
            choice = previous.get(task) if previous.get(task) in there else least(there)
            if choice is not None:
                take(task, choice)
        by_state = sorted((-score, task, e) for e in ids for task, score in
                          held.get(e, {}).items() if task in group and score > 0)
        for _, task, e in by_state:  # 2. the disk holding most of its state
            take(task, e)
        for task in group:  # 3. where it ran before, 4. the least loaded executor
            if task not in out and not (previous.get(task) in load
                                        and take(task, previous[task])):
                choice = least(ids)
                assert choice is not None, "a group's share fits all its tasks"
                take(task, choice)
    return out


def settled_first(group: Sequence[str], executors: Mapping[str, str],
                  where: Mapping[str, str], previous: Mapping[str, str],
                  arrived: Mapping[str, int] | None = None) -> list[str]:
    """``group``'s tasks in the order rule 1 (the disk of the last commit) seats them: first
    the settled ones, whose previous placement is an executor at the state location of
    their last commit, those that came to it first (``arrived``: per task, when it came to
    its previous executor; missing: from the start) before those that came later; then
    the others (a task that committed elsewhere than it was placed: Spark ran it there, as
    it does a lost executor's task after its locality wait); ties in ``group``'s order. So
    when an executor holds more last commits than its share (a task over the share moves),
    the task that came there last is the one over it: a lost executor's task that ran on a
    survivor moves on to the replacement, never a task settled there before.

    >>> settled_first(["0_0", "0_1"], {"1": "h1:/s"}, {"0_0": "h1:/s", "0_1": "h1:/s"},
    ...               {"0_0": "0", "0_1": "1"})
    ['0_1', '0_0']
    >>> settled_first(["0_0", "0_1"], {"1": "h1:/s"}, {"0_0": "h1:/s", "0_1": "h1:/s"},
    ...               {"0_0": "1", "0_1": "1"}, {"0_0": 7})
    ['0_1', '0_0']
    """
    since = arrived or {}

    def settled(task: str) -> bool:
        e = previous.get(task)
        return e is not None and e in executors and bool(where.get(task)) \
            and executors[e] == where[task]

    first = sorted((t for t in group if settled(t)), key=lambda t: since.get(t, 0))
    return first + [t for t in group if not settled(t)]


def re_place_now(lost: Collection[str], missing: int, running: int, waited_s: float,
                 wait_s: float) -> bool:
    """Whether the driver stops a running micro-batch's job now, to run again, placed anew,
    the tasks it had placed on the executors ``lost`` since it started. Spark keeps such a
    task waiting for its lost executor (``spark.locality.wait.process``), and the batch
    with it. So once nothing of the batch runs any more (``running`` tasks: every task left
    is one that waits for a lost executor), and the replacements are there (``missing``:
    executors fewer than the batch was placed on) or ``waited_s`` since the loss reached
    ``placement.replacement.wait.ms`` (``wait_s``), the job is stopped and those tasks go
    to the replacements (else to the executors left).

    >>> re_place_now({"0"}, 0, 0, 2.0, 15.0)
    True
    >>> re_place_now({"0"}, 1, 0, 2.0, 15.0)  # the replacement is not there yet
    False
    >>> re_place_now({"0"}, 1, 0, 15.0, 15.0)  # it did not come: the executors left
    True
    >>> re_place_now({"0"}, 0, 1, 2.0, 15.0)  # a task still runs: it is not stopped
    False
    >>> re_place_now(set(), 0, 0, 0.0, 15.0)
    False
    """
    return bool(lost) and running == 0 and (missing <= 0 or waited_s >= wait_s)


def tasks_to_rerun(ran: Sequence[str], done: Collection[str]) -> list[str]:
    """The tasks of a stopped micro-batch job (``ran``: the tasks it ran) to run again: every
    one not known to have finished (``done``). Those are the tasks placed on a lost
    executor, and any other that had not finished, such as one waiting for a retry (the
    job is stopped only when nothing of it runs); a task that finished is not run again,
    and keeps its executor.

    >>> tasks_to_rerun(["0_0", "0_1", "0_3"], {"0_1"})
    ['0_0', '0_3']
    """
    return [t for t in ran if t not in done]


def keep_copies(assigned: Mapping[str, str], executors: Collection[str], copies: int,
                warmups: Mapping[str, str] | None = None,
                tags: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, list[str]]:
    """Per live executor id, the tasks it keeps warm copies of (``num.standby.replicas``,
    micro-batch mode): each task's ``copies`` copies on the executors after its own
    (``assigned``) in id order, never on its own (fewer copies when there are fewer other
    executors) -- or, with client ``tags`` (executor id -> tag values, see ``racks.py``), on
    the executors whose tags differ most (:func:`~kspark._plan.racks.spread_copies`); and
    each warm-up copy (``warmups``: task -> the executor it is to move back to, see
    :func:`settle_pins`).

    >>> keep_copies({"0_0": "0", "0_1": "1", "0_2": "2"}, ["0", "1", "2"], 1)
    {'0': ['0_2'], '1': ['0_0'], '2': ['0_1']}
    >>> keep_copies({"0_0": "0", "0_1": "0"}, ["0", "1"], 1, {"0_1": "1"})
    {'0': [], '1': ['0_0', '0_1']}
    >>> keep_copies({"0_0": "0"}, ["0"], 1)
    {'0': []}
    >>> keep_copies({"0_0": "0", "0_1": "1"}, ["0", "1", "2"], 1,
    ...             tags={"0": {"zone": "a"}, "1": {"zone": "a"}, "2": {"zone": "b"}})
    {'0': [], '1': [], '2': ['0_0', '0_1']}
    """
    ids = sorted(executors, key=_order)
    out: dict[str, set[str]] = {e: set() for e in ids}
    live = {t: e for t, e in assigned.items() if e in out}
    if tags and any(tags.get(e) for e in ids):
        out = {e: set(tasks) for e, tasks in spread_copies(live, ids, copies, tags).items()}
    else:
        for task, e in live.items():
            i = ids.index(e)
            for k in range(1, min(copies, len(ids) - 1) + 1):
                out[ids[(i + k) % len(ids)]].add(task)
    for task, e in (warmups or {}).items():
        if e in out and assigned.get(task) != e:
            out[e].add(task)
    return {e: sorted(tasks) for e, tasks in out.items()}


def fail_over_to_copies(lost: Iterable[str], copies: Mapping[str, Mapping[str, int]]
                        ) -> dict[str, str]:
    """Each task of ``lost`` (its executor is gone) that a live executor keeps a copy of, to
    the executor whose copy is furthest along (``copies``: live executor id -> {task:
    changelog position of its copy}), so that it restores only the changelog's tail;
    a task without a copy is left out (placed as any other).

    >>> fail_over_to_copies(["0_0", "0_1"], {"1": {"0_0": 40}, "2": {"0_0": 42}})
    {'0_0': '2'}
    """
    out: dict[str, str] = {}
    for task in lost:
        held = [(position, e) for e, tasks in copies.items() for t, position in tasks.items()
                if t == task]
        if held:
            out[task] = min(held, key=lambda h: (-h[0], _order(h[1])))[1]
    return out


def settle_pins(pinned: Mapping[str, str], balanced: Mapping[str, str],
                lags: Mapping[tuple[str, str], int], acceptable_lag: int) -> dict[str, str]:
    """Of the tasks ``pinned`` to the executor of the copy they failed over to (over its
    share of the stage), those that stay there: each until the executor the balanced
    placement gives it (``balanced``) keeps a warm-up copy of it whose last update applied
    at most ``acceptable_lag`` records (``lags``: (executor, task) -> records; Kafka
    Streams' ``acceptable.recovery.lag``): then it moves there, restoring only the tail.

    >>> settle_pins({"0_0": "1", "0_1": "1"}, {"0_0": "2", "0_1": "2"},
    ...             {("2", "0_0"): 3, ("2", "0_1"): 500}, 100)
    {'0_1': '1'}
    >>> settle_pins({"0_0": "1"}, {"0_0": "1"}, {}, 100)
    {}
    """
    out: dict[str, str] = {}
    for task, e in pinned.items():
        home = balanced.get(task)
        lag = lags.get((home, task)) if home is not None else None
        if home != e and (lag is None or lag > acceptable_lag):
            out[task] = e
    return out


def _order(executor: str) -> tuple[int, str]:
    """Executor ids in numeric order where numeric ("2" before "10")."""
    return (int(executor), "") if executor.isdigit() else (1 << 62, executor)


def held_state(state_dir: str, app_id: str, task_ids: Iterable[str]) -> dict[str, int]:
    """Per task id, how much of its state ``state_dir`` holds here: 1 plus its changelog
    offsets for a task with a valid local checkpoint (a fresher copy counts more); tasks
    with none are left out.

    >>> held_state("/nonexistent", "app", ["0_0"])
    {}
    """
    out: dict[str, int] = {}
    for task_id in task_ids:
        offsets = read_checkpoint(task_store_dir(state_dir, app_id, task_id) / ".checkpoint")
        if offsets is not None:
            out[task_id] = 1 + sum(offsets.values())
    return out


def choose_executor(free: Mapping[str, int], last: str | None,
                    held: Mapping[str, int]) -> str | None:
    """The executor a real-time stream thread's next Spark job should prefer, among those
    with a free task slot (``free``: executor id -> free slots): the one it ran on last
    (its stores are there, its Python worker may still hold them open), else the one whose
    disk holds most of its tasks' state (``held``: executor id -> score, see
    :func:`held_state`), else the least loaded; None when no executor has a free slot
    (the job then runs wherever Spark finds one first: a lost executor's replacement).

    >>> choose_executor({"0": 1, "1": 1}, "1", {"0": 9})
    '1'
    >>> choose_executor({"0": 1, "1": 1}, "2", {"0": 9})
    '0'
    >>> choose_executor({"0": 1, "1": 2}, None, {})
    '1'
    >>> choose_executor({"0": 0}, "0", {}) is None
    True
    """
    open_ = {e: n for e, n in free.items() if n > 0}
    if not open_:
        return None
    if last in open_:
        return last
    scored = [(score, e) for e, score in held.items() if e in open_ and score > 0]
    if scored:
        return min(scored, key=lambda s: (-s[0], _order(s[1])))[1]
    return min(open_, key=lambda e: (-open_[e], _order(e)))
