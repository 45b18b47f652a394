"""Issue 42 item 4: the processing exception handler (KIP-1033), user handlers for
deserialization and production errors, and KIP-1034's dead-letter records, as Kafka Streams
does them (ProcessorNode.process, StreamTask.punctuate, RecordDeserializer,
RecordCollectorImpl; the headers of ExceptionHandlerUtils), in the TopologyTestDriver."""

from __future__ import annotations

import logging

import pytest

from kspark import Serdes, StreamsBuilder, StreamsConfig
from kspark.errors import (ConfigError, DeserializationExceptionHandler, ExceptionHandlerError,
                           LogAndContinueExceptionHandler, ProcessingExceptionHandler,
                           ProcessorError, ProducerRecord, ProductionExceptionHandler, Response,
                           Result, SchemaRegistryUnreachableError, SerializationError,
                           SerializationExceptionOrigin, TopologyError)
from kspark.processor import Processor, PunctuationType
from kspark.testing import TopologyTestDriver

S, L = Serdes.String(), Serdes.Long()
JAVA = "org.apache.kafka.streams.errors."
HEADERS = ("exception", "message", "stacktrace", "topic", "partition", "offset")


def boom(v):
    if v % 5 == 0:
        raise ValueError(f"boom {v}")
    return v


def _driver(config=None, fn=boom, sink_serde=L):
    """in -> map_values(fn) -> out, and in -> map_values(+1) -> out2 (a second branch)."""
    b = StreamsBuilder()
    s = b.stream("in", key_serde=S, value_serde=L)
    s.map_values(fn).to("out", key_serde=S, value_serde=sink_serde)
    s.map_values(lambda v: v + 1).to("out2", key_serde=S, value_serde=L)
    return TopologyTestDriver(b.build(), config)


def _pipe(d, *values, headers=None):
    topic = d.create_input_topic("in", S, L)
    for v in values:
        topic.pipe_input("k", v, 100 + v, headers=headers)


def _out(d, topic="out"):
    return d.create_output_topic(topic, S, L).read_values_to_list()


def _dead(d, topic="dlq"):
    return [r for r in d.producer_records() if r.topic == topic]


class Recording(ProcessingExceptionHandler):
    """Resumes, remembering each call and the config it was configured with."""

    configured: dict | None = None

    def __init__(self):
        self.calls = []

    def configure(self, configs):
        Recording.configured = configs

    def handle(self, context, record, exception):
        self.calls.append((context, record, exception))
        return Response.resume()


def test_log_and_fail_is_the_default_and_names_node_record_and_line():
    d = _driver()
    with pytest.raises(ProcessorError) as e:
        _pipe(d, 1, 5)
    text = str(e.value)
    assert "ValueError: boom 5" in text and "offset 1" in text
    assert "test_processing_handlers.py:" in text and "in boom" in text
    assert isinstance(e.value.__cause__, ValueError)


def test_log_and_continue_drops_the_record_at_the_failing_node_only(caplog):
    d = _driver({"processing.exception.handler": "log_and_continue"})
    with caplog.at_level(logging.WARNING, logger="kspark"):
        _pipe(d, 1, 5, 7)
    assert _out(d) == [1, 7]
    assert _out(d, "out2") == [2, 6, 8]  # the other branch still sees the record
    assert d._task.dropped == 1
    [line] = [r.getMessage() for r in caplog.records if "drops the record" in r.getMessage()]
    assert "task 0_0, processor KSTREAM-MAPVALUES" in line
    assert "topic 'in', partition 0, offset 1" in line and "ValueError: boom 5" in line


@pytest.mark.parametrize("value, expected", [
    (JAVA + "LogAndContinueProcessingExceptionHandler", "log_and_continue"),
    ("LogAndContinueProcessingExceptionHandler", "log_and_continue"),
    (JAVA + "LogAndFailProcessingExceptionHandler", "log_and_fail")])
def test_javas_class_names_are_read_as_the_built_in_handlers(value, expected):
    c = StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1",
                       "processing.exception.handler": value})
    assert c["processing.exception.handler"] == expected


def test_a_plain_function_handler_sees_context_record_and_the_users_exception():
    seen = []

    def handler(context, record, exception):
        seen.append((context, record, exception))
        return Result.CONTINUE

    d = _driver({"processing.exception.handler": handler})
    _pipe(d, 5, headers=[("h", b"1")])
    [(context, record, exception)] = seen
    assert (context.topic, context.partition, context.offset) == ("in", 0, 0)
    assert context.processor_node_id.startswith("KSTREAM-MAPVALUES")
    assert (context.task_id, context.timestamp, context.headers) == ("0_0", 105, (("h", b"1"),))
    assert context.source_raw_key == b"k" and L.deserialize("in", context.source_raw_value) == 5
    assert (record.key, record.value) == ("k", 5)
    assert isinstance(exception, ValueError) and str(exception) == "boom 5"
    assert _out(d) == [] and d._task.dropped == 1


