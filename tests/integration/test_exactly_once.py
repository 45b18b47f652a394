"""Exactly-once (KIP-129, processing.guarantee=exactly_once_v2) on Spark and a real broker.

Every replay path ends with the read_committed output exact: no duplicate, no loss, input
order kept per key, aggregates (count, sum, min, max per key) exact, no transaction left
open. Failures are real: a task failing after its commit, an executor process and the
driver process SIGKILLed, two attempts of one task running at once.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kspark import KafkaStreams, Serdes
from kspark._local.broker import LocalBroker, free_port
from kspark._graph.resources import progress_topic
from kspark._kafka.transactions import decode_marker
from tests.integration.separate_disks import executor_state_dirs
from kspark.errors import TaskFencedError, TransactionsUnavailableError
from tests.integration import eos_app, soak
from tests.matrix import full_matrix, sampled

pytestmark = pytest.mark.integration
KEYS = 20


def _topics(admin, topic_name, base: str) -> str:
    return soak.eos_topics(admin, topic_name, base)


def _assert_exact(broker: str, src: str, app_id: str, n: int) -> None:
    soak.assert_exact(broker, src, app_id, n, KEYS)


def test_output_is_exact_and_input_offsets_are_committed_to_the_group(broker, admin, spark,
                                                                     topic_name, tmp_path):
    src = _topics(admin, topic_name, "eos")
    n = 3000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"eos-{src}"
    cfg = eos_app.config(broker, app_id, str(tmp_path / "state"), "exactly_once_v2", 1000)
    streams = KafkaStreams(eos_app.topology(src), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()
    _assert_exact(broker, src, app_id, n)
    # Kafka's tooling sees the application's progress: its group holds the input offsets.
    c = Consumer({"bootstrap.servers": broker, "group.id": app_id})
    committed = c.committed([TopicPartition(src, p) for p in range(3)], timeout=20)
    ends = admin.end_offsets([(src, p) for p in range(3)])
    assert {(tp.topic, tp.partition): tp.offset for tp in committed} == ends
    # Each task's marker names the last batch it committed.
    markers = c.committed([TopicPartition(progress_topic(app_id), p) for p in range(6)], timeout=20)
    c.close()
    batches = {decode_marker(tp.metadata).batch for tp in markers}
    assert batches == {streams.progress()["batches"] - 1}


def test_a_task_failing_after_its_commit_is_replayed_without_writing(broker, admin, topic_name,
                                                                    tmp_path):
    src = _topics(admin, topic_name, "eos-retry")
    n = 4000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"eos-retry-{src}"
    # The first attempt of a source task (0_1) and of an aggregating task (1_0) in batch 1
    # fail right after their commit; Spark runs them again.
    cmd = soak.app_command(broker, src, app_id, str(tmp_path / "state"), "--master", "local[2,4]",
                           "--max-offsets", "1000", "--fail-after-commit", "0_1:1,1_0:1")
    code, lines = soak.finish(soak.start_app(cmd))
    out = "".join(lines)
    assert code == 0, out[-4000:]
    assert "injected failure: task 0_1 after committing batch 1" in out
    assert "injected failure: task 1_0 after committing batch 1" in out
    assert "task 0_1: batch" in out and "already committed" in out
    _assert_exact(broker, src, app_id, n)


def test_driver_killed_after_some_tasks_committed_resumes_exactly(broker, admin, topic_name,
                                                                 tmp_path):
    """micro_batch only: the state it kills in is a task that committed a batch Spark's
    commit log does not have yet, and the restarted query replays that batch (the committed
    task writes nothing); real-time mode has neither a commit log nor replayed batches. A
    driver SIGKILLed mid-run in real-time mode: ``test_async_on_spark.py`` (calls in
    flight, records delayed), and ``make soak SOAK_MODES=real_time`` (this application)."""
    src = _topics(admin, topic_name, "eos-driver")
    n = 6000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"eos-driver-{src}"
    state = tmp_path / "state"
    cmd = soak.app_command(broker, src, app_id, str(state), "--max-offsets", "1500",
                           "--slow-ms", "1")
    # a task, once it committed a batch >= 1, waits (see eos_app.py): a lasting state, not a
    # moment, in which a task committed a batch that Spark has not
    hold = tmp_path / "hold"
    hold.mkdir()
    proc = soak.start_app([*cmd, "--hold-after-commit", str(hold)])
    commits = state / app_id / "checkpoint" / "commits"
    c = Consumer({"bootstrap.servers": broker, "group.id": app_id})
    killed_in = None
    try:
        deadline = time.monotonic() + 300
        while not (hold / "held").exists():
            assert proc.poll() is None, f"the app ended ({proc.returncode}) before a task held"
            assert time.monotonic() < deadline, "no task committed a batch >= 1 in time"
            time.sleep(0.2)
        held = json.loads((hold / "held").read_text())
        parts = [TopicPartition(progress_topic(app_id), p) for p in range(6)]
        markers = [decode_marker(tp.metadata) for tp in c.committed(parts, timeout=30)]
        assert held["batch"] in {m.batch for m in markers if m is not None}, (held, markers)
        assert not (commits / str(held["batch"])).exists(), held  # its task still runs
        os.kill(proc.pid, signal.SIGKILL)  # a task committed, Spark has not
        killed_in = held["batch"]
        proc.wait(60)
    finally:
        c.close()
        if proc.poll() is None:
            proc.kill()
        for pid in soak.descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
    assert killed_in is not None, "never saw a task commit ahead of Spark's commit log"
    code, lines = soak.finish(soak.start_app(cmd))
    out = "".join(lines)
    assert code == 0, out[-4000:]
    assert "already committed" in out, "the restarted query replays the killed batch"
    _assert_exact(broker, src, app_id, n)


@pytest.mark.full_matrix(reason="the suite's time (14 s); the hook's call after a real-time "
                         "commit is unit-tested in test_thread_loop.py")
def test_the_after_commit_hook_runs_in_real_time_mode_once_the_commit_is_in_kafka(
        broker, admin, topic_name, tmp_path):
    """The test hooks reach real-time stream threads too (``HostedTask.commit`` calls
    ``after_commit`` in both modes): a task that committed an interval >= 1 holds in the
    hook (``--hold-after-commit``) with its marker for that interval in Kafka already;
    released, the run ends with the output exact."""
    src = _topics(admin, topic_name, "eos-rt-hook")
    n = 2000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"eos-rt-hook-{src}"
    hold = tmp_path / "hold"
    hold.mkdir()
    proc = soak.start_app(soak.app_command(broker, src, app_id, str(tmp_path / "state"),
                                           "--mode", "real_time", "--hold-after-commit",
                                           str(hold)))
    c = Consumer({"bootstrap.servers": broker, "group.id": app_id})
    try:
        deadline = time.monotonic() + 300
        while not (hold / "held").exists():
            assert proc.poll() is None, f"the app ended ({proc.returncode}) before a task held"
            assert time.monotonic() < deadline, "no real-time task called the hook in time"
            time.sleep(0.2)
        held = json.loads((hold / "held").read_text())
        parts = [TopicPartition(progress_topic(app_id), p) for p in range(6)]
        markers = [decode_marker(tp.metadata) for tp in c.committed(parts, timeout=30)
                   if tp.metadata]
        assert held["batch"] >= 1
        assert held["batch"] in {m.batch for m in markers}, (held, markers)
        (hold / "release").touch()
        code, lines = soak.finish(proc)
    finally:
        c.close()
        if proc.poll() is None:
            proc.kill()
    out = "".join(lines)
    assert code == 0, out[-4000:]
    _assert_exact(broker, src, app_id, n)


# Sampled for the suite's time (25 minutes): real time with copies always; micro-batch with
# copies (66 s) and both modes without them in the full matrix and in `make soak`. A
# micro-batch worker SIGKILLed under exactly-once runs always in test_standalone_cluster.py,
# and micro-batch tasks returning to the executor that keeps their state there too.
@pytest.mark.parametrize("execution_mode, standbys", sampled(
    [("real_time", 1), ("micro_batch", 1), ("real_time", 0), ("micro_batch", 0)],
    keep=[("real_time", 1)]))
def test_executor_killed_mid_batch_on_local_cluster(execution_mode, standbys, broker, tmp_path):
    """One round of the soak harness (``make soak`` runs many; this keeps the harness from
    rotting): an executor SIGKILLed on local-cluster as the second micro-batch starts (real
    time: once the group's committed position first moved, mid-epoch), each executor with
    its own disk; the run goes on without a restart (real time: the lost epoch is followed
    by a new one), output exact. One round, exactly_once_v2 only (``make soak`` runs both
    guarantees, many rounds; ``SOAK_MODES=real_time`` for one mode), with 3,000
    records: two micro-batches of 1,500 (the suite's time budget; with copies, 2,000 in
    batches of 500). Real time: Spark
    retries only the lost executor's stream thread (a job of its own), on the replacement
    executor; with a standby copy of every task (``num.standby.replicas=1``) the lost
    thread's tasks move to the other thread, which keeps their copies. Micro-batch with a
    copy (batches of 500): the kill waits for the first round of copies, and the lost
    executor's tasks go to the executor keeping them. With a copy in real time (and in
    micro-batch in the full matrix), three executors in two zones
    (``rack.aware.assignment.tags=zone``): every copy is in the other zone than its task's
    active, while both zones have an executor."""
    # more batches: the kill waits for the copies
    copies = execution_mode == "micro_batch" and standbys
    # zones in real time (micro-batch's rack-aware copies: the full matrix, the suite's time)
    zones = bool(standbys) and (execution_mode == "real_time" or full_matrix())
    records = 2000 if copies else 3000
    f = soak.soak(broker, rounds=1, records=records, guarantee="exactly_once_v2", keys=KEYS,
                  seed=20261122, work_dir=str(tmp_path), victims=("executor",), max_delay_s=0,
                  max_offsets=500 if copies else 1500, slow_ms=1, mode=execution_mode,
                  standbys=standbys, zones=zones)
    (kill,) = f.kills
    assert kill.pids, "the app finished before its executor could be killed"
    assert kill.executors >= 2, f"expected 2 executor processes, saw {kill.executors}"
    assert kill.restarts == 0, "the run needed a restart after losing an executor"
    if copies:  # the lost executor's tasks went to the executor keeping their copies
        assert "which keeps a warm copy of its stores" in kill.output, kill.output[-4000:]
    if zones:
        _assert_copies_in_other_zones(kill.output)
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions, f.disordered) == (0, 0, 0, 0, 0), f
    (root,) = tmp_path.glob("kspark-soak-*")
    assert len(executor_state_dirs(root)) >= 2, "each executor kept its own state"


def _logged(output: str, marker: str) -> list[str]:
    """The text after ``marker`` of each line of ``output`` carrying it."""
    return [line.split(marker, 1)[1].strip() for line in output.splitlines() if marker in line]


def _assert_copies_in_other_zones(output: str) -> None:
    """As logged by the driver: the executors' zones (probed on each), and where copies are
    kept (micro-batch: per executor; real time: per stream thread, with its executor)."""
    import ast

    probed = [ast.literal_eval(t) for t in _logged(output, "executors' client tags")]
    zone = {e: t["zone"] for tags in probed for e, t in tags.items()}  # replacements too
    assert sorted(probed[0][e]["zone"] for e in probed[0]) == ["a", "a", "b"], probed
    placed = []  # (executor running a task, executor keeping its copy)
    for text in _logged(output, "executors run tasks"):
        runs, keeps = (ast.literal_eval(x) for x in text.split(" and keep copies of "))
        if len({zone[e] for e in runs}) < 2:
            continue  # the killed executor was the one of zone b: no other zone is left
        runner = {t: e for e, tasks in runs.items() for t in tasks}
        placed += [(runner[t], e) for e, tasks in keeps.items() for t in tasks if t in runner]
    for text in _logged(output, "standby copies by client tags: stream threads"):
        where, rest = text.split(" run ", 1)
        runs, keeps = (ast.literal_eval(x) for x in rest.split(" and keep copies of "))
        where = ast.literal_eval(where)
        runner = {t: where[i] for i, tasks in runs.items() for t in tasks}
        placed += [(runner[t], where[i]) for i, tasks in keeps.items() for t in tasks]
    assert placed, output[-4000:]
    same = [(a, c) for a, c in placed if zone[a] == zone[c]]
    assert not same, (same, zone, [line for line in output.splitlines()
                                   if "copies" in line or "client tags" in line][-12:])


def test_two_attempts_of_one_task_the_older_is_fenced_and_never_visible(broker, admin, topic_name,
                                                                        tmp_path):
    from kspark._graph.subtopology import sub_topologies
    from kspark._plan.plan import StagePlan
    from kspark._host.context import HostContext
    from kspark._spark.task_batch import run_task_batch
    from kspark._spark.wire import TaskMarker, marker_batch
    from kspark._worker import registry
    from kspark.config import StreamsConfig
    from kspark.processor import Processor, Topology

    src, dst = topic_name("fence-in"), topic_name("fence-out")
    app_id = f"fence-{src}"
    admin.create_topics({src: 1, dst: 1, progress_topic(app_id): 1})
    started, release = threading.Event(), threading.Event()

    class HoldingProcessor(Processor):
        """In the older attempt's thread: forward the first record, then wait."""

        def init(self, context):
            self.context = context

        def process(self, record):
            self.context.forward(record)
            if threading.current_thread().name == "older" and record.value == "1":
                started.set()
                assert release.wait(120)

    string = Serdes.String()
    topo = (Topology().add_source("in", src, key_serde=string, value_serde=string)
            .add_processor("hold", HoldingProcessor, "in")
            .add_sink("out", dst, "hold", key_serde=string, value_serde=string))
    graph = topo._graph
    (st,) = sub_topologies(graph)
    cfg = StreamsConfig({"application.id": app_id, "bootstrap.servers": broker,
                         "state.dir": str(tmp_path), "processing.guarantee": "exactly_once_v2"})
    plan = StagePlan(st.id, st.nodes, {}, {}, {}, {src: 1, dst: 1}, streaming=True)
    p = Producer({"bootstrap.servers": broker})
    for i, v in enumerate((b"1", b"2", b"3")):
        p.produce(src, key=b"k", value=v, partition=0, timestamp=5 + i)
    assert p.flush(30) == 0
    rows = marker_batch(TaskMarker(0, ((src, 0, 0, 3),)))  # the stage reads offsets 0-2 itself
    ctx = HostContext(graph, cfg.as_dict(), plan)
    outcome: list = []

    def older():
        try:
            outcome.append(list(run_task_batch(ctx, 0, iter([rows]), ("q", 0))))
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    t = threading.Thread(target=older, name="older")
    t.start()
    assert started.wait(60)
    deadline = time.monotonic() + 60  # the older attempt's first record reaches the broker
    while soak.open_transactions(broker, [dst]) == 0:
        assert time.monotonic() < deadline, "the older attempt's write never arrived"
        time.sleep(0.05)
    registry().clear("transactions")  # the newer attempt runs in "another worker": its own producer
    list(run_task_batch(ctx, 0, iter([rows]), ("q", 0)))
    release.set()
    t.join(120)
    assert isinstance(outcome[0], TaskFencedError), outcome
    assert "fenced" in str(outcome[0]) and f"{app_id}-0_0" in str(outcome[0])
    committed = [m.value() for m in soak.read_all(broker, dst)]
    assert committed == [b"1", b"2", b"3"], "the newer attempt's output, once"
    assert soak.open_transactions(broker, [dst]) == 0
    c = Consumer({"bootstrap.servers": broker, "group.id": f"x-{src}", "auto.offset.reset":
                  "earliest", "isolation.level": "read_uncommitted",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(dst, 0, 0)])
    raw: list = []
    deadline = time.monotonic() + 10  # every record up to the log's end (not 10 s of waiting)
    while time.monotonic() < deadline:
        msgs = c.consume(10, 0.2)
        raw += [m.value() for m in msgs if m.error() is None]
        if any(m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF
               for m in msgs):
            break
    c.close()
    assert raw.count(b"1") == 2, "the older attempt did write, in a transaction that was aborted"
    registry().clear("transactions")  # the attempts ran in this process: release their clients


