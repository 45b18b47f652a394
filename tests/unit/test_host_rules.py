"""The task runtime's decisions (``_host/rules.py``), one test per rule of its table."""

from kspark._host.rules import (
    COMMIT_STEPS,
    RESTARTS_PER_TIMEOUT,
    keep_if_current,
    restart_after,
    same_commit,
)
from kspark._kafka.transactions import Marker

MINE = Marker("q", 3, None, None, producer="p1", where="h:/s")
ENDS = {("app-counts-changelog", 0): 12}


def _never():
    raise AssertionError("Kafka is read only when the commits agree")


def test_a_kept_task_that_made_the_last_commit_with_unmoved_changelogs_runs_on():
    assert keep_if_current(MINE, MINE, ENDS, lambda: dict(ENDS))


def test_a_kept_task_without_logged_stores_needs_no_changelog_read():
    assert keep_if_current(MINE, MINE, {}, _never)


def test_another_workers_commit_since_closes_the_kept_task():
    theirs = Marker("q", 4, None, None, producer="p2")
    assert not keep_if_current(MINE, theirs, ENDS, _never)


def test_the_same_batch_by_another_producer_is_another_commit():
    assert not same_commit(MINE, Marker("q", 3, None, None, producer="p2"))


def test_no_marker_in_kafka_after_a_reset_closes_a_kept_task_that_committed_one():
    assert not keep_if_current(MINE, None, ENDS, _never)


def test_neither_having_committed_counts_as_the_same():
    assert same_commit(None, None) and keep_if_current(None, None, {}, _never)


def test_a_changelog_moved_past_the_kept_end_closes_the_kept_task():
    assert not keep_if_current(MINE, MINE, ENDS, lambda: {("app-counts-changelog", 0): 13})


def test_a_batch_the_task_committed_already_closes_the_kept_task():
    assert not keep_if_current(MINE, MINE, ENDS, _never, again=True)


def test_the_marker_is_recorded_after_the_commit_and_before_the_checkpoint():
    assert COMMIT_STEPS.index("commit") < COMMIT_STEPS.index("record_marker") \
        < COMMIT_STEPS.index("checkpoint")
    assert COMMIT_STEPS[:2] == ("invalidate_checkpoint", "flush")


# restart_after: what a run does after a task ended while Kafka recovered
TRANSIENT = "... kspark.errors.TransientKafkaError: task 0_1: commit_transaction did not return"


def test_a_run_ended_by_a_transient_kafka_failure_starts_again():
    assert restart_after(TRANSIENT, [], 1000.0, 300_000)


def test_a_schema_registry_away_is_transient_too_and_starts_the_run_again():
    """A kind of TransientKafkaError, named by its own class in the failure's text."""
    assert restart_after("kspark.errors.SchemaRegistryUnreachableError: Serdes.avro() cannot "
                         "read ...", [], 100.0, 300_000)


def test_a_python_worker_too_slow_to_start_is_transient_and_starts_the_run_again():
    """Spark waits a fixed 10 s for a new Python worker; on a busy machine it can miss."""
    assert restart_after("org.apache.spark.SparkException: Python worker failed to connect "
                         "back.", [], 100.0, 300_000)


def test_a_task_fenced_by_a_zombie_of_the_run_before_starts_the_run_again():
    """A task of the failed run still finishing opened its producer after the new run's
    attempt: as Kafka Streams' TaskMigratedException, the run starts again (and its new
    attempt fences the zombie), bounded like any restart."""
    fenced = ("kspark.errors.TaskFencedError: task 0_1 was fenced during produce: a newer "
              "attempt of the same task ...")
    assert restart_after(fenced, [], 100.0, 300_000)
    assert not restart_after(fenced, [100.0 - i for i in range(RESTARTS_PER_TIMEOUT)], 100.0,
                             300_000)


def test_a_task_timeout_is_final_the_outage_outlasted_the_bound():
    assert not restart_after("kspark.errors.TaskTimeoutError: task 0_1: ...", [], 1000.0, 300_000)
    assert not restart_after(TRANSIENT + "\nkspark.errors.TaskTimeoutError: ...", [], 1000.0,
                             300_000)


def test_any_other_failure_is_final():
    assert not restart_after("kspark.errors.ProcessorError: task 0_1: node X raised", [],
                             1000.0, 300_000)


def test_at_most_so_many_restarts_within_task_timeout():
    recent = [1000.0 - i for i in range(RESTARTS_PER_TIMEOUT)]
    assert not restart_after(TRANSIENT, recent, 1000.0, 300_000)
    assert restart_after(TRANSIENT, recent[:-1], 1000.0, 300_000)


def test_restarts_older_than_task_timeout_do_not_count():
    old = [100.0 - i for i in range(RESTARTS_PER_TIMEOUT)]
    assert restart_after(TRANSIENT, old, 1000.0, 300_000)  # 900 s ago > 300 s
