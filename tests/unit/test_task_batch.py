"""The micro-batch driver (``_spark/task_batch.py``: :class:`TaskBatch`) over a fake worker:
its task manager makes tasks reaching the in-memory Kafka of ``test_hosted_task.py``, and
its Kafka ranges are read from a fake reader. No broker, no Spark: a micro-batch's rows are
the task marker a source stage hands the task (its offset range of the input topic).
"""

import logging

import pytest

from kspark._host.hooks import FailAfterCommit, TaskHooks
from kspark._host.task_manager import TaskManager
from kspark._spark.task_batch import TaskBatch
from kspark._spark.wire import TaskMarker, marker_batch
from kspark.errors import ProcessorError, TaskFencedError
from tests.unit.test_hosted_task import DST, SRC, S, FakeIO, FakeKafka, _context, _record


class Worker:
    """One worker process: its task manager, each task's port a new :class:`FakeIO` over
    ``kafka`` (``ios``: every one made, in order), and the ranges it read."""

    def __init__(self, kafka, eos):
        self.ios: list = []
        self.reads: list = []
        self.manager = TaskManager(io=lambda ctx, p: self._io(kafka, eos))

    def _io(self, kafka, eos):
        self.ios.append(FakeIO(kafka, eos))
        return self.ios[-1]

    def read(self, topic, partition, start, end):
        self.reads.append((topic, partition, start, end))
        yield [_record(i) for i in range(start, end)]

    def run(self, ctx, batch, start, end, attempt=0):
        """Micro-batch ``batch`` of task 0_0 (offsets ``start`` to ``end`` of the input)."""
        tb = TaskBatch(ctx, 0, ("q", batch), attempt, tasks=self.manager, read=self.read)
        return list(tb.run(iter([marker_batch(TaskMarker(0, ((SRC, 0, start, end),)))])))

    def kept(self, ctx):
        return self.manager.kept.get("tasks", (ctx.app_id, "0_0"))


@pytest.fixture(params=["at_least_once", "exactly_once_v2"])
def eos(request):
    return request.param == "exactly_once_v2"


def _values(kafka):
    return [v for topic, v in kafka.output if topic == DST]


def test_a_batch_is_read_processed_committed_and_its_task_kept(tmp_path, eos):
    kafka, ctx = FakeKafka(), _context(tmp_path, eos)
    worker = Worker(kafka, eos)
    (rows,) = worker.run(ctx, 0, 0, 3)
    assert rows.num_rows == 0  # it feeds no other task
    assert worker.reads == [(SRC, 0, 0, 3)]
    assert _values(kafka) == [b"V0", b"V1", b"V2"]
    assert kafka.offsets == {(SRC, 0): 3} and kafka.marker.batch == 0
    assert worker.kept(ctx) is not None
    worker.run(ctx, 1, 3, 4)  # the next batch takes the kept task: nothing restored
    assert [len(io.restores) for io in worker.ios] == [1, 0]
    assert _values(kafka)[3:] == [b"V3"] and kafka.marker.batch == 1


def _failing(b):
    b.stream(SRC, key_serde=S, value_serde=S).map_values(
        lambda v: 1 / 0 if v == "v1" else v.upper()).to(DST, key_serde=S, value_serde=S)


def test_a_failing_batch_is_aborted_and_its_error_names_the_task(tmp_path, eos):
    kafka, ctx = FakeKafka(), _context(tmp_path, eos, _failing)
    worker = Worker(kafka, eos)
    with pytest.raises(ProcessorError, match="task 0_0") as failed:
        worker.run(ctx, 0, 0, 3)
    assert isinstance(failed.value.__cause__ or failed.value.__context__, ZeroDivisionError)
    assert kafka.marker is None and kafka.offsets == {}  # nothing committed
    assert worker.kept(ctx) is None  # discarded: the next attempt restores it
    if eos:
        assert kafka.log[-1] == "abort" and _values(kafka) == []


def test_the_hook_runs_after_the_commit_and_a_second_attempt_replays_without_writing(
        tmp_path, caplog):
    kafka, ctx = FakeKafka(), _context(tmp_path, True)
    ctx.hooks = TaskHooks(after_commit=FailAfterCommit(("0_0:0",)))
    worker = Worker(kafka, True)
    with pytest.raises(RuntimeError, match="task 0_0 after committing batch 0"):
        worker.run(ctx, 0, 0, 2)
    assert kafka.marker.batch == 0 and _values(kafka) == [b"V0", b"V1"]  # committed first
    again = Worker(kafka, True)  # Spark runs the task again, on another worker
    with caplog.at_level(logging.WARNING, logger="kspark"):
        again.run(ctx, 0, 0, 2, attempt=1)
    assert "batch ('q', 0) is already committed" in caplog.text
    assert _values(kafka) == [b"V0", b"V1"] and kafka.marker.batch == 0  # nothing written
    assert again.ios[0].restores == []  # it feeds no other task: nothing to recompute
    assert again.kept(ctx) is None  # a replay keeps nothing
    again.run(ctx, 1, 2, 3)  # and the next batch goes on from the commit
    assert _values(kafka) == [b"V0", b"V1", b"V2"] and kafka.marker.batch == 1


def test_an_attempt_fenced_by_a_newer_one_fails_with_task_fenced_and_writes_nothing(tmp_path):
    kafka, ctx = FakeKafka(), _context(tmp_path, True)
    zombie, newer = Worker(kafka, True), Worker(kafka, True)
    read = zombie.read

    def read_then_be_fenced(topic, partition, start, end):
        yield from read(topic, partition, start, end)
        newer.run(ctx, 0, start, end, attempt=1)  # Spark's speculative or retried attempt

    zombie.read = read_then_be_fenced
    with pytest.raises(TaskFencedError):
        zombie.run(ctx, 0, 0, 2)
    assert _values(kafka) == [b"V0", b"V1"] and kafka.marker.batch == 0  # the newer's, once
    assert zombie.kept(ctx) is None and newer.kept(ctx) is not None
