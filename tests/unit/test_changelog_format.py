"""Changelog records in Kafka Streams' layouts (``_engine/state/changelog_format.py``), one
test per rule; the bytes themselves are compared with Java's in the conformance rules
("changelog: ...")."""

from __future__ import annotations

import pytest

from kspark import Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows
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
