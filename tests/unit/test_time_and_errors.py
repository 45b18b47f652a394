"""Timestamp extractors, stream time, deserialization handlers, partitioners, topic extractors."""

import pytest
from hypothesis import given, strategies as st

from kspark import Serdes, StreamsBuilder
from kspark.errors import SerializationError, StreamsError
from kspark.processor import Processor, PunctuationType, Topology
from kspark.processor import Record
from kspark.processor.timestamps import (
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from kspark.testing import TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


def _pipe_raw(d, topic, key, value, ts):
    d._pipe(topic, key, value, ts, ())


def _driver(extractor=None, config=None, **to_kwargs):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I, timestamp_extractor=extractor).to(
        "out", **to_kwargs)
    return TopologyTestDriver(b.build(), config)


def test_default_extractor_fails_on_negative_timestamp_naming_the_record():
    d = _driver()
    with pytest.raises(StreamsError, match=r"topic 'in', partition 0, offset 0"):
        _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x01", -1)


def test_log_and_skip_drops_and_counts():
    d = _driver(LogAndSkipOnInvalidTimestamp())
    _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x01", -1)
    _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x02", 5)
    assert d.create_output_topic("out", S, I).read_values_to_list() == [2]
    assert d._task.dropped == 1


def test_use_partition_time_on_invalid():
    d = _driver(UsePartitionTimeOnInvalidTimestamp)
    _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x01", 40)
    _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x02", -5)
    out = d.create_output_topic("out", S, I).read_records_to_list()
    assert [r.timestamp for r in out] == [40, 40]


def test_custom_extractor_sees_deserialized_value_and_sets_output_timestamp():
    class FromValue(TimestampExtractor):
        def extract(self, record, partition_time):
            return record.value * 1000

    d = _driver(FromValue())
    d.create_input_topic("in", S, I).pipe_input("k", 7, timestamp_ms=1)
    assert d.create_output_topic("out", S, I).read_record().timestamp == 7000


def test_wallclock_extractor_and_function_extractor():
    d = _driver(WallclockTimestampExtractor())
    d.create_input_topic("in", S, I).pipe_input("k", 1, timestamp_ms=1)
    assert d.create_output_topic("out", S, I).read_record().timestamp > 1_600_000_000_000
    d = _driver(lambda record, partition_time: 99)
    d.create_input_topic("in", S, I).pipe_input("k", 1, timestamp_ms=1)
    assert d.create_output_topic("out", S, I).read_record().timestamp == 99


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=50))
def test_stream_time_is_the_running_maximum(timestamps):
    seen = []

    class Watch(Processor):
        def init(self, context):
            self.context = context

        def process(self, record):
            seen.append(self.context.current_stream_time_ms())

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).process(Watch)
    d = TopologyTestDriver(b.build())
    i = d.create_input_topic("in", S, I)
    for ts in timestamps:
        i.pipe_input("k", 0, timestamp_ms=ts)
    assert seen == [max(timestamps[: n + 1]) for n in range(len(timestamps))]


def test_log_and_fail_is_the_default_for_bad_records():
    d = _driver()
    with pytest.raises(SerializationError, match=r"topic 'in', partition 0, offset 0"):
        _pipe_raw(d, "in", b"k", b"bad", 1)


def test_log_and_continue_skips_bad_records_and_dead_letters_them():
    d = _driver(config={"deserialization.exception.handler": "log_and_continue",
                        "errors.dead.letter.queue.topic.name": "dlq"})
    _pipe_raw(d, "in", b"k", b"bad", 1)
    _pipe_raw(d, "in", b"k", b"\x00\x00\x00\x03", 2)
    assert d.create_output_topic("out", S, I).read_values_to_list() == [3]
    dead = d.create_output_topic("dlq", Serdes.ByteArray(), Serdes.ByteArray()).read_record()
    assert dead.value == b"bad" and dead.key == b"k"
    headers = dict(dead.headers)
    assert headers["__streams.errors.topic"] == b"in"
    assert headers["__streams.errors.offset"] == b"0"
    assert b"Integer" in headers["__streams.errors.message"]


def test_custom_partitioner_gets_the_partition_count_and_is_checked():
    d = _driver(partitioner=lambda topic, k, v, n: n - 1, value_serde=I)
    d.create_input_topic("in", S, I).pipe_input("k", 1)
    assert d.producer_records()[0].partition == 0  # the driver's topics have one partition
    d = _driver(partitioner=lambda topic, k, v, n: 5)
    with pytest.raises(Exception, match="partition 5"):
        d.create_input_topic("in", S, I).pipe_input("k", 1)


def test_topic_name_extractor():
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=I).to(
        lambda k, v, meta: f"out-{k}-{meta.topic}", value_serde=I)
    d = TopologyTestDriver(b.build())
    d.create_input_topic("in", S, I).pipe_input("a", 1)
    assert d.create_output_topic("out-a-in", S, I).read_value() == 1


class _ScanEvery(Processor):
    """Counts records; every 10 ms of stream time emits the running count."""

    def init(self, context):
        self.context, self.n = context, 0
        context.schedule(10, PunctuationType.STREAM_TIME, self.emit)

    def emit(self, ts):
        self.context.forward(Record("n", self.n, ts))

    def process(self, record):
        self.n += 1


