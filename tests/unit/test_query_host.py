"""Interactive queries where the state is (``_iq/host.py``): what a worker answers
for a task it runs, keeps or closed, against the one task lifecycle over an in-memory
Kafka port (``test_hosted_task.py``'s), with no broker.

The rule under test: a query sees exactly what the task's last commit wrote — never the
interval in flight, never an aborted one, never half a commit — in both guarantees and
both kinds of store."""

import dataclasses
import threading
import uuid

import pytest

from kspark import Materialized, Serdes, StreamsBuilder
from kspark._engine.nodes import RawRecord
from kspark._engine.state.build import task_store_dir
from kspark._engine.state.checkpoint import write_checkpoint
from kspark._graph.subtopology import sub_topologies
from kspark._host.context import HostContext
from kspark._iq.host import QueryHost, query_host
from kspark._host.task_manager import task_manager
from kspark._plan.plan import StagePlan
from kspark.config import StreamsConfig
from kspark.state import Stores
from tests.unit.test_hosted_task import FakeIO, FakeKafka

S = Serdes.String()
SRC, DST = "in", "out"


class DiskIO(FakeIO):
    """The fake port, with the task's checkpoint file as the real one behaves: removed
    before a commit writes the stores down, written after it."""

    def invalidate_checkpoint(self, task):
        super().invalidate_checkpoint(task)
        self._path(task).unlink(missing_ok=True)

    def checkpoint(self, task, host):
        ends = super().checkpoint(task, host)
        write_checkpoint(self._path(task), ends)
        return ends

    @staticmethod
    def _path(task):
        return task_store_dir(task.config["state.dir"], task.config["application.id"],
                              task.task_id) / ".checkpoint"


@pytest.fixture(autouse=True)
def quiet_routes(monkeypatch):
    """Routes are recorded, not sent to Kafka."""
    said = []
    monkeypatch.setattr(QueryHost, "_announce", lambda self, hosted, held, moved=False: not
                        said.append((held.task_id, held.state) + (("moved",) if moved else ())))
    return said


@pytest.fixture(params=["at_least_once", "exactly_once_v2"])
def eos(request):
    return request.param == "exactly_once_v2"


def _context(tmp_path, eos, persistent):
    b = StreamsBuilder()
    supplier = (Stores.persistent_key_value_store if persistent
                else Stores.in_memory_key_value_store)
    b.stream(SRC, key_serde=S, value_serde=S).group_by_key().count(
        Materialized.as_(supplier("counts"))).to_stream().to(DST)
    graph = b.build()._graph
    (st,) = sub_topologies(graph)
    cfg = StreamsConfig({"application.id": f"app-{uuid.uuid4().hex[:8]}",
                         "bootstrap.servers": "unused:9092", "state.dir": str(tmp_path),
                         "processing.guarantee": "exactly_once_v2" if eos else "at_least_once",
                         "default.value.serde": "Long"})
    plan = StagePlan(st.id, st.nodes, {}, {}, {}, {SRC: 1, DST: 1}, streaming=True)
    return HostContext(graph, cfg.as_dict(), plan)


def _record(i, key="k"):
    return RawRecord(SRC, 0, i, 1000 + i, key.encode(), f"v{i}".encode(), ())


def _open(ctx, io, n):
    t = task_manager().hosted(ctx, 0, io)
    t.acquire(t.open(("q", n)))
    t.begin(("q", n))
    return t


def _get(ctx, key="k", stale=False):
    answer = query_host().answer({
        "app": ctx.app_id, "task": "0_0", "store": "counts", "partition": 0,
        "query": {"op": "get", "key": key}, "render": "json", "stale": stale})
    return answer if answer["status"] != "ok" else answer["rows"]


@pytest.mark.parametrize("persistent", [False, True], ids=["in_memory", "rocksdb"])
def test_a_query_sees_the_last_commit_never_the_interval_in_flight(tmp_path, eos, persistent):
    ctx, kafka = _context(tmp_path, eos, persistent), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0), _record(1)])
    assert _get(ctx) == []  # processed, not committed
    t.commit(force=True)
    assert _get(ctx) == [2]
    t.begin(("q", 1))
    t.feed([_record(2)])
    assert _get(ctx) == [2]
    t.commit(force=True)
    assert _get(ctx) == [3]


def test_an_aborted_interval_is_never_seen(tmp_path, eos):
    ctx, kafka = _context(tmp_path, eos, False), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0)])
    t.commit(force=True)
    t.release()
    t = _open(ctx, DiskIO(kafka, eos), 1)
    t.feed([_record(1)])
    t.abort(RuntimeError("the batch failed"))
    assert _get(ctx)["status"] == "unavailable"  # closed with the failed batch: not held


def test_a_query_waits_for_a_commit_writing_the_stores_down(tmp_path, eos):
    ctx, kafka = _context(tmp_path, eos, False), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0)])
    t.commit(force=True)
    t.begin(("q", 1))
    t.feed([_record(1)])
    seen = {}
    step = kafka.step

    def at_commit(name):  # the stores are written down, the transaction not committed yet
        step(name)
        if name == "commit":
            reader = threading.Thread(target=lambda: seen.update(rows=_get(ctx)))
            reader.start()
            reader.join(0.2)
            seen["blocked"] = reader.is_alive()
            seen["reader"] = reader

    kafka.step = at_commit
    t.commit(force=True)
    seen["reader"].join(10)
    assert seen["blocked"] and seen["rows"] == [2]