def test_a_handler_answering_fail_fails_with_the_processor_error():
    d = _driver({"processing.exception.handler": lambda c, r, e: Response.fail()})
    with pytest.raises(ProcessorError, match="ValueError: boom 5"):
        _pipe(d, 5)


def test_javas_older_response_names_are_understood():
    old = ProcessingExceptionHandler.ProcessingHandlerResponse
    assert old.CONTINUE is Result.RESUME and old.FAIL is Result.FAIL
    d = _driver({"processing.exception.handler": lambda c, r, e: old.CONTINUE})
    _pipe(d, 5, 6)
    assert _out(d) == [6]


def test_a_class_path_is_imported_when_the_config_is_checked():
    path = f"{__name__}.Recording"
    d = _driver({"processing.exception.handler": path})
    _pipe(d, 5, 6)
    assert _out(d) == [6] and d._task.dropped == 1
    for bad, why in [("tests.unit.no_such_module.Handler", "cannot import"),
                     (f"{__name__}.NoSuchName", "has no 'NoSuchName'"),
                     (f"{__name__}.boom.x", "cannot import")]:
        with pytest.raises(ConfigError, match=f"'processing.exception.handler'.*{why}"):
            _driver({"processing.exception.handler": bad})


def test_a_handler_class_is_made_and_configured_with_the_app_config():
    Recording.configured = None
    d = _driver({"processing.exception.handler": Recording,
                 "errors.dead.letter.queue.topic.name": "dlq"})
    assert Recording.configured["errors.dead.letter.queue.topic.name"] == "dlq"
    assert Recording.configured["application.id"] == "topology-test-driver"
    _pipe(d, 5)
    assert d._task.dropped == 1 and _dead(d) == []  # a user handler writes its own


def test_a_handler_instance_is_used_as_given():
    handler = Recording()
    _pipe(_driver({"processing.exception.handler": handler}), 5, 10)
    assert [str(e) for _, _, e in handler.calls] == ["boom 5", "boom 10"]


def test_a_handler_of_another_kind_or_no_handler_is_refused_naming_the_key():
    for bad in (LogAndContinueExceptionHandler, JAVA + "LogAndContinueExceptionHandler", 42,
                "continue"):
        with pytest.raises(ConfigError, match="'processing.exception.handler'"):
            _driver({"processing.exception.handler": bad})


class Ticking(Processor):
    """Forwards its records; its wall-clock punctuation raises."""

    def init(self, context):
        self.context = context
        context.schedule(10, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def tick(self, timestamp):
        raise RuntimeError(f"tick {timestamp}")

    def process(self, record):
        self.context.forward(record)


def _ticking(config):
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).process(Ticking, name="ticker") \
        .to("out", key_serde=S, value_serde=L)
    return TopologyTestDriver(b.build(), config)


def test_a_punctuation_that_raises_goes_to_the_handler_without_a_record():
    handler = Recording()
    d = _ticking({"processing.exception.handler": handler,
                  "errors.dead.letter.queue.topic.name": "dlq"})
    d.advance_wall_clock_time(10)
    [(context, record, exception)] = handler.calls
    assert record is None and str(exception) == "tick 10"
    assert (context.topic, context.partition, context.offset, context.headers) == (
        None, -1, -1, ())
    assert (context.processor_node_id, context.timestamp) == ("ticker", 10)
    assert (context.source_raw_key, context.source_raw_value) == (None, None)
    assert d._task.dropped == 1  # as Java's dropped-records sensor in StreamTask.punctuate


def test_a_punctuation_fails_the_task_under_log_and_fail_and_dead_letters_first():
    d = _ticking({"errors.dead.letter.queue.topic.name": "dlq"})
    with pytest.raises(ProcessorError, match=r"processor 'ticker'.*tick 10.*punctuation"):
        d.advance_wall_clock_time(10)
    [dead] = _dead(d)
    headers = dict(dead.headers)
    assert (dead.key, dead.value, dead.timestamp) == (None, None, 10)
    assert headers["__streams.errors.topic"] is None  # Java: context.topic() is null
    assert (headers["__streams.errors.partition"], headers["__streams.errors.offset"]) == (
        b"-1", b"-1")


