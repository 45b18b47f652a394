"""The one task lifecycle (``_host/task.py``), against an in-memory Kafka port: every
transition, a crash after each step, fencing, and the kept-task rule, with no broker.

Each test runs under both guarantees and as both drivers schedule the task: the
micro-batch driver opens a HostedTask per micro-batch (batch ``("q", n)``); the real-time
loop opens one per epoch and commits it once per interval (``("run", 0)``, then
``("run", 1)``, ...).
"""

import uuid

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._engine.nodes import RawRecord
from kspark._graph.subtopology import sub_topologies
from kspark._host.context import HostContext
from kspark._host.port import Output
from kspark._host.rules import COMMIT_STEPS
from kspark._host.task_manager import TaskManager
from kspark._plan.plan import StagePlan
from kspark.config import StreamsConfig
from kspark.errors import TaskFencedError
from kspark.processor import Processor, PunctuationType, Record

S = Serdes.String()
SRC, DST, CHANGELOG = "in", "out", ("app-store-changelog", 0)


class FakeKafka:
    """The cluster as the port sees it: the task's marker, the group's offsets, the
    changelog's end, the topics' committed records, and the live producer instance."""

    def __init__(self):
        self.marker = None
        self.offsets: dict = {}
        self.ends = {CHANGELOG: 0}
        self.output: list = []
        self.live_instance = None  # exactly-once: the only producer that may commit
        self.log: list[str] = []
        self.crash_at: str | None = None  # a step name: raise there (a crash)

    def step(self, name):
        self.log.append(name)
        if self.crash_at == name:
            raise RuntimeError(f"crash at {name}")


class FakeProducer:
    """A record collector: sends go to the open transaction (or straight to the topic)."""

    def __init__(self, kafka, tx=None):
        self.kafka, self.tx, self.sent, self.logged = kafka, tx, 0, 0
        self.pending: list = []

    def send(self, topic, key, value, timestamp, headers, partition):
        self.sent += 1
        (self.pending if self.tx is not None else self.kafka.output).append((topic, value))

    def flush(self):
        self.kafka.step("flush")


class FakeTx:
    def __init__(self, kafka):
        self.kafka, self.instance = kafka, uuid.uuid4().hex
        self.producer = FakeProducer(kafka, self)

    def begin(self):
        self.producer.pending = []
        self.kafka.step("begin")

    def commit(self, marker, inputs):
        if self.kafka.live_instance != self.instance:
            raise TaskFencedError("task 0_0 was fenced: another attempt runs it")
        self.kafka.step("commit")
        self.kafka.output += self.producer.pending
        self.kafka.marker, self.producer.pending = marker, []
        self.kafka.offsets.update(inputs)

    def fail(self, error):
        self.kafka.step("abort")
        self.producer.pending = []
        return error


class FakeIO:
    """The port (``_host/port.py::TaskIO``) over :class:`FakeKafka`."""

    def __init__(self, kafka, eos):
        self.kafka, self.eos = kafka, eos
        self.restores: list = []

    def open_output(self, batch, fence):
        marker = self.kafka.marker
        if not self.eos:
            return Output(marker, FakeProducer(self.kafka))
        if marker is not None and marker.covers(batch):
            return Output(marker, FakeProducer(self.kafka, tx=object()), None, replay=True)
        tx = FakeTx(self.kafka)
        self.kafka.live_instance = tx.instance  # init_transactions fences the others
        return Output(marker, tx.producer, tx)

    def commit_offsets(self, inputs, marker):
        self.kafka.step("commit")
        self.kafka.marker = marker
        self.kafka.offsets.update(inputs)

    def changelog_ends(self, task):
        return dict(self.kafka.ends)

    def restore(self, task, batch, saved, again, host):
        self.restores.append((batch, saved, again))
        if saved is not None:
            task.resume(saved, "the fake marker")
        return dict(self.kafka.ends)

    def invalidate_checkpoint(self, task):
        self.kafka.step("invalidate_checkpoint")

    def checkpoint(self, task, host):
        self.kafka.step("checkpoint")
        return dict(self.kafka.ends)


def _upper(b):
    b.stream(SRC, key_serde=S, value_serde=S).map_values(str.upper).to(
        DST, key_serde=S, value_serde=S)


def _context(tmp_path, eos, topology=_upper):
    b = StreamsBuilder()
    topology(b)
    graph = b.build()._graph
    (st,) = sub_topologies(graph)
    cfg = StreamsConfig({"application.id": f"app-{uuid.uuid4().hex[:8]}",
                         "bootstrap.servers": "unused:9092", "state.dir": str(tmp_path),
                         "processing.guarantee": "exactly_once_v2" if eos else "at_least_once"})
    plan = StagePlan(st.id, st.nodes, {}, {}, {}, {SRC: 1, DST: 1}, streaming=True)
    return HostContext(graph, cfg.as_dict(), plan)


def _record(i):
    return RawRecord(SRC, 0, i, 1000 + i, b"k", f"v{i}".encode(), ())


WORKER = TaskManager()  # one worker: what one test's tasks keep, the next of them takes


