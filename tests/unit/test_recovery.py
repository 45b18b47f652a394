"""Every recovery decision of the engine (``_engine/state/recovery.py`` and
``global_recovery.py``), against an in-memory ChangelogReader: no broker, no Spark.

The Spark host carries these decisions out against Kafka; the integration tests
(test_stale_local_state, test_crafted_changelog, test_global_state, ...) check the same
outcomes end to end.
"""

import logging

import pytest

from kspark import Materialized, Serdes, StreamsBuilder
from kspark._engine.state.bytes_stores import InMemoryBytesStore, RocksDBBytesStore
from kspark._engine.state.global_recovery import (
    GlobalRebuild,
    catch_up_globals,
    global_reset_policy,
    rebuild_policy,
    why_rebuild_global,
)
from kspark._engine.state.recovery import (
    StoreRestore,
    check_changelog_ids,
    local_resume_point,
    plan_store_restore,
    restore_store,
    stamped_by_this_batch_or_later,
)
from kspark._engine.task import BATCH_HEADER
from kspark._graph.instantiate import build_global_task
from kspark.errors import ChangelogLostError, CorruptStateError

S = Serdes.String()


class _Record:
    """A record as a Kafka client returns it (methods, not fields)."""

    def __init__(self, offset, key, value, headers=None, timestamp=0):
        self._o, self._k, self._v, self._h, self._t = offset, key, value, headers, timestamp

    def key(self):
        return self._k

    def value(self):
        return self._v

    def offset(self):
        return self._o

    def timestamp(self):
        return (0, self._t)

    def headers(self):
        return self._h


class MemoryChangelogs:
    """A ChangelogReader over topics held in memory: ``{topic: {partition: [record]}}``,
    offsets from ``earliest`` on (records below it were deleted)."""

    def __init__(self, topics=None, ids=None, earliest=None):
        self.topics = topics or {}
        self.ids = ids or {t: f"id-{t}" for t in self.topics}
        self.earliest = earliest or {}
        self.reads = []

    def append(self, topic, partition, key, value, headers=None):
        log = self.topics.setdefault(topic, {}).setdefault(partition, [])
        offset = self.end_offsets([(topic, partition)])[(topic, partition)]
        log.append(_Record(offset, key, value, headers, timestamp=offset))

    def _first(self, tp):
        return self.earliest.get(tp, 0)

    def end_offsets(self, partitions):
        return {tp: self._first(tp) + len(self.topics.get(tp[0], {}).get(tp[1], []))
                for tp in partitions}

    def earliest_offsets(self, partitions):
        return {tp: self._first(tp) for tp in partitions}

    def topic_ids(self, topics):
        return {t: self.ids[t] for t in topics if t in self.ids}

    def read(self, topic, partition, start, end):
        self.reads.append((topic, partition, start, end))
        first = self._first((topic, partition))
        records = self.topics[topic][partition][max(start - first, 0):end - first]
        for i in range(0, len(records), 2):  # two per poll: batches are lists
            yield records[i:i + 2]


# -- a task's stores: where a restore starts ------------------------------------------------

def test_a_checkpoint_at_or_below_the_changelog_end_is_continued():
    plan = plan_store_restore("0_1", "counts", ("c", 1), end=10, checkpointed=4,
                              persistent=True, app_dir="d/app")
    assert plan == StoreRestore("counts", "c", 1, 4, 10, wipe=False)
    assert plan_store_restore("0_1", "counts", ("c", 1), 10, 10, True, "d/app").start == 10


def test_no_valid_checkpoint_wipes_and_restores_from_the_beginning():
    assert plan_store_restore("0_0", "s", ("c", 0), 7, None, True, "d") == \
        StoreRestore("s", "c", 0, 0, 7, wipe=True)


def test_a_checkpoint_below_the_changelog_log_start_wipes_and_restores_at_once(caplog):
    # the records after the checkpoint are gone (retention or deleted records): reading from
    # the checkpoint would wait for them until the read timeout; Kafka Streams treats the
    # task as corrupted and restores it from scratch
    with caplog.at_level(logging.WARNING, logger="kspark"):
        plan = plan_store_restore("0_0", "s", ("c", 0), end=20, checkpointed=4,
                                  persistent=True, app_dir="d", log_start=9)
    assert plan == StoreRestore("s", "c", 0, 9, 20, wipe=True)  # from the first record left
    assert "now starts at offset 9" in caplog.text
    assert not plan_store_restore("0_0", "s", ("c", 0), 20, 9, True, "d", log_start=9).wipe