def test_a_handler_that_raises_fails_the_task_saying_so():
    def broken(context, record, exception):
        raise KeyError("oops")

    d = _driver({"processing.exception.handler": broken})
    with pytest.raises(ExceptionHandlerError) as e:
        _pipe(d, 5)
    text = str(e.value)
    assert "processing.exception.handler" in text and "broken" in text
    assert "ValueError: boom 5" in text and "KeyError" in text and "offset 0" in text
    assert isinstance(e.value.__cause__, KeyError)


@pytest.mark.parametrize("answer", [None, "CONTINUE", True])
def test_a_handler_answering_no_response_fails_the_task_saying_so(answer):
    d = _driver({"processing.exception.handler": lambda c, r, e: answer})
    with pytest.raises(ExceptionHandlerError, match="Response.resume"):
        _pipe(d, 5)


def test_kspark_errors_never_reach_the_processing_handler():
    handler = Recording()
    # a sink that cannot serialize (production handler: fail)
    d = _driver({"processing.exception.handler": handler}, fn=lambda v: "text",
                sink_serde=Serdes.Integer())
    with pytest.raises(SerializationError):
        _pipe(d, 1)

    class NoStore(Processor):
        def init(self, context):
            self.context = context

        def process(self, record):
            self.context.get_state_store("nope")

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).process(NoStore)
    with pytest.raises(TopologyError):
        _pipe(TopologyTestDriver(b.build(), {"processing.exception.handler": handler}), 1)

    def away(v):
        raise SchemaRegistryUnreachableError("registry away")  # a TransientKafkaError

    with pytest.raises(SchemaRegistryUnreachableError):
        _pipe(_driver({"processing.exception.handler": handler}, fn=away), 1)
    assert handler.calls == []


def test_an_error_downstream_is_decided_once_at_its_node():
    handler = Recording()
    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).map_values(lambda v: v * 5) \
        .map_values(boom).to("out", key_serde=S, value_serde=L)
    d = TopologyTestDriver(b.build(), {"processing.exception.handler": handler})
    _pipe(d, 1, 2)
    assert len(handler.calls) == 2 and d._task.dropped == 2
    assert {c.processor_node_id for c, _, _ in handler.calls} == {"KSTREAM-MAPVALUES-0000000002"}
    assert [r.value for _, r, _ in handler.calls] == [5, 10]  # the record at that node


def test_dead_letter_records_carry_kafka_streams_headers_with_the_stacktrace():
    d = _driver({"processing.exception.handler": "log_and_continue",
                 "errors.dead.letter.queue.topic.name": "dlq"})
    _pipe(d, 1, 5, headers=[("trace-id", b"t1")])
    [dead] = _dead(d)
    assert (dead.key, L.deserialize("dlq", dead.value), dead.timestamp) == (b"k", 5, 105)
    assert dead.partition is None
    names = [k for k, _ in dead.headers]
    assert names == ["trace-id"] + [f"__streams.errors.{h}" for h in HEADERS]
    h = dict(dead.headers)
    assert h["trace-id"] == b"t1"  # the input record's own headers come first
    assert h["__streams.errors.exception"] == b"builtins.ValueError"
    assert h["__streams.errors.message"] == b"boom 5"
    trace = h["__streams.errors.stacktrace"].decode()
    assert trace.startswith("Traceback (most recent call last):")
    assert "in boom" in trace and trace.rstrip().endswith("ValueError: boom 5")
    assert (h["__streams.errors.topic"], h["__streams.errors.partition"],
            h["__streams.errors.offset"]) == (b"in", b"0", b"1")


def test_log_and_fail_also_writes_the_dead_letter_record_before_failing():
    d = _driver({"errors.dead.letter.queue.topic.name": "dlq"})
    with pytest.raises(ProcessorError):
        _pipe(d, 5)
    assert len(_dead(d)) == 1


def test_a_user_handler_writes_its_own_dead_letter_records():
    def handler(context, record, exception):
        return Response.resume([ProducerRecord("mine", context.source_raw_key, b"why",
                                               (("e", str(exception).encode()),))])

    d = _driver({"processing.exception.handler": handler})
    _pipe(d, 5)
    [dead] = _dead(d, "mine")
    assert (dead.key, dead.value, dead.headers, dead.timestamp) == (
        b"k", b"why", (("e", b"boom 5"),), 105)


def test_a_bad_dead_letter_record_fails_the_task_saying_so():
    d = _driver({"processing.exception.handler":
                 lambda c, r, e: Response.resume([ProducerRecord("dlq", "text", None)])})
    with pytest.raises(ExceptionHandlerError, match="dead-letter record"):
        _pipe(d, 5)