def test_a_cluster_that_cannot_do_transactions_is_refused_at_start(tmp_path, topic_name):
    b = LocalBroker(tmp_path / "broker", port=free_port(),
                    overrides={"transaction.state.log.replication.factor": "3"})
    bootstrap = b.start()
    try:
        from kspark._kafka.admin import Admin

        src = topic_name("notx")
        Admin(bootstrap).create_topics({src: 1, f"{src}-echo": 1, f"{src}-agg": 1})
        cfg = eos_app.config(bootstrap, "notx", str(tmp_path / "state"), "exactly_once_v2", 100)
        with pytest.raises(TransactionsUnavailableError,
                           match=r"transaction\.state\.log\.replication\.factor=3.*1 broker"):
            KafkaStreams(eos_app.topology(src), cfg).start()
    finally:
        b.stop()


def test_a_transaction_that_outlives_its_timeout_is_named(broker, admin, topic_name):
    from kspark._kafka.transactions import Marker, TaskTransactions
    from kspark.errors import TransactionTimeoutError

    dst = topic_name("timeout-out")
    app_id = f"timeout-{dst}"
    admin.create_topics({dst: 1, progress_topic(app_id): 1})
    tx = TaskTransactions(broker, app_id, "0_0", (progress_topic(app_id), 0),
                          {"transaction.timeout.ms": 1500})
    tx.init()
    tx.begin()
    tx.producer.send(dst, b"k", b"v", 1, (), 0)
    tx.producer.flush()
    deadline = time.monotonic() + 60  # until the broker has aborted the transaction
    while soak.open_transactions(broker, [dst]):
        assert time.monotonic() < deadline, "the broker never aborted the timed-out transaction"
        time.sleep(0.1)
    with pytest.raises(TransactionTimeoutError, match=r"transaction\.timeout\.ms=1500"):
        tx.commit(Marker("q", 0, {}, None, tx.instance), {})
    assert soak.read_all(broker, dst) == []
