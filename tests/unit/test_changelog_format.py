"""Changelog records in Kafka Streams' layouts (``_engine/state/changelog_format.py``), one
test per rule; the bytes themselves are compared with Java's in the conformance rules
("changelog: ...")."""

from __future__ import annotations

import pytest

from kspark import Materialized, Serdes, SessionWindows, StreamsBuilder, Suppressed, TimeWindows
from kspark._engine.state.changelog_format import (FORMAT_HEADER, RAW, ChangelogCodec,
                                                   codec_for, load_codec, save_codec,
                                                   written_by_old_kspark)
from kspark.state import Stores

S, L = Serdes.String(), Serdes.Long()
TS = (1234).to_bytes(8, "big")


def _stores(build):
    b = StreamsBuilder()
    build(b.stream("in", key_serde=S, value_serde=L).group_by_key())
    return {name: builder for name, (builder, _) in b.build()._graph.stores.items()}


def test_a_timestamped_value_is_logged_alone_with_its_timestamp_as_the_records():
    (builder,) = _stores(lambda g: g.count(Materialized.as_("c"))).values()
    codec = codec_for(builder)
    assert codec.encode(b"k", TS + b"v", 99) == (b"k", b"v", 1234)
    assert codec.decode(b"k", b"v", 1234) == (b"k", TS + b"v")


def test_a_delete_is_logged_with_the_records_time():
    codec = ChangelogCodec(strip_timestamp=True, timestamp_from_value=True)
    assert codec.encode(b"k", None, 99) == (b"k", None, 99)
    assert codec.decode(b"k", None, 99) == (b"k", None)


def test_a_window_key_carries_javas_sequence_number_zero():
    (builder,) = _stores(lambda g: g.windowed_by(TimeWindows.of_size_and_grace(10, 0))
                         .count(Materialized.as_("w"))).values()
    key = b"k" + bytes(8)
    assert codec_for(builder).encode(key, TS + b"v", 0) == (key + bytes(4), b"v", 1234)
    assert codec_for(builder).decode(key + bytes(4), b"v", 1234) == (key, TS + b"v")


def test_a_session_value_is_logged_alone_with_the_records_time():
    (builder,) = _stores(lambda g: g.windowed_by(SessionWindows.of_inactivity_gap_and_grace(
        10, 0)).count(Materialized.as_("s"))).values()
    assert codec_for(builder).encode(b"k", TS + b"v", 99) == (b"k", b"v", 99)


def test_a_plain_store_is_logged_as_kept():
    builder = Stores.key_value_store_builder(Stores.persistent_key_value_store("p"), S, L)
    assert codec_for(builder) is RAW
    assert RAW.encode(b"k", b"v", 7) == (b"k", b"v", 7)


@pytest.mark.parametrize("headers, old", [
    ([("kspark.batch", b"q:1")], True),
    ([("kspark.batch", b"q:1"), FORMAT_HEADER], False),
    ([FORMAT_HEADER], False),
    (None, False),  # Java's, or a real-time run's of before (caught by the old names)
])
def test_a_micro_batch_record_of_ksparks_earlier_layout_is_recognised(headers, old):
    assert written_by_old_kspark(ChangelogCodec(True, True), TS + b"v", headers) is old
    assert not written_by_old_kspark(RAW, TS + b"v", headers)


def test_the_codec_noted_beside_a_store_is_what_a_rebuild_reads(tmp_path):
    codec = ChangelogCodec(True, True, bytes(4))
    save_codec(tmp_path, "w", codec)
    assert load_codec(tmp_path, "w") == codec and load_codec(tmp_path, "x") is None


def _versioned(history_ms=100):
    return Stores.versioned_key_value_store_builder(
        Stores.persistent_versioned_key_value_store("v", history_ms), S, L)


def test_a_versioned_store_logs_each_version_at_its_valid_from(tmp_path):
    from kspark._engine.state.build import build_store

    logged = []
    store = build_store(_versioned(), tmp_path, lambda k, v, ts=None: logged.append((k, v, ts)))
    try:
        store.put("a", 1, 10)
        store.put("a", 2, 500)
        store.put("a", 3, 20)  # too old to keep: Java logs it all the same
        store.delete("a", 600)
    finally:
        store.close()
    one, two, three = (L.serialize("t", n) for n in (1, 2, 3))
    assert logged == [(b"a", one, 10), (b"a", two, 500), (b"a", three, 20), (b"a", None, 600)]


def test_a_java_written_versioned_changelog_restores_as_its_puts():
    from tests.unit.test_recovery import MemoryChangelogs

    from kspark._engine.state.bytes_stores import InMemoryBytesStore
    from kspark._engine.state.recovery import StoreRestore, restore_store

    logs = MemoryChangelogs()
    for key, value in ((b"a", 1), (b"a", 2), (b"b", 3), (b"a", None)):
        logs.append("c", 0, key, None if value is None else L.serialize("t", value))
    raw = InMemoryBytesStore("v")  # record timestamps: their offsets (0, 1, 2, 3)
    assert restore_store(logs, "0_0", raw, StoreRestore("v", "c", 0, 0, 4, False), None,
                         codec=codec_for(_versioned())) == 4
    store = _versioned().with_logging_disabled().typed_store(raw)
    assert store.get("a") is None and store.get("a", 1).value == 2
    assert store.get("b").value == 3 and store.get("a", 0).value == 1


