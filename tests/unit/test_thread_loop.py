"""A real-time stream thread (``_spark/realtime/stream_thread.py`` running
``thread_loop.ThreadLoop``) over fakes: its consumer hands out scripted rounds of records,
its tasks reach the in-memory Kafka of ``test_hosted_task.py`` through a task manager of its
own, its stop watch and metrics sender are in memory. No broker, no Spark: what is polled is
fed and committed interval by interval, a failure aborts the thread's tasks, and a newer
attempt's fencing ends them.
"""

import time

import pytest
from confluent_kafka import Message

from kspark._host.hooks import TaskHooks
from kspark._host.task_manager import TaskManager
from kspark._spark.realtime.epoch import Epoch
from kspark._spark.realtime.layout import TaskSpec
from kspark._spark.realtime.stream_thread import ThreadClients, run_stream_thread
from kspark.errors import ProcessorError, TaskFencedError
from tests.unit.test_hosted_task import DST, SRC, S, FakeIO, FakeKafka, _context

SPEC = TaskSpec(0, 0, ((SRC, 0),), ())


def _commits(kafka):
    return kafka.log.count("commit")


class FakeConsumer:
    """Hands out ``rounds`` (lists of offsets of the input partition), each once the one
    before is committed; ``before``: round number -> what to do before handing it out."""

    def __init__(self, kafka, rounds, before=None):
        self.kafka, self.rounds, self.before = kafka, list(rounds), before or {}
        self.given = 0
        self.queue: list = []
        self.closed = False

    def poll(self, timeout):
        if not self.queue and self.given < len(self.rounds) and \
                _commits(self.kafka) >= self.given:
            self.before.get(self.given, lambda: None)()
            self.queue = [Message(topic=SRC, partition=0, offset=o, key=b"k",
                                  value=f"v{o}".encode(), timestamp=(1, 1000 + o))
                          for o in self.rounds[self.given]]
            self.given += 1
        if not self.queue:
            time.sleep(min(timeout, 0.005))
            return None
        return self.queue.pop(0)

    def consume(self, n, timeout):
        out, self.queue = self.queue[:n], self.queue[n:]
        return out

    def get_watermark_offsets(self, tp, cached=False, timeout=None):
        return 0, max((o + 1 for r in self.rounds for o in r), default=0)

    def done(self):
        return self.given == len(self.rounds) and not self.queue and \
            _commits(self.kafka) >= len(self.rounds)

    def close(self):
        self.closed = True


class FakeWatch:
    """The control topic: a stop once the consumer handed out everything and it was
    committed (or after 10 s, so a broken loop fails the test rather than hang it)."""

    def __init__(self, consumer):
        self.consumer, self.deadline = consumer, time.monotonic() + 10

    def stopped(self):
        return self.consumer.done() or time.monotonic() > self.deadline

    def assignment(self):
        return None

    def close(self):
        pass


class FakeSender:
    def __init__(self):
        self.reports: list = []

    def send(self, report):
        self.reports.append(report)

    def close(self):
        pass


def _thread(ctx, kafka, eos, rounds, before=None):
    """Run thread 0 of one task (0_0) for one epoch over ``rounds``; (its result or the
    error it raised, the manager, the consumer)."""
    manager = TaskManager(io=lambda c, p: FakeIO(kafka, eos))
    consumer = FakeConsumer(kafka, rounds, before)
    clients = ThreadClients(tasks=manager, watch=lambda c, e: FakeWatch(consumer),
                            sender=lambda c, e: FakeSender(),
                            consumer=lambda c, i, e, specs: consumer)
    epoch = Epoch(run="rt-0", threads=1, tasks=(SPEC,), resets=(), interval_ms=20,
                  length_ms=0, control_begin=0, purge_ms=60_000)
    try:
        return run_stream_thread({0: ctx}, 0, epoch, clients), manager, consumer
    except Exception as e:  # noqa: BLE001 - the test looks at it
        return e, manager, consumer


@pytest.fixture(params=["at_least_once", "exactly_once_v2"])
def eos(request):
    return request.param == "exactly_once_v2"


def _values(kafka):
    return [v for topic, v in kafka.output if topic == DST]


def test_records_polled_are_fed_and_committed_interval_by_interval(tmp_path, eos):
    kafka, ctx = FakeKafka(), _context(tmp_path, eos)
    seen = []
    ctx.hooks = TaskHooks(after_commit=lambda *a: seen.append(a))
    result, manager, consumer = _thread(ctx, kafka, eos, [[0, 1], [2], [3, 4]])
    assert not isinstance(result, Exception), result
    assert _values(kafka) == [b"V0", b"V1", b"V2", b"V3", b"V4"]
    assert _commits(kafka) == 3 and kafka.offsets == {(SRC, 0): 5}  # one per round
    assert (result["records_in"], result["records_out"], result["commits"]) == (5, 5, 3)
    run = kafka.marker.query
    assert run.startswith("rt-0.") and kafka.marker.batch == 3
    # the after_commit hook runs in real-time mode too, after each commit
    assert seen == [("0_0", (run, n), 0) for n in (1, 2, 3)]
    assert consumer.closed
    assert manager.kept.get("tasks", (ctx.app_id, "0_0")) is not None  # for the next epoch


def _failing(b):
    b.stream(SRC, key_serde=S, value_serde=S).map_values(
        lambda v: 1 / 0 if v == "v1" else v.upper()).to(DST, key_serde=S, value_serde=S)


def test_a_failure_aborts_the_threads_tasks_and_names_the_task(tmp_path, eos):
    kafka, ctx = FakeKafka(), _context(tmp_path, eos, _failing)
    error, manager, consumer = _thread(ctx, kafka, eos, [[0], [1, 2]])
    assert isinstance(error, ProcessorError) and "task 0_0" in str(error)
    assert kafka.marker.batch == 1 and kafka.offsets == {(SRC, 0): 1}  # the first round's
    assert manager.kept.get("tasks", (ctx.app_id, "0_0")) is None  # discarded
    assert consumer.closed
    if eos:
        assert kafka.log[-1] == "abort" and _values(kafka) == [b"V0"]


def test_a_newer_attempts_fencing_ends_the_threads_tasks(tmp_path):
    kafka, ctx = FakeKafka(), _context(tmp_path, True)

    def fenced():  # another attempt of the thread's epoch opened the task
        kafka.live_instance = "another attempt"

    error, manager, _ = _thread(ctx, kafka, True, [[0], [1]], before={1: fenced})
    assert isinstance(error, TaskFencedError)
    assert _values(kafka) == [b"V0"] and kafka.offsets == {(SRC, 0): 1}
    assert kafka.log[-1] == "abort"
    assert manager.kept.get("tasks", (ctx.app_id, "0_0")) is None