# -- deserialization and production handlers of your own

def _raw(d, value: bytes, offset_ts: int) -> None:
    d._pipe("in", b"k", value, offset_ts, (("h", b"1"),))


def test_a_deserialization_handler_of_your_own_sees_the_raw_record():
    seen = []

    class Skip(DeserializationExceptionHandler):
        def handle(self, context, record, exception):
            seen.append((context, record, exception))
            return Response.resume([ProducerRecord("bad-input", record.key, record.value)])

    d = _driver({"deserialization.exception.handler": Skip})
    _raw(d, b"short", 7)
    _pipe(d, 1)
    [(context, record, exception)] = seen
    assert (record.topic, record.offset, record.value) == ("in", 0, b"short")
    assert context.processor_node_id == "KSTREAM-SOURCE-0000000000"
    assert (context.timestamp, context.headers, context.source_raw_value) == (
        7, (("h", b"1"),), b"short")
    assert isinstance(exception, SerializationError)
    assert _out(d) == [1] and d._task.dropped == 1
    assert [(r.key, r.value) for r in _dead(d, "bad-input")] == [(b"k", b"short")]


def test_deserialization_dead_letters_carry_the_stacktrace_too():
    d = _driver({"deserialization.exception.handler": JAVA + "LogAndContinueExceptionHandler",
                 "errors.dead.letter.queue.topic.name": "dlq"})
    _raw(d, b"short", 7)
    [dead] = _dead(d)
    h = dict(dead.headers)
    assert [k for k, _ in dead.headers] == ["h"] + [f"__streams.errors.{x}" for x in HEADERS]
    assert h["__streams.errors.exception"] == b"kspark.errors.SerializationError"
    assert b"SerializationError" in h["__streams.errors.stacktrace"]
    assert (dead.value, dead.timestamp, h["__streams.errors.offset"]) == (b"short", 7, b"0")


def test_a_deserialization_handler_that_fails_raises_the_serialization_error():
    d = _driver({"deserialization.exception.handler": lambda c, r, e: Response.fail()})
    with pytest.raises(SerializationError, match="offset 0"):
        _raw(d, b"short", 7)


class ValueOnly(ProductionExceptionHandler):
    """Resumes on a value that cannot be serialized; a refused record fails."""

    seen: list = []

    def handle_serialization_exception(self, context, record, exception, origin):
        ValueOnly.seen.append((context, record, origin))
        return Response.resume()


def test_a_production_handler_of_your_own_decides_about_serialization_errors():
    ValueOnly.seen = []
    d = _driver({"production.exception.handler": f"{__name__}.ValueOnly"},
                fn=lambda v: "text" if v == 5 else v, sink_serde=Serdes.Integer())
    _pipe(d, 5)
    [(context, record, origin)] = ValueOnly.seen
    assert origin is SerializationExceptionOrigin.VALUE
    assert (record.topic, record.key, record.value, record.timestamp) == ("out", "k", "text", 105)
    assert context.processor_node_id.startswith("KSTREAM-SINK") and context.offset == 0
    assert d._task.dropped == 1


def test_a_production_handler_without_a_serialization_method_fails_as_javas_default():
    class OnlyRefusals(ProductionExceptionHandler):
        def handle(self, context, record, exception):
            return Response.resume()

    d = _driver({"production.exception.handler": OnlyRefusals}, fn=lambda v: "text",
                sink_serde=Serdes.Integer())
    with pytest.raises(SerializationError, match="cannot serialize"):
        _pipe(d, 1)


def test_production_dead_letters_carry_the_input_record_and_every_header():
    d = _driver({"production.exception.handler": "log_and_continue",
                 "errors.dead.letter.queue.topic.name": "dlq"}, fn=lambda v: "text",
                sink_serde=Serdes.Integer())
    _pipe(d, 3)
    [dead] = _dead(d)
    h = dict(dead.headers)
    assert (dead.key, L.deserialize("dlq", dead.value)) == (b"k", 3)
    assert all(f"__streams.errors.{x}" in h for x in HEADERS)
    assert h["__streams.errors.exception"] == b"kspark.errors.SerializationError"


def test_every_drop_counts_once_in_dropped_records():
    d = _driver({"processing.exception.handler": "log_and_continue",
                 "deserialization.exception.handler": "log_and_continue"})
    _raw(d, b"short", 1)
    _pipe(d, 5, 6, 10)
    assert _out(d) == [6] and d._task.dropped == 3
