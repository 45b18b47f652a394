"""Processors that keep stream-time fields across restarts declare it (KeepsProgress), and
the task's progress document keeps its shape: one written before the declaration existed
still resumes, field for field."""

import tempfile

from kspark import JoinWindows, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, \
    StreamsConfig, TimeWindows
from kspark._engine.collector import MemoryCollector
from kspark._engine.progress import KeepsProgress, progress_fields_of
from kspark._graph.instantiate import build_task
from kspark.processor import Processor

S = Serdes.String()

# StreamTask.progress() of _topology() after six records, as the code before the
# KeepsProgress interface wrote it (the same shape goes into Kafka markers; node and store
# names as Kafka Streams generates them, since issue 54)
SAVED = {
    "partition_time": [["in", 0, 12], ["other", 0, 13]],
    "processors": {
        "KSTREAM-AGGREGATE-0000000002": {"last_emit": -1, "observed": 12},
        "KSTREAM-AGGREGATE-0000000004": {"last_emit": -1, "observed": 12},
        "KSTREAM-AGGREGATE-0000000006": {"last_emit": -1, "observed": 12},
        "KSTREAM-JOINOTHER-0000000011": {"min_time": 4611686018427387904, "observed": 13},
        "KSTREAM-JOINTHIS-0000000010": {"min_time": 4611686018427387904, "observed": 12}},
    "punctuations": {},
    "stores": {"KSTREAM-AGGREGATE-STATE-STORE-0000000001": 10,
               "KSTREAM-AGGREGATE-STATE-STORE-0000000003": 12,
               "KSTREAM-AGGREGATE-STATE-STORE-0000000005": 6,
               "KSTREAM-JOINOTHER-0000000011-store": 13, "KSTREAM-JOINTHIS-0000000010-store": 12},
    "stream_time": 13}
# declared since: each join window's last sequence number (none in SAVED: it resumes at 0)
WINDOWED = {"KSTREAM-WINDOWED-0000000008": {"seq": 0}, "KSTREAM-WINDOWED-0000000009": {"seq": 0}}


def _topology():
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=S)
    s.group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
    s.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 5)).count()
    s.group_by_key().windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5)).count()
    o = b.stream("other", key_serde=S, value_serde=S)
    s.join(o, lambda a, c: a + c, JoinWindows.of_time_difference_and_grace(5, 2)).to(
        "out", value_serde=S)
    return b.build()


def _task(restore=None, state_dir=None):
    config = StreamsConfig({"application.id": "progress", "bootstrap.servers": "localhost:1",
                            "state.dir": state_dir or tempfile.mkdtemp()})
    return build_task(_topology()._graph, "0_0", config, MemoryCollector(), restore=restore)


def test_a_progress_saved_before_the_interface_resumes_unchanged():
    task = _task(restore=lambda t: t.resume(SAVED, "the test's progress"))
    try:
        assert task.progress() == {**SAVED, "processors": {**SAVED["processors"], **WINDOWED}}
        for node in task.nodes:
            saved = SAVED["processors"].get(node.name)
            if saved is not None:
                assert isinstance(node.processor, KeepsProgress)
                assert node.processor.save_progress() == saved
    finally:
        task.close()


def test_only_declaring_processors_are_saved():
    task = _task()
    try:
        keepers = {n.name for n in task.nodes if progress_fields_of(n.processor)}
        assert keepers == set(SAVED["processors"]) | set(WINDOWED)
        assert set(task.progress()["processors"]) == keepers
    finally:
        task.close()


def test_a_processor_that_does_not_declare_keeps_nothing():
    class Plain(Processor):
        observed = 5

    assert progress_fields_of(Plain()) == ()


def test_a_rebuilt_task_numbers_a_join_windows_duplicates_on():
    """A task rebuilt from its progress (each micro-batch, with RocksDB stores) does not
    number a join window's records from 0 again: an equal key and time keeps both."""
    state = tempfile.mkdtemp()
    task = _task(state_dir=state)
    try:
        for ts in (1, 1):
            task.add_records([_raw("in", "k", "v", ts)])
            task.process_buffered()
        task.flush()
        progress = task.progress()
    finally:
        task.close()
    assert progress["processors"]["KSTREAM-WINDOWED-0000000008"] == {"seq": 2}
    again = _task(restore=lambda t: t.resume(progress), state_dir=state)
    try:
        again.add_records([_raw("in", "k", "w", 1)])
        again.process_buffered()
        store = again.stores["KSTREAM-JOINTHIS-0000000010-store"]
        assert [kv.value for kv in store.fetch("k", 0, 5)] == ["v", "v", "w"]
    finally:
        again.close()


def _raw(topic, key, value, ts, offset=0):
    from kspark._engine.nodes import RawRecord

    return RawRecord(topic, 0, offset, ts, key.encode(), value.encode(), ())
