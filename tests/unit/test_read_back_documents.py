"""What kspark reads back from Kafka or disk besides store values: a task's progress (local
file or exactly-once marker), delayed-records entries, the KIP-95 metadata topic, the Spark
host's task markers and checkpoints. A malformed one is a CorruptStateError naming it and
what to do; never a KeyError/TypeError, a silent default, or an attribute set by name."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from kspark import Serdes, StreamsBuilder, TimeWindows
from kspark._engine.documents import Invalid, check_progress
from kspark._engine.state.build import task_store_dir
from kspark._engine.state.checkpoint import read_progress, write_progress
from kspark._engine.state.delayed import parse_entry
from kspark._control.stop_offsets import RunState
from kspark._kafka.transactions import Marker, decode_marker, encode_marker
from kspark._spark.documents import (
    check_global_checkpoint,
    check_pinned_start,
    check_task_marker,
    read_offset_log,
)
from kspark.errors import CorruptStateError
from kspark.processor import Record
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S = Serdes.String()


def _windowed_topology():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(10, 5)).count().to_stream()
      .map(lambda wk, v: (wk.key, v)).to("out", key_serde=S, value_serde=Serdes.Long()))
    return b.build()


def _progress_after_some_records():
    with TopologyTestDriver(_windowed_topology()) as d:
        i = d.create_input_topic("in", S, S)
        for ts in (1, 5, 12):
            i.pipe_input("a", "x", ts)
        return d._task.progress()


def _resumed(progress):
    """A new task of the same topology that resumes ``progress`` (as a host does)."""
    from kspark import StreamsConfig
    from kspark._engine.collector import MemoryCollector
    from kspark._graph.instantiate import build_task

    import tempfile

    config = StreamsConfig({"application.id": "docs", "bootstrap.servers": "localhost:1",
                            "state.dir": tempfile.mkdtemp()})
    return build_task(_windowed_topology()._graph, "0_0", config, MemoryCollector(),
                      restore=lambda t: t.resume(progress, "the test's progress"))


def test_a_progress_round_trips_into_a_new_task():
    progress = _progress_after_some_records()
    (node, fields), = progress["processors"].items()
    task = _resumed(json.loads(json.dumps(progress)))
    assert task.stream_time == 12 and task.progress() == progress
    processor = next(n.processor for n in task.nodes if n.name == node)
    assert {f: getattr(processor, f) for f in fields} == fields


@pytest.mark.parametrize("change,why", [
    (lambda p: p.update(stream_time="12"), r"'stream_time' must be an integer, got '12'"),
    (lambda p: p.update(stream_time=True), r"'stream_time' must be an integer, got True"),
    (lambda p: p.update(partition_time=[["in", "0", 5]]), r"partition of 'partition_time'\[0\]"),
    (lambda p: p.update(partition_time=[["in", 0]]), r"'partition_time'\[0\] must be a list of 3"),
    (lambda p: p.update(punctuations={"n#0": [10]}),
     r"'punctuations'\['n#0'\] must be a list of 2"),
    (lambda p: p.update(stores={"s": None}), r"'stores'\['s'\] must be an integer"),
    (lambda p: p.update(processors=[]), r"'processors' must be an object"),
    (lambda p: p.update(evil=1), r"unknown field\(s\) 'evil'"),
    (lambda p: next(iter(p["processors"].values())).update(__class__=1),
     r"has no progress field '__class__' \(it keeps 'observed', 'last_emit'\)"),
    (lambda p: next(iter(p["processors"].values())).update(process=0),
     r"no progress field 'process'"),
    (lambda p: next(iter(p["processors"].values())).update(observed="x"),
     r"\]\['observed'\] must be an integer"),
    (lambda p: p["processors"].update({"KSTREAM-SOURCE-0000000000": {"topics": 1}}),
     r"processor 'KSTREAM-SOURCE-0000000000' has no progress field 'topics' \(it keeps none\)"),
])
def test_a_malformed_progress_is_refused_naming_the_field(change, why):
    progress = _progress_after_some_records()
    change(progress)
    with pytest.raises(CorruptStateError, match=r"task 0_0: the test's progress is malformed: "
                                                rf".*{why}.*reset the application"):
        _resumed(progress)


def test_progress_of_an_unknown_processor_is_ignored():
    progress = _progress_after_some_records()
    progress["processors"]["NOT-IN-THIS-TASK"] = {"observed": 1}
    assert _resumed(progress).stream_time == 12


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                    lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(st.sampled_from(["stream_time", "stores", "partition_time",
                                                       "punctuations", "processors", "query",
                                                       "batch", "previous", "x"])
                                      | st.text(max_size=4),
                                      kids, max_size=4), max_leaves=15))
def test_any_json_document_is_accepted_or_invalid_never_a_crash(doc):
    try:
        check_progress(doc, {"n": ("observed",)})
    except Invalid:
        pass


def test_a_damaged_progress_file_names_the_file(tmp_path):
    path = tmp_path / ".progress"
    assert read_progress(path) is None  # missing: the task starts afresh
    for text in ("{not json", "[1, 2]", "\xff", "[" * 100_000):
        path.write_text(text, errors="surrogateescape")
        with pytest.raises(CorruptStateError, match=rf"the file '{re.escape(str(path))}' is not "
                                                    r"(JSON|a JSON object).*Delete it"):
            read_progress(path)


def test_the_spark_host_refuses_a_malformed_local_progress(tmp_path):
    import kspark._host.restore as spark_state
    from kspark._host.state import TaskHostState

    with TopologyTestDriver(_windowed_topology(), {"state.dir": str(tmp_path)}) as d:
        task = d._task
        path = task_store_dir(str(tmp_path), task.config["application.id"], "0_0") / ".progress"
        write_progress(path, {"stream_time": 5, "query": "q", "batch": "7"})
        with pytest.raises(CorruptStateError, match=r"task 0_0: the progress saved in .*\.progress"
                                                    r"' is malformed: 'batch' must be an integer"):
            spark_state.restore_task(task, {}, ("q", 8), host=TaskHostState())
        write_progress(path, {"stream_time": 5, "previous": {"stream_time": []}})
        with pytest.raises(CorruptStateError, match="'stream_time' must be an integer, got"):
            spark_state.restore_task(task, {}, ("q", 8), host=TaskHostState())


# -- exactly-once markers (offset-commit metadata in Kafka) --------------------------------

def test_a_marker_round_trips_and_a_damaged_one_is_named():
    m = Marker("q", 3, {"stream_time": 5, "processors": {"n": {"observed": 5}}}, None, "p")
    assert decode_marker(encode_marker(m)) == m
    assert decode_marker("") is None and decode_marker(None) is None
    for bad in ("kspark1:!!!", "kspark1:" + "eJwLycgsVgCi/LwcBQA=", "other:",
                "kspark1:eJyrrgUAAXUA+Q==",
                encode_marker(Marker("q", 3, {"stream_time": "5"}, None))):
        with pytest.raises(CorruptStateError, match=r"task 1_0's marker .* is malformed: .*reset"):
            decode_marker(bad, "task 1_0's marker (group 'app')")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40) | st.binary(max_size=60).map(
    lambda b: "kspark1:" + __import__("base64").b64encode(__import__("zlib").compress(b)).decode()))
def test_any_marker_metadata_decodes_or_is_named(metadata):
    try:
        decode_marker(metadata)
    except CorruptStateError:
        pass


# -- the KIP-95 metadata topic --------------------------------------------------------------

@pytest.mark.parametrize("records,why", [
    ([(b"a:0", b"x")], r"the offset b'x' of key b'a:0' is not a decimal number"),
    ([(b"no-partition", b"5")], r"key b'no-partition' is not <topic>:<partition>"),
    ([(b"a:b", b"5")], r"is not <topic>:<partition>"),
    ([(b"\xff:0", b"5")], "is not UTF-8"),
    ([(None, b"5")], "a null key"),
    ([(b"app", b"\x80\x05evil")], "marker value"),
])
def test_a_foreign_record_in_the_metadata_topic_is_named(records, why):
    with pytest.raises(CorruptStateError, match=rf"metadata topic 'app-kspark-metadata' partition "
                                                rf"0 offset 41 .*{why}.*Delete that topic"):
        RunState.replay("app", [(b"a:1", b"3")] + records, [40, 41])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.none() | st.binary(max_size=8), st.none() | st.binary(max_size=8)),
                max_size=5))
def test_any_metadata_records_replay_or_are_named(records):
    try:
        RunState.replay("app", records, list(range(len(records))))
    except CorruptStateError:
        pass


# -- delayed records ------------------------------------------------------------------------

def test_a_damaged_delayed_record_is_named_when_it_comes_due():
    store = Stores.delayed_records_store_builder(Stores.in_memory_key_value_store("d"), S, S) \
        .with_logging_disabled().build()
    store.schedule(Record("k", "v", 5, (("h", b"1"),)), due_ms=10, node="p", origin=("in", 0, 3))
    (due,) = store.take_due(10)
    assert (due.record, due.origin) == (Record("k", "v", 5, (("h", b"1"),)), ("in", 0, 3))
    for bad in (b"\x80\x05evil", b"{}",
                b'{"k": 1, "v": null, "t": 1, "n": "p", "h": [], "o": null}',
                b'{"k": null, "v": null, "t": "1", "n": "p", "h": [], "o": null}',
                b'{"k": null, "v": null, "t": 1, "n": "p", "h": [["h"]], "o": null}',
                b'{"k": null, "v": null, "t": 1, "n": "p", "h": [], "o": ["in", 0]}'):
        store.inner.put(bytes(15) + b"\x01", bad)
        with pytest.raises(CorruptStateError, match=r"delayed-records store 'd' holds an entry "
                                                    r"kspark cannot read: .*reset the application"):
            store.take_due(10)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80) | st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(
    st.sampled_from(["k", "v", "t", "n", "h", "o"]),
    st.none() | st.integers() | st.text(max_size=6) | st.lists(st.text(max_size=3), max_size=3))))
def test_any_delayed_entry_parses_or_is_invalid(raw):
    try:
        parse_entry(raw)
    except Invalid:
        pass


# -- the Spark host's documents -------------------------------------------------------------

@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"ranges": [], "evil": 1}',
                                 b'[["t", 0, 1]]', b'[["t", "0", 1, 2]]',
                                 b'{"ranges": [], "globals": {"t": {"x": 1}}}',
                                 b'{"ranges": [], "clock": "now"}', b"[" * 50_000])
def test_a_malformed_task_marker_is_named(raw):
    with pytest.raises(CorruptStateError,
                       match="a task marker in a micro-batch's rows is malformed"):
        check_task_marker(raw)


def test_well_formed_task_markers_pass():
    assert check_task_marker(b'{"ranges": [["t", 0, 1, 5]], "globals": {"g": {"0": 3}}, '
                             b'"clock": 1000}')["clock"] == 1000


@pytest.mark.parametrize("check,raw", [
    (check_global_checkpoint, "{}"), (check_global_checkpoint, '{"offsets": {"t": {"0": "1"}}}'),
    (check_global_checkpoint, '{"offsets": {}, "topic_ids": {"t": 1}}'),
    (check_pinned_start, "[]"), (check_pinned_start, '{"t": {"0": 1.5}}'),
    (read_offset_log, 'v1\n{}\n{"t": []}'), (read_offset_log, "v1\n{}\nnot json"),
])
def test_malformed_spark_host_files_are_named(check, raw):
    with pytest.raises(CorruptStateError, match=r"'/some/file'.* malformed.*delete"):
        check(raw, "/some/file")
