"""The control topic's typed messages (``_control/messages.py``), its one sender and one
reader (``_control/reports.py``) and a thread's stop watch, over fake clients: what a worker
writes reads back the same; a record that is not what its key names is skipped with a
warning naming where it is, and never reaches the driver's sums. The way through a real
broker: every integration test that asks for ``progress()`` or ``metrics()``."""

import json
import logging
import threading

import pytest

from kspark._control.control_topic import StopWatch
from kspark._control.messages import (Assignment, MalformedMessageError, Stop, TaskReport,
                                      ThreadReport, decode, read_message)
from kspark._control.reports import ControlReader, ReportSender
from kspark._engine.async_.metrics import new_metrics
from kspark._host.metrics import ReportedTotals, TaskMetrics

TOPIC = "app-kspark-control"


class Record:
    """A consumed record, as confluent_kafka's Message answers."""

    def __init__(self, key, value, offset=0, error=None):
        self._key, self._value, self._offset, self._error = key, value, offset, error

    def key(self):
        return self._key

    def value(self):
        return self._value

    def topic(self):
        return TOPIC

    def partition(self):
        return 0

    def offset(self):
        return self._offset

    def error(self):
        return self._error


def _counts():
    return TaskMetrics(records_in=3, records_out=2, commits=1, where={"0_1": "h:/s"},
                       async_={"enrich": {**new_metrics(), "in_flight": 1, "completed": 4,
                                          "total_latency_s": 0.5}},
                       streams={"process|0_1|": [2, 6000, 4000, 2000]}).to_dict()