def test_an_in_memory_store_is_always_restored_from_the_beginning():
    # even with a checkpoint past the end: its checkpoint describes nothing it holds
    assert plan_store_restore("0_0", "s", ("c", 0), 7, 3, False, "d").wipe
    assert plan_store_restore("0_0", "s", ("c", 0), 7, 99, False, "d").start == 0


def test_a_checkpoint_ahead_of_the_changelog_end_is_a_lost_changelog():
    with pytest.raises(ChangelogLostError) as e:
        plan_store_restore("1_2", "counts", ("app-counts-changelog", 2), 5, 8, True, "/s/app")
    assert str(e.value) == (
        "task 1_2: changelog topic 'app-counts-changelog' partition 2 ends at offset 5, but "
        "store 'counts''s local state was checkpointed at offset 8: the changelog was deleted "
        "or recreated, and restoring from it would silently lose state. Either rebuild the "
        "changelog from the local state (kspark changelog rebuild, see docs/architecture.md), "
        "or reset the application (delete /s/app and the application's internal topics, then "
        "reprocess)")


# -- a task's progress: this batch or a later one -------------------------------------------

def test_progress_of_this_batch_or_a_later_one_is_ahead_and_resumes_its_previous():
    before = {"stream_time": 3}
    for saved_by in (("q", 5), ("q", 6)):
        local = {"stream_time": 9, "query": saved_by[0], "batch": saved_by[1], "previous": before}
        assert local_resume_point(local, ("q", 5)) == (before, True)


def test_progress_of_an_earlier_batch_or_another_query_is_resumed_as_is():
    local = {"stream_time": 9, "query": "q", "batch": 4}
    assert local_resume_point(local, ("q", 5)) == (local, False)
    assert local_resume_point(local, ("other", 1)) == (local, False)
    assert local_resume_point(local, None) == (local, False)
    assert local_resume_point(None, ("q", 5)) == (None, False)
    assert local_resume_point({"stream_time": 9}, ("q", 0)) == ({"stream_time": 9}, False)


# -- a task's changelogs: topic ids ---------------------------------------------------------

def test_a_changelog_whose_topic_id_changed_since_the_checkpoint_is_lost():
    parts = {"counts": ("app-counts-changelog", 0)}
    with pytest.raises(ChangelogLostError) as e:
        check_changelog_ids("0_0", parts, {("app-counts-changelog", 0): 4},
                            {"app-counts-changelog": "OLD"}, {"app-counts-changelog": "NEW"})
    assert str(e.value) == (
        "task 0_0: changelog topic 'app-counts-changelog' was deleted and created again (topic "
        "id NEW, but store 'counts''s local state was checkpointed from topic id OLD); "
        "restoring from it would silently lose state. Either delete it and rebuild it from the "
        "local state (kspark changelog rebuild, see docs/architecture.md), or reset the "
        "application")


def test_topic_ids_pass_when_unchanged_unknown_or_without_checkpoint():
    parts = {"s": ("c", 0)}
    check_changelog_ids("0_0", parts, {("c", 0): 1}, {"c": "A"}, {"c": "A"})
    check_changelog_ids("0_0", parts, {("c", 0): 1}, {}, {"c": "B"})  # none recorded
    check_changelog_ids("0_0", parts, {("c", 0): 1}, {"c": "A"}, {})  # topic missing now
    check_changelog_ids("0_0", parts, {("other", 0): 1}, {"c": "A"}, {"c": "B"})


# -- a task's changelogs: records stamped by this batch or later ----------------------------

def _stamped(batch, offset=0):
    return _Record(offset, b"k", b"v", [("other", b"x"), (BATCH_HEADER, batch.encode())])