@pytest.fixture(autouse=True)
def _fresh_worker():
    WORKER.kept.clear("tasks")


def _open(ctx, io, batch, fence=False):
    """A task opened as a driver opens it: a micro-batch (``("q", n)``) begins batch n at
    once; a real-time epoch (``("run", 0)``) begins ``("run", 1)`` at its first record."""
    t = WORKER.hosted(ctx, 0, io)
    producer = t.open(batch, fence)
    t.acquire(producer)
    if batch[0] == "q":
        t.begin(batch)
    return t


def _micro_batch(ctx, io, n, offsets):
    """One micro-batch of the micro-batch driver: open, acquire, begin, feed, commit."""
    t = _open(ctx, io, ("q", n))
    t.feed([_record(i) for i in offsets])
    t.advance((SRC, 0), offsets[-1] + 1)
    done = t.commit(force=True)
    t.release()
    return done


@pytest.fixture(params=["at_least_once", "exactly_once_v2"])
def eos(request):
    return request.param == "exactly_once_v2"


def test_a_commit_follows_the_one_commit_order(tmp_path, eos):
    kafka = FakeKafka()
    _micro_batch(_context(tmp_path, eos), FakeIO(kafka, eos), 0, [0, 1])
    steps = [s for s in kafka.log if s != "begin"]
    # the marker is recorded between the commit and the checkpoint (the host's own record)
    assert steps == ["flush", "commit", "checkpoint"]
    assert [s for s in COMMIT_STEPS if s in steps] == steps
    assert kafka.output == [(DST, b"V0"), (DST, b"V1")]
    assert kafka.offsets == {(SRC, 0): 2} and kafka.marker.batch == 0


def test_the_host_records_the_marker_only_after_kafka_committed_it(tmp_path, eos):
    kafka = FakeKafka()
    kafka.crash_at = "commit"
    t = _open(_context(tmp_path, eos), FakeIO(kafka, eos), ("q", 0))
    t.feed([_record(0)])
    with pytest.raises(RuntimeError):
        t.commit(force=True)
    assert t.host.marker is None and kafka.marker is None
    t.abort(RuntimeError("crash"))
    assert t.task is None  # closed: nothing of the failed batch is kept


def test_a_crash_between_commit_and_checkpoint_leaves_the_marker_and_no_kept_task(
        tmp_path, eos):
    kafka = FakeKafka()
    kafka.crash_at = "checkpoint"
    ctx = _context(tmp_path, eos)
    t = _open(ctx, FakeIO(kafka, eos), ("q", 0))
    t.feed([_record(0)])
    with pytest.raises(RuntimeError):
        t.commit(force=True)
    t.abort(RuntimeError("crash"))
    assert kafka.marker.batch == 0  # committed: the next batch goes on from it
    kafka.crash_at = None
    io = FakeIO(kafka, eos)
    nxt = _open(ctx, io, ("q", 1))
    assert not nxt.kept and io.restores == [(("q", 1), kafka.marker.progress, False)]


def test_a_crash_before_the_commit_reprocesses_the_batch_from_the_last_marker(tmp_path, eos):
    kafka = FakeKafka()
    ctx = _context(tmp_path, eos)
    _micro_batch(ctx, FakeIO(kafka, eos), 0, [0])
    t = _open(ctx, FakeIO(kafka, eos), ("q", 1))
    t.feed([_record(1)])
    t.abort(RuntimeError("executor lost"))
    _micro_batch(ctx, FakeIO(kafka, eos), 1, [1])
    values = [v for _, v in kafka.output]
    assert values == ([b"V0", b"V1"] if eos else [b"V0", b"V1", b"V1"][:len(values)])
    assert kafka.offsets == {(SRC, 0): 2} and kafka.marker.batch == 1


def test_an_uncommitted_interval_never_reaches_the_output_under_exactly_once(tmp_path):
    kafka = FakeKafka()
    t = _open(_context(tmp_path, True), FakeIO(kafka, True), ("run", 0))
    t.feed([_record(0)])
    t.abort(RuntimeError("thread failed"))
    assert kafka.output == [] and "abort" in kafka.log


def test_a_new_attempt_fences_the_old_one(tmp_path):
    kafka = FakeKafka()
    ctx = _context(tmp_path, True)
    zombie = _open(ctx, FakeIO(kafka, True), ("run-a", 0), fence=True)
    zombie.feed([_record(0)])
    attempt = _open(ctx, FakeIO(kafka, True), ("run-b", 0), fence=True)
    with pytest.raises(TaskFencedError) as failed:
        zombie.commit()
    assert isinstance(zombie.abort(failed.value), TaskFencedError)
    attempt.feed([_record(0), _record(1)])
    assert attempt.commit() is not None
    assert [v for _, v in kafka.output] == [b"V0", b"V1"]