MESSAGES = [
    TaskReport("0_1", 7, _counts()),
    TaskReport("0_1", None, {}),
    ThreadReport(run="rt-0", thread=1, records_in=500, records_out=480, commits=2,
                 process_rate=250.0, commit_latency_avg_ms=7.0, commit_latency_max_ms=10.0,
                 lag={"in:0": 3}, committed={"records_in": 400, "streams": {}},
                 async_={"enrich": {"in_flight": 0, "in_flight_peak": 2, "completed": 4,
                                    "retried": 0, "dead_lettered": 0, "finished": 4,
                                    "total_latency_s": 0.25}},
                 attempt="rt-0.ab12", standby={"0_2": 5}, active=("0_0", "1_0"),
                 changelogs={"active": ["app-s-changelog:0"],
                             "standby": {"app-s-changelog:2": 9}}),
    Stop("rt-0"),
    Assignment("rt", 3, ((0, 2), (1,)), ((1,), (0, 2))),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_reads_back_as_it_was_written(message):
    key, value = message.encode()
    assert key == type(message).KEY
    assert decode(key, value) == message


def test_a_task_report_gives_back_the_task_metrics_it_carried():
    key, value = TaskReport("0_1", 7, _counts()).encode()
    assert TaskMetrics.of(decode(key, value).counts) == TaskMetrics.of(_counts())


def test_a_thread_report_names_its_run_and_thread_the_rest_may_be_left_out():
    assert decode(b"metrics", b'{"run": "rt-0", "thread": 2}') == ThreadReport("rt-0", 2)
    with pytest.raises(MalformedMessageError, match="no 'run'"):
        decode(b"metrics", b'{"thread": 2}')


def test_fields_a_message_does_not_know_are_left_out():
    assert decode(b"stop", b'{"run": "rt-0", "later": [1]}') == Stop("rt-0")


def test_a_record_of_another_reader_is_no_control_message():
    assert decode(b"route", b'{"task": "0_1"}') is None
    assert decode(None, b"{}") is None


MALFORMED = [
    (b"task", None, "no value"),
    (b"task", b"\xff\xfe", "not JSON"),
    (b"task", b"{'task': '0_1'}", "not JSON"),
    (b"task", b"[1, 2]", "not a JSON object"),
    (b"task", b'{"task": "0_1", "batch": 1}', "no 'counts'"),
    (b"task", b'{"task": 1, "batch": 1, "counts": {}}', "'task': not a string"),
    (b"task", b'{"task": "0_1", "batch": "1", "counts": {}}', "'batch': not an integer"),
    (b"task", b'{"task": "0_1", "batch": 1, "counts": {"commits": true}}',
     "'commits': not an integer"),
    (b"task", b'{"task": "0_1", "batch": 1, "counts": {"where": {"0_1": 5}}}',
     "'where': '0_1': not a string"),
    (b"task", b'{"task": "0_1", "batch": 1, "counts": {"streams": {"process": [1,2,3,4]}}}',
     "not a stat's key"),
    (b"task", b'{"task": "0_1", "batch": 1, "counts": {"streams": {"p|0_1|": [1, 2]}}}',
     "not \\[count, total, max, min\\]"),
    (b"task", b'{"task": "0_1", "batch": 1, "counts": {"async_": {"a": {"x": 1}}}}',
     "not an async counter"),
    (b"metrics", b'{"run": "r", "thread": 0, "lag": {"in": 3}}', "not topic:partition"),
    (b"metrics", b'{"run": "r", "thread": 0, "lag": {"in:0": 3.5}}', "not an integer"),
    (b"metrics", b'{"run": "r", "thread": 0, "process_rate": NaN}', "not JSON: NaN"),
    (b"metrics", b'{"run": "r", "thread": 0, "active": "0_0"}', "not a JSON array"),
    (b"metrics", b'{"run": "r", "thread": 0, "changelogs": {"active": ["c:x"]}}',
     "not topic:partition"),
    (b"stop", b'"rt-0"', "not a JSON object"),
    (b"assign", b'{"query": "q", "version": 1, "active": [[0, -1]], "standby": []}',
     "a negative index"),
    (b"assign", b'{"query": "q", "version": 1, "active": [0], "standby": []}',
     "not a JSON array"),
    (b"assign", b"[" * 100_000, "not JSON"),
]


@pytest.mark.parametrize("key,value,why", MALFORMED)
def test_a_malformed_value_is_refused_saying_why(key, value, why):
    with pytest.raises(MalformedMessageError, match=why):
        decode(key, value)


def test_a_malformed_record_is_skipped_with_a_warning_naming_where_it_is(caplog):
    with caplog.at_level(logging.WARNING, "kspark"):
        assert read_message(Record(b"metrics", b'{"run": 1}', offset=42)) is None
    assert f"control topic {TOPIC!r} partition 0 offset 42: a 'metrics' record" in caplog.text


def test_an_error_record_is_no_message():
    assert read_message(Record(None, None, error="broker down")) is None


class FakeConsumer:
    """The control topic's one partition: ``records`` from offset 0, its end ``end``."""

    def __init__(self, records, end=None):
        self.records, self.end, self.at, self.closed = records, end, 0, False

    def get_watermark_offsets(self, tp, timeout=None, cached=False):
        return 0, self._end()

    def _end(self):
        return len(self.records) if self.end is None else self.end

    def consume(self, n, timeout):
        out = self.records[self.at:min(self.at + min(n, 2), self._end())]  # a few at a time
        self.at += len(out)
        return out

    def close(self):
        self.closed = True


def _reader(records, end=None):
    reader = ControlReader.__new__(ControlReader)
    reader.app_id, reader._next, reader._tp = "app", 0, None
    reader._consumer, reader._lock = FakeConsumer(records, end), threading.Lock()
    return reader


def _records(*pairs):
    return [Record(k, v, offset=i) for i, (k, v) in enumerate(pairs)]


def test_the_reader_returns_every_control_message_up_to_the_end_and_skips_the_rest():
    records = _records(TaskReport("0_0", 1, {"records_in": 2}).encode(),
                       (b"route", b'{"task": "0_0"}'), (b"task", b"not json"),
                       ThreadReport("rt-0", 0).encode(), Stop("rt-0").encode(),
                       TaskReport("0_1", 1, {"records_in": 5}).encode())
    reader = _reader(records, end=5)  # the last one arrives after this read
    assert reader.read() == [TaskReport("0_0", 1, {"records_in": 2}), ThreadReport("rt-0", 0),
                             Stop("rt-0")]
    reader._consumer.end = 6
    assert reader.read() == [TaskReport("0_1", 1, {"records_in": 5})]
    assert reader.read() == []


def test_the_micro_batch_totals_add_the_task_reports_the_reader_returns():
    records = _records(TaskReport("0_0", 1, {"records_in": 2, "commits": 1}).encode(),
                       ThreadReport("rt-0", 0, records_in=99).encode(),
                       TaskReport("0_1", 1, {"records_in": 5, "commits": 1}).encode())
    totals = ReportedTotals(_reader(records))
    assert (totals.value().records_in, totals.value().commits) == (7, 2)


class FakeProducer:
    def __init__(self, undelivered=0):
        self.produced, self.polls, self.flushes, self.undelivered = [], 0, [], undelivered

    def produce(self, topic, key, value):
        self.produced.append((topic, key, value))

    def poll(self, timeout):
        self.polls += 1

    def flush(self, timeout):
        self.flushes.append(timeout)
        return self.undelivered


def _sender(wait, undelivered=0):
    sender = ReportSender.__new__(ReportSender)
    sender.app_id, sender.topic, sender.wait = "app", TOPIC, wait
    sender._producer = FakeProducer(undelivered)
    return sender


def test_a_waiting_sender_waits_for_each_delivery_and_says_when_one_failed(caplog):
    sender = _sender(wait=True, undelivered=1)
    with caplog.at_level(logging.WARNING, "kspark"):
        sender.send(TaskReport("0_1", 3, {}), timeout_s=2)
    assert sender._producer.produced == [(TOPIC, *TaskReport("0_1", 3, {}).encode())]
    assert sender._producer.flushes == [2]
    assert "the counts of task 0_1 was not delivered" in caplog.text


def test_a_sender_that_does_not_wait_delivers_what_is_left_when_closed():
    sender = _sender(wait=False)
    sender.send(ThreadReport("rt-0", 0))
    assert (sender._producer.polls, sender._producer.flushes) == (1, [])
    sender.close()
    assert sender._producer.flushes == [5.0]


def _watch(records, *runs):
    watch = StopWatch.__new__(StopWatch)
    watch.runs, watch._assignment, watch._stopped = set(runs), None, False
    watch._consumer = FakeConsumer(records)
    return watch


def test_a_thread_stops_at_its_runs_stop_and_keeps_its_runs_newest_assignment():
    watch = _watch(_records(Assignment("q", 2, ((1,),), ((),)).encode(),
                            Assignment("other", 9, ((0,),), ((),)).encode(),
                            (b"assign", b'{"query": "q"}'),  # malformed: skipped
                            Assignment("q", 1, ((0,),), ((),)).encode(),
                            Stop("another-run").encode()), "rt-0", "q")
    assert not watch.stopped()
    assert watch.assignment() == (2, ((1,),), ((),))
    watch._consumer.records.append(Record(*Stop("rt-0").encode(), offset=5))
    assert watch.stopped()


def test_the_wire_stays_plain_json():
    key, value = ThreadReport("rt-0", 1, active=("0_0",)).encode()
    assert json.loads(value)["active"] == ["0_0"] and "async" in json.loads(value)