def test_records_stamped_by_this_batch_or_a_later_one_of_the_query_are_skipped():
    tp = ("c", 0)
    assert stamped_by_this_batch_or_later(_stamped("q:5"), ("q", 5), tp)
    assert stamped_by_this_batch_or_later(_stamped("q:6"), ("q", 5), tp)
    assert stamped_by_this_batch_or_later(_stamped("a:b:5"), ("a:b", 5), tp)  # last ':' splits
    assert not stamped_by_this_batch_or_later(_stamped("q:4"), ("q", 5), tp)
    assert not stamped_by_this_batch_or_later(_stamped("other:9"), ("q", 5), tp)
    assert not stamped_by_this_batch_or_later(_Record(0, b"k", b"v"), ("q", 5), tp)


def test_a_malformed_batch_header_is_named():
    with pytest.raises(CorruptStateError, match=r"the record at offset 7 of changelog topic 'c' "
                                                r"partition 3 has a kspark.batch header b'q:x'"):
        stamped_by_this_batch_or_later(_stamped("q:x", offset=7), ("q", 1), ("c", 3))


# -- a task's stores: carrying a plan out ---------------------------------------------------

def _changelog(n, stamp_from=None):
    logs = MemoryChangelogs()
    for i in range(n):
        stamp = [(BATCH_HEADER, f"q:{i}".encode())] if stamp_from is not None and \
            i >= stamp_from else None
        logs.append("c", 0, b"k%d" % i, b"v%d" % i, stamp)
    return logs


def test_a_restore_copies_the_planned_range_and_skips_this_batchs_records():
    logs, raw = _changelog(6, stamp_from=3), InMemoryBytesStore("s")
    n = restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 1, 6, False), ("q", 4))
    assert n == 5 and logs.reads == [("c", 0, 1, 6)]
    assert [k for k, _ in raw.range(None, None)] == [b"k1", b"k2", b"k3"]  # q:4 and q:5 skipped


def test_a_restore_skips_what_the_last_commits_run_wrote_after_that_commit():
    """At-least-once: a run (q) committed interval 2, wrote intervals 3 to 5 to the changelog
    and failed before committing them (a crash, a broker restart); the new run (r) restores
    the state of interval 2 and processes their input again, not counting it twice."""
    logs, raw = _changelog(6, stamp_from=0), InMemoryBytesStore("s")
    n = restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 0, 6, False), ("r", 1),
                      uncommitted=("q", 3))
    assert n == 6
    assert [k for k, _ in raw.range(None, None)] == [b"k0", b"k1", b"k2"]


def test_a_planned_wipe_empties_the_store_first_and_an_empty_range_reads_nothing(tmp_path,
                                                                                 caplog):
    logs = _changelog(2)
    raw = RocksDBBytesStore("s", tmp_path / "s")
    try:
        raw.put(b"stale", b"x")
        with caplog.at_level(logging.WARNING, "kspark"):
            assert restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 0, 2, True),
                                 ("q", 1)) == 2
        assert "store 's' has no valid checkpoint for batch ('q', 1); wiping it" in caplog.text
        assert [k for k, _ in raw.range(None, None)] == [b"k0", b"k1"]
        assert restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 2, 2, False),
                             None) == 0
        assert logs.reads == [("c", 0, 0, 2)]
    finally:
        raw.close()


def test_a_restore_writes_rocksdb_in_one_write_batch_per_fetch_with_deletes(tmp_path,
                                                                              monkeypatch):
    """Each fetched list of changelog records goes down as one write batch (put_all), in
    offset order: a tombstone after a put of the same key deletes it."""
    logs = MemoryChangelogs()
    for key, value in [(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"c", b"3"), (b"c", b"4")]:
        logs.append("c", 0, key, value)
    raw = RocksDBBytesStore("s", tmp_path / "s")
    writes = []
    real = raw.put_all
    monkeypatch.setattr(raw, "put_all", lambda items: (writes.append(list(items)), real(items)))
    monkeypatch.setattr(raw, "put", lambda *_: pytest.fail("a record written one by one"))
    try:
        assert restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 0, 5, False),
                             None) == 5
        assert [len(w) for w in writes] == [2, 2, 1]  # the reader's fetches (two per poll)
        assert list(raw.range(None, None)) == [(b"b", b"2"), (b"c", b"4")]
    finally:
        raw.close()


