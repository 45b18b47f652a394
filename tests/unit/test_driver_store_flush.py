"""What a commit writes to disk: the TopologyTestDriver's commits (one per record) leave a
persistent store's writes in RocksDB's memtable, with results equal to an in-memory
store's, and its close writes them down; a host's commit writes them to disk before its
checkpoint, as before (``durable_commits``, docs/testing.md)."""

from pathlib import Path

from kspark import Materialized, Serdes, StreamsBuilder, TimeWindows
from kspark._engine.nodes import RawRecord
from kspark._engine.state.build import bottom
from kspark._engine.state.bytes_stores import RocksDBBytesStore
from kspark.testing import TopologyTestDriver
from tests.unit.test_hosted_task import DST, SRC, S, WORKER, FakeIO, FakeKafka, _context

L = Serdes.Long()
APP = "flush-app"


def _count(in_memory: bool, windowed: bool = False):
    b = StreamsBuilder()
    grouped = b.stream("in", key_serde=S, value_serde=S).group_by_key()
    m = Materialized.as_("counts")
    m = m.in_memory() if in_memory else m
    if windowed:
        (grouped.windowed_by(TimeWindows.of_size_and_grace(10, 5)).count(m).to_stream(
            lambda wk, v: f"{wk.key}@{wk.window.start}").to("out", key_serde=S, value_serde=L))
    else:
        grouped.count(m).to_stream().to("out", value_serde=L)
    return b.build()


def _run(in_memory: bool, windowed: bool):
    """(outputs with timestamps, store contents) of 300 records over 7 keys, out of order."""
    with TopologyTestDriver(_count(in_memory, windowed)) as d:
        topic = d.create_input_topic("in", S, S)
        for i in range(300):
            topic.pipe_input(f"k{i % 7}", "v", (i * 37) % 101)
        out = [(r.key, r.value, r.timestamp)
               for r in d.create_output_topic("out", S, L).read_records_to_list()]
        if windowed:
            store = [(kv.key.key, kv.key.window.start, kv.value)
                     for kv in d.get_window_store("counts").all()]
        else:
            store = [tuple(kv) for kv in d.get_key_value_store("counts").all()]
        return out, store


def test_the_driver_counts_the_same_with_a_persistent_store_as_with_an_in_memory_one():
    out, store = _run(in_memory=False, windowed=False)
    assert (out, store) == _run(in_memory=True, windowed=False)
    assert len(out) == 300 and sorted(store)[0] == ("k0", 43)


def test_the_driver_counts_windows_the_same_with_a_persistent_store_as_in_memory():
    out, store = _run(in_memory=False, windowed=True)
    assert (out, store) == _run(in_memory=True, windowed=True)
    assert out and store


def _ssts(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.sst"))


def test_the_driver_leaves_writes_in_memory_until_its_close_writes_them_to_disk(tmp_path):
    config = {"application.id": APP, "state.dir": str(tmp_path)}
    where = tmp_path / APP / "0_0" / "counts"
    d = TopologyTestDriver(_count(in_memory=False), config)
    topic = d.create_input_topic("in", S, S)
    for i in range(50):
        topic.pipe_input(f"k{i % 5}", "v", i)
    assert bottom(d.get_state_store("counts")).durable_commits is False
    assert _ssts(where) == []  # fifty commits, no memtable written out
    d.close()
    assert _ssts(where)  # the close wrote it
    raw = RocksDBBytesStore("counts", where)
    try:
        assert sum(1 for _ in raw.range(None, None)) == 5
    finally:
        raw.close()
    with TopologyTestDriver(_count(in_memory=False), config) as again:  # the same files
        assert again.get_key_value_store("counts").get("k3") == 10
        again.create_input_topic("in", S, S).pipe_input("k3", "v", 60)
        assert again.get_key_value_store("counts").get("k3") == 11


def test_a_store_built_without_durable_commits_writes_its_memtable_only_when_closed(tmp_path):
    durable, light = (RocksDBBytesStore(n, tmp_path / n, durable_commits=n == "durable")
                      for n in ("durable", "light"))
    for store in (durable, light):
        store.put(b"k", b"v")
        store.flush()
    assert _ssts(tmp_path / "durable") and not _ssts(tmp_path / "light")
    assert light.get(b"k") == b"v"
    light.close()
    durable.close()
    assert _ssts(tmp_path / "light")


class _CheckpointSees(FakeIO):
    """The fake port, noting at each checkpoint whether the stores' writes are on disk."""

    def __init__(self, kafka, eos, state_dir: Path):
        super().__init__(kafka, eos)
        self.state_dir, self.seen = state_dir, []

    def checkpoint(self, task, host):
        store = bottom(task.stores["counts"])
        memtable = store._db.property_int_value("rocksdb.num-entries-active-mem-table")
        self.seen.append((store.durable_commits, memtable, _ssts(store.directory)))
        return super().checkpoint(task, host)


def _host_count(b):
    b.stream(SRC, key_serde=S, value_serde=S).group_by_key().count(
        Materialized.as_("counts")).to_stream().to(DST, key_serde=S, value_serde=L)


def test_a_host_commit_writes_the_persistent_store_to_disk_before_its_checkpoint(tmp_path):
    WORKER.kept.clear("tasks")
    ctx = _context(tmp_path, False, _host_count)
    io = _CheckpointSees(FakeKafka(), False, tmp_path)
    t = WORKER.hosted(ctx, 0, io)
    t.acquire(t.open(("q", 0), False))
    t.begin(("q", 0))
    t.feed([RawRecord(SRC, 0, i, 1000 + i, f"k{i % 3}".encode(), b"v", ()) for i in range(9)])
    t.advance((SRC, 0), 9)
    t.commit(force=True)
    t.release()
    ((durable, memtable, ssts),) = io.seen
    assert durable is True and memtable == 0 and ssts  # flushed before the checkpoint