def test_a_closed_rocksdb_task_answers_from_its_files_while_its_checkpoint_is_valid(
        tmp_path, eos):
    ctx, kafka = _context(tmp_path, eos, True), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0), _record(1, "j")])
    t.commit(force=True)
    t.release()  # a persistent store closes after the batch
    assert _get(ctx) == [1] and _get(ctx, "j") == [1]
    (task_store_dir(str(tmp_path), ctx.app_id, "0_0") / ".checkpoint").unlink()
    assert _get(ctx)["status"] == "unavailable"  # a commit is writing: not answered...
    assert _get(ctx, stale=True) == [1]  # ...unless stale reads are allowed


def test_a_restoring_task_answers_only_stale_queries(tmp_path, eos, quiet_routes):
    ctx, kafka = _context(tmp_path, eos, False), FakeKafka()
    seen = []

    class Restoring(DiskIO):
        def restore(self, task, *args):
            seen.append(_get(ctx)["status"])
            return super().restore(task, *args)

    t = _open(ctx, Restoring(kafka, eos), 0)
    assert seen == ["unavailable"]
    assert quiet_routes == [("0_0", "active", "moved")]  # restoring: held, not announced
    t.feed([_record(0)])
    t.commit(force=True)
    assert _get(ctx) == [1]


def test_the_position_holds_the_changelog_ends_and_the_last_input_offsets(tmp_path, eos):
    ctx, kafka = _context(tmp_path, eos, False), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0), _record(1)])
    t.advance((SRC, 0), 2)
    kafka.ends = {("app-counts-changelog", 0): 7}
    t.commit(force=True)
    answer = query_host().answer({"app": ctx.app_id, "task": "0_0", "store": "counts",
                                  "partition": 0, "query": {"op": "get", "key": "k"},
                                  "render": "json"})
    assert answer["position"] == {"app-counts-changelog": {"0": 7}, SRC: {"0": 1}}
    behind = query_host().answer({"app": ctx.app_id, "task": "0_0", "store": "counts",
                                  "partition": 0, "query": {"op": "get", "key": "k"},
                                  "render": "json", "bound": {SRC: {"0": 5}}})
    assert behind["failure"] == "NOT_UP_TO_BOUND"


def test_a_task_whose_last_commit_another_producer_made_is_announced_again(
        tmp_path, quiet_routes):
    """Another worker may have announced the task since this one did: say it again (a
    worker repeating the route it said last would otherwise stay silent)."""
    ctx, kafka = _context(tmp_path, True, True), FakeKafka()
    t = _open(ctx, DiskIO(kafka, True), 0)
    t.feed([_record(0)])
    t.commit(force=True)
    t.release()
    quiet_routes.clear()
    t = _open(ctx, DiskIO(kafka, True), 1)  # its own last commit: nothing new to say
    assert quiet_routes == [("0_0", "active")]
    t.feed([_record(1)])
    t.commit(force=True)
    t.release()
    kafka.marker = dataclasses.replace(kafka.marker, producer="another-worker")
    quiet_routes.clear()
    _open(ctx, DiskIO(kafka, True), 2)  # another worker committed since: say it again
    assert quiet_routes == [("0_0", "active", "moved")]


def test_a_withdrawn_route_gives_the_task_back_to_the_route_before():
    """A worker that took a task over and failed before committing it withdraws; queries
    go back to the worker that made the task's last commit."""
    from kspark._iq.routes import Route, RouteTable

    a = Route("0_1", ("s",), "127.0.0.1:1", "ta", "active", "h:/a")
    b = Route("0_1", ("s",), "127.0.0.1:2", "tb", "active", "h:/b")
    table = RouteTable("unused:9092", "app")
    try:
        for r in (a, b, dataclasses.replace(b, state="withdrawn")):
            table._take(r)
        assert table.routes["0_1"] == a
        table._take(dataclasses.replace(a, state="withdrawn"))
        assert "0_1" not in table.routes
    finally:
        table.close()


def test_a_standby_route_never_replaces_the_active_and_goes_when_its_copy_becomes_it():
    """A standby copy's route is kept beside the task's route (stale reads may ask it);
    when the copy's worker takes the task over, its route is the task's route."""
    from kspark._iq.routes import Route, RouteTable

    active = Route("0_1", ("s",), "127.0.0.1:1", "ta", "active", "h:/a")
    copy = Route("0_1", ("s",), "127.0.0.1:2", "tb", "standby", "h:/b")
    table = RouteTable("unused:9092", "app")
    try:
        for r in (active, copy):
            table._take(r)
        assert table.routes["0_1"] == active
        assert table.standbys["0_1"] == {"127.0.0.1:2": copy}
        table._take(dataclasses.replace(copy, state="active"))  # the copy's worker took it
        assert table.routes["0_1"].endpoint == "127.0.0.1:2"
        assert table.standbys["0_1"] == {}
    finally:
        table.close()


def test_a_task_taken_over_and_failed_before_its_first_commit_is_withdrawn(
        tmp_path, eos, quiet_routes):
    ctx, kafka = _context(tmp_path, eos, False), FakeKafka()
    t = _open(ctx, DiskIO(kafka, eos), 0)
    t.feed([_record(0)])
    t.abort(RuntimeError("the batch failed"))
    assert quiet_routes == [("0_0", "active", "moved"), ("0_0", "withdrawn", "moved")]