@given(st.lists(st.integers(0, 200), min_size=1, max_size=40), st.integers(0, 40))
def test_a_resumed_task_punctuates_as_if_it_had_never_stopped(timestamps, cut):
    from kspark._engine.collector import MemoryCollector
    from kspark._engine.nodes import RawRecord
    from kspark._graph.instantiate import build_task
    from kspark.config import StreamsConfig

    topo = (Topology().add_source("src", "in", key_serde=S, value_serde=I)
            .add_processor("scan", _ScanEvery, "src").add_sink("sink", "out", "scan",
                                                               key_serde=S, value_serde=I))
    config = StreamsConfig({"application.id": "t", "bootstrap.servers": "x"})
    raws = [RawRecord("in", 0, i, ts, b"k", I.serialize("in", 1), ())
            for i, ts in enumerate(timestamps)]

    def run(parts, progress=None):
        out, done = MemoryCollector(), None
        for part in parts:
            restore = (lambda t, p=progress: t.resume(p)) if progress else None
            task = build_task(topo._graph, "0_0", config, out, restore=restore)
            for raw in part:
                task.process(raw)
            progress, done = task.progress(), task
        return [(r.timestamp, I.deserialize("out", r.value)) for r in out.records], done

    whole, task = run([raws])
    split, resumed = run([raws[:cut], raws[cut:]])
    # the processor's own count restarts (it has no store); when punctuations fire does not
    assert [t for t, _ in split] == [t for t, _ in whole]
    assert resumed.stream_time == task.stream_time == max(timestamps)


class _WallTicker(Processor):
    def init(self, context):
        self.context, self.seen = context, 0
        context.schedule(10_000, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, now):
        self.context.forward(Record("tick", self.seen, now))

    def process(self, record):
        self.seen += 1


def test_wall_clock_punctuation_is_checked_during_a_long_batch():
    from kspark._engine.collector import MemoryCollector
    from kspark._engine.nodes import RawRecord
    from kspark._graph.instantiate import build_task
    from kspark.config import StreamsConfig

    topo = (Topology().add_source("src", "in", key_serde=S, value_serde=I)
            .add_processor("tick", _WallTicker, "src").add_sink("sink", "out", "tick",
                                                                key_serde=S, value_serde=I))
    now = [0]
    out = MemoryCollector()
    task = build_task(topo._graph, "0_0", StreamsConfig({"application.id": "t",
                                                         "bootstrap.servers": "x"}), out,
                      clock=lambda: now[0])

    raws = [RawRecord("in", 0, i, i, b"k", I.serialize("in", 1), ()) for i in range(5000)]
    task.add_records(raws)
    original = task.process

    def slow(raw):  # every record takes 7 ms of wall-clock time
        now[0] += 7
        original(raw)

    task.process = slow
    task.process_buffered()
    ticks = [I.deserialize("out", r.value) for r in out.records]
    # 35 s of processing: the punctuation (every 10 s) fired during it, at the 1,000-record
    # checks past each due time, not only once at the end
    assert ticks == [2000, 3000, 5000]


def test_user_code_errors_name_task_processor_record_and_line():
    from kspark.errors import ProcessorError

    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=Serdes.Json())
      .map_values(lambda v: v["x"], name="pick-x").to("out", value_serde=Serdes.Json()))
    with TopologyTestDriver(b.build()) as d:
        with pytest.raises(ProcessorError) as e:
            d.create_input_topic("in", S, Serdes.Json()).pipe_input("k", None)
    message = str(e.value)
    assert message.startswith("task 0_0, processor 'pick-x': TypeError:")
    assert "topic 'in', partition 0, offset 0" in message
    assert "test_time_and_errors.py:" in message and "<lambda>" in message
    assert isinstance(e.value.__cause__, TypeError)


def _unwritable(config=None):
    """Values of 'bad' keys become strings, which the Integer sink serde cannot write."""
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=I)
      .map_values(lambda k, v: "text" if k == "bad" else v, with_key=True)
      .to("out", key_serde=S, value_serde=I))
    return TopologyTestDriver(b.build(), config)


def test_a_record_a_sink_cannot_serialize_fails_naming_the_sink_by_default():
    d = _unwritable()
    with pytest.raises(SerializationError,
                       match=r"sink .* cannot serialize a record for topic 'out'"):
        d.create_input_topic("in", S, I).pipe_input("bad", 1)


def test_production_handler_log_and_continue_skips_and_dead_letters_the_input_record():
    d = _unwritable({"production.exception.handler": "log_and_continue",
                     "errors.dead.letter.queue.topic.name": "dlq"})
    topic = d.create_input_topic("in", S, I)
    topic.pipe_input("ok", 1)
    topic.pipe_input("bad", 2)
    topic.pipe_input("ok", 3)
    assert d.create_output_topic("out", S, I).read_values_to_list() == [1, 3]
    dead = d.create_output_topic("dlq", Serdes.ByteArray(), Serdes.ByteArray()).read_record()
    assert (dead.key, dead.value) == (b"bad", b"\x00\x00\x00\x02")  # the input record, unchanged
    headers = dict(dead.headers)
    assert headers["__streams.errors.exception"] == b"kspark.errors.SerializationError"
    assert headers["__streams.errors.offset"] == b"1"