def test_a_restore_check_rejects_a_record_naming_it():
    def check(key, value, topic, partition, offset):
        if value == b"v1":
            raise CorruptStateError(f"bad record at {topic}/{partition}@{offset}")

    with pytest.raises(CorruptStateError, match="bad record at c/0@1"):
        restore_store(_changelog(3), "0_0", InMemoryBytesStore("s"),
                      StoreRestore("s", "c", 0, 0, 3, False), None, check)


# -- global stores (KIP-406) ----------------------------------------------------------------

def test_global_offsets_are_continued_when_valid_or_unknown():
    earliest = {("g", 0): 2, ("g", 1): 0}
    assert why_rebuild_global({}, "g", {"0": 5}, "A", None, earliest) is None
    assert why_rebuild_global({("g", 0): 2}, "g", {"0": 5, "1": 3}, "A", "A", earliest) is None
    assert why_rebuild_global({("h", 0): 0}, "g", {"0": 5}, "A", "A", earliest) is None


def test_global_offsets_below_earliest_or_of_a_recreated_topic_are_invalid():
    below = why_rebuild_global({("g", 0): 1}, "g", {"0": 5}, "A", "A", {("g", 0): 3})
    assert below == GlobalRebuild("its offset 1 of partition 0 is below the topic's earliest "
                                  "offset 3 (records were deleted)", older_batch=False)
    recreated = why_rebuild_global({("g", 0): 1}, "g", {"0": 5}, "B", "A", {("g", 0): 0})
    assert recreated == GlobalRebuild("topic 'g' was deleted and created again (its id changed)")


def test_global_offsets_past_the_pin_are_an_older_batch_rebuilt_from_earliest():
    older = why_rebuild_global({("g", 0): 7}, "g", {"0": 5}, "A", "A", {("g", 0): 0})
    assert older == GlobalRebuild("its offset 7 of partition 0 is past the micro-batch's "
                                  "pinned offset 5 (a replayed older batch)", older_batch=True)
    assert rebuild_policy(older, "latest") == "earliest"
    assert rebuild_policy(GlobalRebuild("deleted"), "latest") == "latest"


def test_the_reset_policy_is_the_topics_then_the_configured_then_earliest():
    assert global_reset_policy("latest", "earliest") == "latest"
    assert global_reset_policy(None, "latest") == "latest"
    assert global_reset_policy(None, None) == "earliest"


def _global_copy(tmp_path):
    b = StreamsBuilder()
    b.global_table("g", key_serde=S, value_serde=S, materialized=Materialized.as_("g-store"))
    b.stream("in", key_serde=S, value_serde=S).to("out")
    config = {"application.id": "rec", "state.dir": str(tmp_path)}
    return build_global_task(b.build()._graph, config)


def _rows(state):
    with state.stores["g-store"].all() as entries:
        return {kv.key: kv.value.value for kv in entries}


def _global_log(*values):
    logs = MemoryChangelogs()
    for i, v in enumerate(values):
        logs.append("g", 0, f"k{i}".encode(), v.encode())
    logs.ids = {"g": "A"}
    return logs


def test_catch_up_applies_only_what_is_new_up_to_the_pins(tmp_path):
    state, logs = _global_copy(tmp_path), _global_log("a", "b", "c")
    try:
        assert catch_up_globals(state, logs, {"g": {"0": 2}}, lambda t: "earliest")
        assert _rows(state) == {"k0": "a", "k1": "b"} and state.offsets == {("g", 0): 2}
        assert state.topic_ids == {"g": "A"}
        assert catch_up_globals(state, logs, {"g": {"0": 3}}, lambda t: "earliest")
        assert not catch_up_globals(state, logs, {"g": {"0": 3}}, lambda t: "earliest")
        assert logs.reads == [("g", 0, 0, 2), ("g", 0, 2, 3)]
        assert not catch_up_globals(state, logs, {}, lambda t: "earliest")
    finally:
        state.close()


def test_catch_up_rebuilds_a_copy_ahead_of_an_older_batchs_pins(tmp_path):
    state, logs = _global_copy(tmp_path), _global_log("a", "b", "c")
    try:
        catch_up_globals(state, logs, {"g": {"0": 3}}, lambda t: "latest")
        assert catch_up_globals(state, logs, {"g": {"0": 1}}, lambda t: "latest")
        assert _rows(state) == {"k0": "a"} and state.offsets == {("g", 0): 1}
    finally:
        state.close()


