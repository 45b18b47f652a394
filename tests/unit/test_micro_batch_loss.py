"""A micro-batch whose executor is lost while it runs (``_spark/micro_batch.py``): the driver
stops its job once nothing else of it runs and the replacement is there, places it again,
and runs only its tasks that had not finished. Spark is faked here (its executors and the
job's tasks, as the status store reports them); the cluster itself runs in
``benchmarks/failover.py`` and tests/integration/test_standalone_cluster.py."""

from __future__ import annotations

import threading

import pytest

from kspark._spark import micro_batch
from kspark._spark.micro_batch import MicroBatchHost, _LossWatch


class FakeContext:
    def __init__(self):
        self.tags: list[str] = []
        self.cancelled: list[str] = []

    def addJobTag(self, tag):  # noqa: N802 - PySpark's names
        self.tags.append(tag)

    def removeJobTag(self, tag):  # noqa: N802
        self.tags.remove(tag)

    def cancelJobsWithTag(self, tag):  # noqa: N802
        self.cancelled.append(tag)


class FakeSpark:
    def __init__(self):
        self.sparkContext = FakeContext()


class FakeCluster:
    """The executors alive and the batch job's tasks, as the watch reads them: one state
    per read of the job (the last one repeats); ``looked`` is set once the watch has
    looked at the executors 5 times."""

    def __init__(self, states):
        self.states, self.polls, self.looks = list(states), 0, 0
        self.looked = threading.Event()

    def state(self):
        return self.states[min(self.polls, len(self.states) - 1)]

    def live_executors(self, spark):
        self.looks += 1
        if self.looks >= 5:
            self.looked.set()
        return dict.fromkeys(self.state()["live"], "loc")

    def tagged_tasks(self, spark, tag):
        s = self.state()
        self.polls += 1
        return s["jobs"], s["running"], s["succeeded"]


@pytest.fixture
def cluster(monkeypatch):
    def install(states):
        fake = FakeCluster(states)
        monkeypatch.setattr(micro_batch, "live_executors", fake.live_executors)
        monkeypatch.setattr(micro_batch, "tagged_tasks", fake.tagged_tasks)
        monkeypatch.setattr(_LossWatch, "POLL_S", 0.001)
        return fake
    return install


def _watch(spark, wait_s=15.0):
    ran = ["0_0", "0_1", "0_2", "0_3", "0_4", "0_5"]  # executors 0, 1, 2, 0, 1, 2
    return _LossWatch(spark, "app", 8, ran, {"0", "1", "2"}, 3, wait_s)


def _watched_to_its_end(spark, wait_s=15.0):
    """A watch run until it stops (or gives up): the lost executor 0's tasks, to run again."""
    watch = _watch(spark, wait_s)
    watch.start()
    watch.join(60)
    assert watch.stopped and watch.rerun == ["0_0", "0_3"]
    return watch


def test_a_lost_executors_tasks_are_run_again_once_the_rest_finished_and_its_replacement_came(
        cluster):
    """Executor 0 is lost: while its batch's other tasks still run, and until its
    replacement 3 registers, the job goes on; then it is cancelled, naming the tasks that
    had not finished (the lost executor's)."""
    fake = cluster([
        {"live": ["1", "2"], "jobs": 1, "running": 2, "succeeded": {1, 2}},
        {"live": ["1", "2"], "jobs": 1, "running": 0, "succeeded": {1, 2, 4, 5}},
        {"live": ["1", "2", "3"], "jobs": 1, "running": 0, "succeeded": {1, 2, 4, 5}},
    ])
    spark = FakeSpark()
    watch = _watched_to_its_end(spark)
    assert spark.sparkContext.cancelled == [watch.tag]
    assert fake.polls == 3  # not before the replacement
    watch.close()
    assert spark.sparkContext.tags == []  # the thread's tag is gone with the job


def test_a_batch_that_lost_no_executor_of_its_own_is_never_stopped(cluster):
    fake = cluster([{"live": ["0", "1", "2"], "jobs": 1, "running": 0, "succeeded": set()}])
    spark = FakeSpark()
    watch = _watch(spark)
    watch.start()
    assert fake.looked.wait(60)
    watch.close()
    assert not watch.stopped and spark.sparkContext.cancelled == []
    assert fake.polls == 0  # it never even read the job: nothing of it was lost


def test_a_job_not_submitted_yet_is_not_cancelled(cluster):
    """The executor died between the batch's placement and its job: the cancel waits for
    the job (a cancel before it would be lost, and the job would wait for the dead
    executor)."""
    cluster([
        {"live": ["1", "2", "3"], "jobs": 0, "running": 0, "succeeded": set()},
        {"live": ["1", "2", "3"], "jobs": 1, "running": 0, "succeeded": {1, 2, 4, 5}},
    ])
    watch = _watched_to_its_end(FakeSpark())
    watch.close()


def test_without_a_replacement_the_lost_tasks_run_again_once_the_wait_is_over(cluster):
    cluster([{"live": ["1", "2"], "jobs": 1, "running": 0, "succeeded": {1, 2, 4, 5}}])
    watch = _watched_to_its_end(FakeSpark(), wait_s=0.0)
    watch.close()


class StubHost(MicroBatchHost):
    """A MicroBatchHost without Spark: a stub job, a stub placement."""

    def __init__(self, outcomes):
        self.app_id, self.outcomes = "app", list(outcomes)
        self.assigned = {f"0_{p}": str(p % 3) for p in range(6)}
        self.only = None
        self.ran: list[str] = []
        self.runs: list[set[str] | None] = []
        self.places: list[bool] = []

    def _watch(self, batch_id):
        return self.outcomes.pop(0)

    def _place(self, rerun=False):
        self.places.append(rerun)
        self.assigned.update({t: "3" for t in self.only or ()})


class Job:
    def __init__(self, host, fail):
        self.host, self.fail = host, fail
        self.write = self.format = self.mode = self

    def __call__(self, *args):
        return self

    def save(self):
        self.host.runs.append(self.host.only)
        if self.fail:
            raise RuntimeError("job cancelled")


class Outcome:
    def __init__(self, stopped, rerun=()):
        self.stopped, self.rerun, self.closed = stopped, list(rerun), False

    def close(self):
        self.closed = True


def test_a_stopped_batch_runs_again_only_the_tasks_named_placed_anew():
    first, second = Outcome(True, ["0_0", "0_3"]), Outcome(False)
    host = StubHost([first, second])
    fails = iter([True, False])
    host._run(lambda: Job(host, next(fails)), 8)
    assert host.runs == [None, {"0_0", "0_3"}]
    assert host.places == [True]  # placed again, without a second wait for replacements
    assert first.closed and second.closed


def test_a_job_failure_the_watch_did_not_cause_fails_the_batch():
    outcome = Outcome(False)
    host = StubHost([outcome])
    with pytest.raises(RuntimeError, match="job cancelled"):
        host._run(lambda: Job(host, True), 8)
    assert host.runs == [None] and host.places == [] and outcome.closed