def test_a_versioned_store_is_rebuilt_as_one_record_per_version(tmp_path):
    codec = codec_for(_versioned(77))
    save_codec(tmp_path, "v", codec)
    assert load_codec(tmp_path, "v") == codec and codec.versioned_history_ms == 77
    history = (bytes(7) + b"\x05" + b"\x01" + (1).to_bytes(4, "big") + b"x"
               + bytes(7) + b"\x09" + b"\x00" + bytes(4))
    assert codec.records(b"k", history) == [(b"k", b"x", 5), (b"k", None, 9)]


def test_an_outer_joins_shared_store_holds_javas_left_or_right_lists():
    from kspark._engine.joins.stream_stream import PendingValuesSerde

    serde = PendingValuesSerde(L, S)
    java = bytes.fromhex("01000000020000000901000000000000000100000009010000000000000002")
    assert PendingValuesSerde(L, L).deserialize("t", java) == [(True, 1), (True, 2)]
    assert serde.deserialize("t", serde.serialize("t", [(False, "r"), (True, 7)])) == [
        (False, "r"), (True, 7)]
    b = StreamsBuilder()
    left, right = (b.stream(t, key_serde=S, value_serde=L) for t in ("l", "r"))
    from kspark import JoinWindows

    left.outer_join(right, lambda x, y: x, JoinWindows.of_time_difference_and_grace(5, 0))
    shared = [bld for name, (bld, _) in b.build()._graph.stores.items() if "SHARED" in name]
    assert codec_for(shared[0]).refuse_old
    assert written_by_old_kspark(codec_for(shared[0]), b"\x00", [("kspark.batch", b"q:1")])


JAVA_BUFFERED = bytes.fromhex(  # Java 4.1.1's buffered a@[0, 10): prior 0, old 1, new 2
    "0000000000000007000000000000000100000002696e000000000000000000000008000000000000000000"
    "0000080000000000000001000000080000000000000002000000000000000a")


def _suppress_builder():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=L).group_by_key()
     .windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
     .suppress(Suppressed.until_window_closes()))
    (builder,) = [bld for name, (bld, _) in b.build()._graph.stores.items() if "SUPPRESS" in name]
    return builder


def test_a_java_written_suppress_buffer_restores_in_kspark():
    from tests.unit.test_recovery import MemoryChangelogs

    from kspark._engine.state.buffer_value import Buffered
    from kspark._engine.state.bytes_stores import InMemoryBytesStore
    from kspark._engine.state.recovery import StoreRestore, restore_store

    builder, key = _suppress_builder(), bytes.fromhex("610000000000000000")
    codec = codec_for(builder)
    assert codec.encode(key, JAVA_BUFFERED, 99) == (key, JAVA_BUFFERED, None)  # no timestamp
    logs = MemoryChangelogs()
    logs.append("c", 0, key, JAVA_BUFFERED, [("v", b"\x03")])
    logs.append("c", 0, b"b" + bytes(8), JAVA_BUFFERED, [("v", b"\x03")])
    logs.append("c", 0, b"b" + bytes(8), None)  # evicted: Java's tombstone has no header
    raw = InMemoryBytesStore("s")
    assert restore_store(logs, "0_0", raw, StoreRestore("s", "c", 0, 0, 3, False), None,
                         codec=codec) == 3
    store = builder.with_logging_disabled().typed_store(raw)
    ((k, entry),) = [(kv.key, kv.value) for kv in store.all()]
    assert (k.key, k.window.start) == ("a", 0)
    assert entry == Buffered(10, 2, 1, 0, 7, (), "in", 0, 1)
    assert store.value_serde.serialize("s", entry) == JAVA_BUFFERED  # and back, byte for byte


def test_a_buffered_record_without_javas_version_header_is_refused():
    from tests.unit.test_recovery import MemoryChangelogs

    from kspark._engine.state.bytes_stores import InMemoryBytesStore
    from kspark._engine.state.recovery import StoreRestore, restore_store
    from kspark.errors import CorruptStateError

    logs = MemoryChangelogs()
    logs.append("c", 0, b"a" + bytes(8), JAVA_BUFFERED)  # an earlier kspark's, say
    with pytest.raises(CorruptStateError, match=r"lacks the header .*reset the application"):
        restore_store(logs, "0_0", InMemoryBytesStore("s"),
                      StoreRestore("s", "c", 0, 0, 1, False), None,
                      codec=codec_for(_suppress_builder()))


def test_a_suppress_buffer_logs_its_dirty_keys_at_commit_in_javas_hash_set_order():
    from kspark._engine.state.bytes_stores import InMemoryBytesStore
    from kspark._engine.state.dirty_log import CommitLoggingLayer, java_hash_set_order

    # Java's order of these four keys (conformance rule "a suppress buffer logs ...")
    keys = [bytes.fromhex(h) for h in ("650000000000000028", "62000000000000000a",
                                       "63000000000000000a", "64000000000000000a")]
    assert java_hash_set_order(keys, 16) == [keys[1], keys[0], keys[3], keys[2]]
    logged = []
    layer = CommitLoggingLayer(InMemoryBytesStore("s"), lambda k, v: logged.append(k))
    many = [b"%d" % i for i in range(13)]  # a 13th key grows Java's table to 32 buckets
    for k in many:
        layer.put(k, b"v")
    layer.flush()
    assert logged == java_hash_set_order(many, 32) and layer._capacity == 32