@pytest.mark.parametrize("policy,rows", [("earliest", {"k3": "d"}), ("latest", {})])
def test_catch_up_rebuilds_per_policy_below_earliest_kip406(tmp_path, caplog, policy, rows):
    state, logs = _global_copy(tmp_path), _global_log("a", "b")
    try:
        catch_up_globals(state, logs, {"g": {"0": 2}}, lambda t: policy)
        logs.append("g", 0, b"k2", b"c")
        logs.append("g", 0, b"k3", b"d")
        del logs.topics["g"][0][:3]  # offsets 0..2 deleted: the copy's 2 is below 3
        logs.earliest[("g", 0)] = 3
        with caplog.at_level(logging.WARNING, "kspark"):
            assert catch_up_globals(state, logs, {"g": {"0": 4}}, lambda t: policy)
        assert ("global store 'g-store': its offset 2 of partition 0 is below the topic's "
                f"earliest offset 3 (records were deleted); wiping it and rebuilding it from "
                f"topic 'g' ({policy}) (KIP-406)") in caplog.text
        assert _rows(state) == rows and state.offsets == {("g", 0): 4}
    finally:
        state.close()


def test_catch_up_rebuilds_a_recreated_topic_and_keeps_a_missing_one(tmp_path, caplog):
    state, logs = _global_copy(tmp_path), _global_log("a", "b")
    try:
        catch_up_globals(state, logs, {"g": {"0": 2}}, lambda t: "earliest")
        logs.ids = {}  # deleted: the copy keeps its contents until it is back
        with caplog.at_level(logging.WARNING, "kspark"):
            assert not catch_up_globals(state, logs, {"g": {"0": 2}}, lambda t: "earliest")
        assert "global topic 'g' does not exist now; global store 'g-store' keeps" in caplog.text
        assert _rows(state) == {"k0": "a", "k1": "b"} and state.topic_ids == {"g": "A"}
        recreated = _global_log("x")
        recreated.ids = {"g": "B"}
        assert catch_up_globals(state, recreated, {"g": {"0": 1}}, lambda t: "earliest")
        assert "was deleted and created again (its id changed)" in caplog.text
        assert _rows(state) == {"k0": "x"} and state.topic_ids == {"g": "B"}
    finally:
        state.close()


def test_restore_remaining_counts_down_while_a_task_restores_and_ends_at_zero(tmp_path,
                                                                               monkeypatch):
    """Kafka Streams' restore-remaining-records-total (stream-task-metrics, INFO): the
    records still to restore, as the restore goes, then 0."""
    from kspark._engine.collector import MemoryCollector
    from kspark._engine.state.build import changelog_topic
    from kspark._engine.task import StreamTask
    from kspark._host import restore as host_restore
    from kspark._host.state import TaskHostState
    from kspark.state import Stores

    topic = changelog_topic("app", "counts")
    logs = MemoryChangelogs({topic: {0: []}})
    for i in range(5):
        logs.append(topic, 0, f"k{i}".encode(), b"v")
    opened, seen = [], []
    reads = logs.read

    def read(*args):  # before each fetch is applied: what the task's gauge says
        for batch in reads(*args):
            seen.append(opened[0].stats.peek()["=restore-remaining|0_0|"][1])
            yield batch

    logs.read = read
    monkeypatch.setattr(host_restore, "_reader", lambda config, settings=None: logs)
    builders = {"counts": Stores.key_value_store_builder(
        Stores.persistent_key_value_store("counts"), S, S)}

    def restore(task):
        opened.append(task)
        return host_restore.restore_task(task, builders, None, host=TaskHostState())

    task = StreamTask("0_0", {}, [], {"application.id": "app", "state.dir": str(tmp_path)},
                      MemoryCollector(), store_builders=builders, restore=restore)
    try:
        assert seen == [5, 3, 1]  # two records a fetch
        assert task.stats.peek()["=restore-remaining|0_0|"][1] == 0
        assert task.stores["counts"].get("k4") == "v"
    finally:
        task.close()
