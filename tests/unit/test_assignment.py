"""The real-time assignor's rules (``kspark._plan.assignment``), one test per rule: home
tasks, where copies are kept, what a lost thread hands over, and when a task moves back
(Kafka Streams' standby tasks, warm-up replicas and probing rebalance, KIP-441)."""

from __future__ import annotations

from kspark._plan.assignment import fail_over, initial_assignment, move_back


def test_thread_i_runs_every_nth_task_as_before_standbys_existed():
    assert initial_assignment(6, 3, 0).active == ((0, 3), (1, 4), (2, 5))
    assert initial_assignment(6, 3, 0).standby == ((), (), ())


def test_a_tasks_copies_are_kept_by_the_next_threads_never_its_own():
    a = initial_assignment(6, 3, 1)
    assert a.standby == ((2, 5), (0, 3), (1, 4))
    for task in range(6):
        assert a.owner(task) not in a.keepers(task)


def test_there_are_never_more_copies_of_a_task_than_other_threads():
    a = initial_assignment(4, 2, 3)
    assert [len(a.keepers(t)) for t in range(4)] == [1, 1, 1, 1]
    assert initial_assignment(4, 1, 1).standby == ((),)  # one thread: nowhere else


def test_a_lost_threads_tasks_go_to_the_threads_keeping_their_copies():
    a = fail_over(initial_assignment(6, 3, 1), 0, 2)
    assert a.active == ((), (0, 1, 3, 4), (2, 5))
    assert a.standby[1] == ()  # its copies are the active stores now


def test_a_task_without_a_copy_stays_with_its_lost_thread_for_sparks_retry():
    a = fail_over(initial_assignment(6, 3, 0), 0, 2)
    assert a.active == ((0, 3), (1, 4), (2, 5))


def test_the_lost_thread_warms_up_at_most_max_warmups_of_its_tasks_and_keeps_its_copies():
    a = fail_over(initial_assignment(9, 3, 1), 0, 2)
    # of its 3 tasks, 2 warm up; its copies of thread 2's tasks stay (rebuilt where it runs)
    assert a.standby[0] == (0, 2, 3, 5, 8)


def test_a_caught_up_warmup_moves_its_task_home_and_the_taker_keeps_a_copy_again():
    home = initial_assignment(6, 3, 1)
    away = fail_over(home, 0, 2)
    back = move_back(away, home, {(0, 0): 5, (0, 3): 5}, 10)
    assert back == home


def test_a_warmup_behind_the_acceptable_lag_or_not_reported_stays_a_copy():
    home = initial_assignment(6, 3, 1)
    away = fail_over(home, 0, 2)
    assert move_back(away, home, {(0, 0): 11}, 10) == away
    assert move_back(away, home, {}, 10) == away


def test_a_move_back_takes_the_task_from_its_runner_first_and_home_once_it_is_given_up():
    """Kafka Streams' cooperative rebalance: the thread running a task gives it up (a new
    version without it anywhere); only when no thread reports it running does its home
    thread take it (the next version), so two threads never run it at once."""
    from kspark._spark.realtime.rebalance import Assignor

    home = initial_assignment(4, 2, 1)
    assignor = Assignor(home, ["0_0", "0_1", "0_2", "0_3"], 2, 10)
    assert assignor.lost(1)  # thread 1's tasks 0_1 and 0_3 go to thread 0
    version, a = assignor.assignment()
    assert (version, a.active) == (1, ((0, 1, 2, 3), ()))
    assert assignor.probe({(1, "0_1"): 0, (1, "0_3"): 99})  # 0_1's warm-up caught up
    version, a = assignor.assignment()
    assert (version, a.active) == (2, ((0, 2, 3), ()))  # given up, not yet taken
    assert not assignor.settle({"0_1", "0_0"})  # thread 0 still reports 0_1 running
    assert assignor.settle({"0_0", "0_2", "0_3"})
    version, a = assignor.assignment()
    assert (version, a.active) == (3, ((0, 2, 3), (1,)))
