"""Where tasks run and what their changelogs are: the pieces of sticky placement that need
no cluster (micro-batch placement, the executor a real-time thread prefers, a marker's ``where``,
changelog topic configs). The
cluster itself is checked in tests/integration/test_standalone_cluster.py."""

from __future__ import annotations

import pytest

from kspark import Serdes
from kspark._engine.state.build import changelog_config
from kspark._engine.state.checkpoint import write_checkpoint
from kspark._kafka.transactions import Marker, decode_marker, encode_marker
from kspark._host.state import moved, state_location
from kspark._plan.placement import (choose_executor, held_state, place, re_place_now,
                                    settled_first, tasks_to_rerun)
from kspark.config import StreamsConfig
from kspark.state import Stores

S = Serdes.String()


def test_held_state_scores_each_task_by_the_checkpoints_on_this_disk(tmp_path):
    """A task scores 1 plus the changelog offsets of its valid checkpoint here (fresher
    copies score more); a task directory without a checkpoint scores nothing."""
    state = str(tmp_path / "state")
    write_checkpoint(tmp_path / "state" / "app" / "0_1" / ".checkpoint", {("c", 1): 40})
    write_checkpoint(tmp_path / "state" / "app" / "0_3" / ".checkpoint", {("c", 3): 2})
    (tmp_path / "state" / "app" / "0_2").mkdir(parents=True)  # no checkpoint: nothing
    assert held_state(state, "app", ["0_0", "0_1", "0_2", "0_3"]) == {"0_1": 41, "0_3": 3}
    assert held_state(str(tmp_path / "elsewhere"), "app", ["0_1"]) == {}


def test_a_thread_goes_back_to_the_executor_it_ran_on_last():
    """Its stores are there, and its Python worker may still hold them open: over any
    executor holding more state."""
    assert choose_executor({"0": 1, "1": 1}, "0", {"1": 99}) == "0"


def test_a_thread_whose_executor_is_lost_goes_where_most_of_its_state_is():
    assert choose_executor({"1": 1, "2": 1}, "0", {"1": 3, "2": 8}) == "2"


def test_a_thread_with_no_state_anywhere_goes_to_the_least_loaded_executor():
    assert choose_executor({"1": 1, "2": 2}, None, {}) == "2"
    assert choose_executor({"1": 1, "2": 1}, None, {}) == "1"  # ties: in executor order


def test_a_thread_never_prefers_an_executor_without_a_free_slot():
    """A preferred busy executor would hold the job back (Spark's locality wait): the
    state on a full executor does not count, and with no free slot anywhere there is no
    preference (the job runs on the first slot Spark frees: a replacement executor)."""
    assert choose_executor({"0": 0, "1": 1}, "0", {"0": 50}) == "1"
    assert choose_executor({"0": 0, "1": 0}, "0", {"0": 50}) is None


def test_a_marker_keeps_where_it_was_committed_and_a_move_is_told_from_it():
    m = Marker("q", 3, {"stream_time": 5}, None, "p1", "host:/state")
    back = decode_marker(encode_marker(m))
    assert back == m
    assert not moved(back, "host:/state") and moved(back, "host:/other")
    old = Marker("q", 3, None, None, "p1")  # written before markers kept where: no move
    assert decode_marker(encode_marker(old)).where == "" and not moved(old, "host:/state")
    assert state_location("rel").endswith("/rel")


@pytest.mark.parametrize("supplier, policy, extra", [
    (Stores.persistent_key_value_store("kv"), "compact", {}),
    (Stores.persistent_versioned_key_value_store("v", 5000), "compact",
     {"min.compaction.lag.ms": str(5000 + 86_400_000)}),
    (Stores.persistent_session_store("s", 7000), "compact", {}),  # not deleted by wall clock
])
def test_changelogs_are_configured_as_kafka_streams_configures_them(supplier, policy, extra):
    builders = {"kv": Stores.key_value_store_builder, "v": Stores.versioned_key_value_store_builder,
                "s": Stores.session_store_builder}
    config = changelog_config(builders[supplier.name](supplier, S, S))
    assert config == {"message.timestamp.type": "CreateTime", "cleanup.policy": policy, **extra}


def test_topic_overrides_go_over_the_defaults_and_a_stores_own_map_over_both():
    w = Stores.window_store_builder(Stores.persistent_window_store("w", 1000, 100), S, S)
    own = w.with_logging_enabled({"retention.ms": "99", "segment.bytes": "2048"})
    config = changelog_config(own, {"segment.bytes": "1024", "min.insync.replicas": "2"})
    assert config == {"message.timestamp.type": "CreateTime", "cleanup.policy": "compact",
                      "retention.ms": "99", "segment.bytes": "2048", "min.insync.replicas": "2"}
    streams = StreamsConfig({"application.id": "a", "bootstrap.servers": "k:9092",
                             "topic.segment.bytes": 1024, "socket.timeout.ms": 100})
    assert streams.topic_overrides() == {"segment.bytes": "1024"}


# micro-batch placement (kspark/_plan/placement.py): executors "0".."n-1", each its own disk
def _disks(n: int) -> dict[str, str]:
    return {str(e): f"h{e}:/s" for e in range(n)}