def test_the_real_time_loop_commits_an_interval_only_when_it_did_something(tmp_path, eos):
    kafka = FakeKafka()
    t = _open(_context(tmp_path, eos), FakeIO(kafka, eos), ("run", 0))
    assert t.commit() is None  # nothing happened
    t.feed([_record(0)])
    t.advance((SRC, 0), 1)
    first = t.commit()
    t.feed([_record(1)])
    second = t.commit()
    assert (first.records_in, first.records_out, second.records_in) == (1, 1, 1)
    assert [kafka.marker.query, kafka.marker.batch] == ["run", 2]
    assert kafka.marker.previous is not None  # the progress of the first commit


def test_a_kept_task_runs_on_when_it_made_the_last_commit(tmp_path, eos):
    kafka = FakeKafka()
    ctx = _context(tmp_path, eos)
    _micro_batch(ctx, FakeIO(kafka, eos), 0, [0])
    io = FakeIO(kafka, eos)
    t = _open(ctx, io, ("q", 1))
    assert t.kept and io.restores == []


def test_a_kept_task_is_rebuilt_when_another_worker_committed_since(tmp_path, eos):
    kafka = FakeKafka()
    ctx = _context(tmp_path, eos)
    _micro_batch(ctx, FakeIO(kafka, eos), 0, [0])
    elsewhere = TaskManager().hosted(ctx, 0, FakeIO(kafka, eos))  # another worker's commit
    from kspark._kafka.transactions import Marker
    kafka.marker = Marker("q", 1, None, kafka.marker.progress, producer="another", where="x:/y")
    io = FakeIO(kafka, eos)
    t = _open(ctx, io, ("q", 2))
    assert not t.kept and len(io.restores) == 1 and elsewhere.task is None


def test_a_kept_task_is_rebuilt_when_kafka_holds_no_marker_after_a_reset(tmp_path, eos):
    kafka = FakeKafka()
    ctx = _context(tmp_path, eos)
    _micro_batch(ctx, FakeIO(kafka, eos), 0, [0])
    kafka.marker, kafka.offsets = None, {}  # kspark reset
    io = FakeIO(kafka, eos)
    t = _open(ctx, io, ("q", 0))
    assert not t.kept and io.restores == [(("q", 0), None, False)]


def test_a_kept_task_is_rebuilt_when_its_changelog_moved(tmp_path, eos):
    kafka = FakeKafka()
    ctx = _context(tmp_path, eos)
    _micro_batch(ctx, FakeIO(kafka, eos), 0, [0])
    kafka.ends = {CHANGELOG: 7}
    io = FakeIO(kafka, eos)
    assert not _open(ctx, io, ("q", 1)).kept and len(io.restores) == 1


def test_a_replayed_micro_batch_writes_nothing_and_restores_from_before_it(tmp_path):
    kafka = FakeKafka()
    ctx = _context(tmp_path, True)
    _micro_batch(ctx, FakeIO(kafka, True), 0, [0])
    before = kafka.marker.previous
    io = FakeIO(kafka, True)
    t = _open(ctx, io, ("q", 0))  # Spark runs batch 0 again
    assert t.replay and t.again and not t.kept
    assert io.restores == [(("q", 0), before, True)]
    t.feed([_record(0)])
    t.discard()
    assert [v for _, v in kafka.output] == [b"V0"]


def test_metrics_count_once_per_commit_and_a_move_once_per_open(tmp_path, eos):
    from kspark._kafka.transactions import Marker

    kafka = FakeKafka()
    kafka.marker = Marker("q", 0, None, None, producer="p", where="elsewhere:/state")
    ctx = _context(tmp_path, eos)
    t = _open(ctx, FakeIO(kafka, eos), ("run", 0))
    t.feed([_record(1)])
    a = t.commit()
    t.feed([_record(2)])
    b = t.commit()
    assert (a.moves, b.moves, a.commits, b.commits) == (1, 0, 1, 1)
    assert a.where == {"0_0": t.here} and a.changelog_records == 0


class _WallTicker(Processor):
    """Forwards ("tick", records seen) on every wall-clock punctuation (every 10 s)."""

    def init(self, context):
        self.context, self.seen = context, 0
        context.schedule(10_000, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, now):
        self.context.forward(Record("tick", str(self.seen), now))

    def process(self, record):
        self.seen += 1


def _ticking(b):
    b.stream(SRC, key_serde=S, value_serde=S).process(_WallTicker).to(
        DST, key_serde=S, value_serde=S)


def test_a_due_wall_clock_punctuation_runs_and_its_output_is_committed(tmp_path, eos):
    kafka = FakeKafka()
    t = _open(_context(tmp_path, eos, _ticking), FakeIO(kafka, eos), ("run", 0))
    now = [t.task.clock()]
    t.task.clock = lambda: now[0]  # the task's wall clock, moved by the test
    assert t.punctuate() is False and t.commit() is None  # not due: nothing to commit
    t.feed([_record(0), _record(1)])
    now[0] += 10_000
    assert t.punctuate() is True
    assert t.commit() is not None  # a punctuation alone makes the interval worth committing
    assert kafka.output == [(DST, b"2")]
    now[0] += 10_000
    assert t.punctuate() is True and t.commit() is not None
    assert kafka.output == [(DST, b"2"), (DST, b"2")] and kafka.marker.batch == 2