def _load(placed: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in placed.values():
        out[e] = out.get(e, 0) + 1
    return out


def test_a_task_goes_to_the_executor_of_its_last_commit_and_stays_there():
    tasks = [[f"0_{p}" for p in range(4)]]
    first = place(tasks, _disks(2), {}, {}, {})
    assert _load(first) == {"0": 2, "1": 2}
    where = {t: f"h{e}:/s" for t, e in first.items()}
    again = place(tasks, _disks(2), where, {}, first)
    assert again == first
    # the executors listed in another order, nothing remembered: the disks decide
    assert place(tasks, dict(reversed(list(_disks(2).items()))), where, {}, {}) == first


def test_each_stage_is_spread_evenly():
    groups = [[f"0_{p}" for p in range(4)], [f"1_{p}" for p in range(2)]]
    placed = place(groups, _disks(2), {}, {}, {})
    assert _load({t: e for t, e in placed.items() if t.startswith("0_")}) == {"0": 2, "1": 2}
    assert _load({t: e for t, e in placed.items() if t.startswith("1_")}) == {"0": 1, "1": 1}


def test_a_lost_executor_moves_only_its_tasks():
    tasks = [[f"0_{p}" for p in range(6)]]
    before = place(tasks, _disks(3), {}, {}, {})
    where = {t: f"h{e}:/s" for t, e in before.items()}
    survivors = {e: d for e, d in _disks(3).items() if e != "2"}
    after = place(tasks, survivors, where, {}, before)
    assert {t for t in after if after[t] != before[t]} == {t for t, e in before.items()
                                                           if e == "2"}
    assert _load(after) == {"0": 3, "1": 3}


def test_an_added_executor_takes_only_the_tasks_over_the_even_share():
    tasks = [[f"0_{p}" for p in range(4)]]
    before = place(tasks, _disks(1), {}, {}, {})
    where = {t: "h0:/s" for t in before}
    after = place(tasks, _disks(2), where, {}, before)
    assert _load(after) == {"0": 2, "1": 2}
    assert sum(after[t] != before[t] for t in after) == 2


def test_without_a_last_commit_the_disk_holding_most_of_the_state_wins():
    tasks = [["0_0", "0_1"]]
    held = {"0": {"0_1": 10}, "1": {"0_0": 5, "0_1": 3}}
    assert place(tasks, _disks(2), {}, held, {}) == {"0_1": "0", "0_0": "1"}


def test_executors_sharing_a_disk_keep_the_previous_placement():
    tasks = [[f"0_{p}" for p in range(4)]]
    shared = {"0": "h:/s", "1": "h:/s"}
    before = {"0_0": "1", "0_1": "1", "0_2": "0", "0_3": "0"}
    where = dict.fromkeys(before, "h:/s")
    assert place(tasks, shared, where, {}, before) == before


def test_a_lost_executors_tasks_go_to_its_replacement_and_every_other_task_stays():
    """Executor 0 is lost and executor 3 replaces it (an empty disk): exactly the lost
    executor's tasks move, all to the replacement."""
    tasks = [[f"0_{p}" for p in range(6)]]
    before = place(tasks, _disks(3), {}, {}, {})
    where = {t: f"h{e}:/s" for t, e in before.items()}
    now = {e: d for e, d in {**_disks(3), "3": "h3:/s"}.items() if e != "0"}
    after = place(tasks, now, where, {e: {} for e in now}, before)
    assert {t: after[t] for t in after if after[t] != before[t]} == {
        t: "3" for t, e in before.items() if e == "0"}


def test_a_task_run_elsewhere_than_placed_does_not_push_a_settled_task_off_its_executor():
    """Spark ran the lost executor 0's task 0_3 on executor 1 after its locality wait (it
    committed there): executor 1 holds three last commits, over its share of two, and the
    task that arrived moves on, to the replacement 3, not executor 1's own task 0_4."""
    tasks = [[f"0_{p}" for p in range(6)]]
    before = {"0_0": "0", "0_3": "0", "0_1": "1", "0_4": "1", "0_2": "2", "0_5": "2"}
    where = {t: f"h{e}:/s" for t, e in before.items()}
    where["0_3"] = "h1:/s"
    where["0_0"] = "h3:/s"  # and 0_0 on the replacement
    now = {e: d for e, d in {**_disks(3), "3": "h3:/s"}.items() if e != "0"}
    after = place(tasks, now, where, {}, before)
    assert {t for t in after if after[t] != before[t]} == {"0_0", "0_3"}
    assert after["0_3"] == "3" and after["0_4"] == "1"
    assert settled_first(tasks[0], now, where, before) == ["0_1", "0_2", "0_4", "0_5",
                                                           "0_0", "0_3"]


def test_an_added_executor_takes_the_tasks_that_came_last_to_an_executor_over_its_share():
    """No replacement came within the wait: the lost executor 0's tasks 0_0 and 0_3 went to
    the survivors (placement 5) and committed there. When executor 3 is added, they are the
    tasks over their executors' share, and they move on to it; the survivors' own tasks
    stay."""
    tasks = [[f"0_{p}" for p in range(6)]]
    before = {"0_0": "1", "0_1": "1", "0_4": "1", "0_2": "2", "0_3": "2", "0_5": "2"}
    where = {t: f"h{e}:/s" for t, e in before.items()}
    arrived = {"0_0": 5, "0_3": 5}  # the others since the start
    now = {e: d for e, d in {**_disks(3), "3": "h3:/s"}.items() if e != "0"}
    after = place(tasks, now, where, {}, before, arrived)
    assert {t: after[t] for t in after if after[t] != before[t]} == {"0_0": "3", "0_3": "3"}
    # without knowing when each came, the stage's order decides (0_4 and 0_5 would move)
    assert place(tasks, now, where, {}, before)["0_4"] == "3"


def test_a_batch_is_stopped_for_its_lost_tasks_once_nothing_else_runs_and_replacements_are_there():
    """Spark would keep a lost executor's tasks waiting for it (its locality wait): the
    batch's job is stopped, to run them again elsewhere, when no task of it runs any more
    and as many executors are live as it was placed on, or the replacement wait is over."""
    assert re_place_now({"0"}, missing=0, running=0, waited_s=1.5, wait_s=15)
    assert not re_place_now({"0"}, missing=0, running=2, waited_s=1.5, wait_s=15)
    assert not re_place_now({"0"}, missing=1, running=0, waited_s=1.5, wait_s=15)
    assert re_place_now({"0"}, missing=1, running=0, waited_s=15, wait_s=15)
    assert not re_place_now(set(), missing=0, running=0, waited_s=30, wait_s=15)


def test_a_stopped_batch_runs_again_only_its_tasks_that_had_not_finished():
    """A task that finished keeps its commit and its executor; the lost executor's tasks,
    and any other that had not finished (waiting for a retry), run again."""
    assert tasks_to_rerun(["0_0", "0_1", "0_2", "0_3"], {"0_1", "0_2"}) == ["0_0", "0_3"]
    assert tasks_to_rerun(["0_0", "0_1"], {"0_0", "0_1"}) == []


def test_held_state_scores_the_tasks_with_a_checkpoint_on_this_disk(tmp_path):
    from kspark._engine.state.build import task_store_dir

    write_checkpoint(task_store_dir(str(tmp_path), "app", "1_0") / ".checkpoint",
                     {("app-s-changelog", 0): 41})
    assert held_state(str(tmp_path), "app", ["1_0", "1_1"]) == {"1_0": 42}


# -- standby copies in micro-batch mode (num.standby.replicas) ------------------------------

def test_each_tasks_copies_go_to_the_executors_after_its_own_never_its_own():
    from kspark._plan.placement import keep_copies

    assigned = {"0_0": "0", "0_1": "0", "0_2": "1", "0_3": "1", "0_4": "2", "0_5": "2"}
    one = keep_copies(assigned, ["0", "1", "2"], 1)
    assert one == {"0": ["0_4", "0_5"], "1": ["0_0", "0_1"], "2": ["0_2", "0_3"]}
    two = keep_copies(assigned, ["0", "1", "2"], 2)
    for e, tasks in two.items():
        assert not {t for t in tasks if assigned[t] == e}, "a copy beside its active task"
        assert len(tasks) == 4
    assert keep_copies(assigned, ["0", "1", "2"], 5) == two  # one copy per other executor


def test_a_warm_up_copy_is_kept_where_its_pinned_task_is_to_move_back():
    from kspark._plan.placement import keep_copies

    kept = keep_copies({"0_0": "0", "0_1": "0"}, ["0", "1", "2"], 1, {"0_1": "2"})
    assert kept == {"0": [], "1": ["0_0", "0_1"], "2": ["0_1"]}


def test_a_lost_task_moves_to_its_freshest_copy_and_one_without_a_copy_is_left_to_placement():
    from kspark._plan.placement import fail_over_to_copies

    copies = {"1": {"0_0": 100, "0_1": 7}, "2": {"0_0": 120}}
    assert fail_over_to_copies(["0_0", "0_1", "0_2"], copies) == {"0_0": "2", "0_1": "1"}
    assert fail_over_to_copies(["0_0"], {"2": {"0_0": 5}, "1": {"0_0": 5}}) == {"0_0": "1"}


def test_a_pinned_task_moves_back_once_its_warm_up_copy_is_within_the_acceptable_lag():
    from kspark._plan.placement import settle_pins

    pinned = {"0_0": "1"}
    assert settle_pins(pinned, {"0_0": "3"}, {}, 10) == pinned  # no warm-up update yet
    assert settle_pins(pinned, {"0_0": "3"}, {("3", "0_0"): 11}, 10) == pinned
    assert settle_pins(pinned, {"0_0": "3"}, {("3", "0_0"): 10}, 10) == {}
    assert settle_pins(pinned, {"0_0": "3"}, {("1", "0_0"): 0}, 10) == pinned  # not its home
    assert settle_pins(pinned, {"0_0": "1"}, {}, 10) == {}  # already where it belongs
