"""The live view of ``kspark run`` (``_cli/live_view.py``) and the run loop that drives it
(``_cli/run.py``): stand-in clients and a stand-in clock; no Spark, no broker, no sleeps."""

from __future__ import annotations

from kspark.metrics import MetricName

import math
from dataclasses import dataclass

import pytest

from kspark._cli import run as _runner
from kspark._cli.live_view import LiveView, Reading, line, metric_figures, read, summary
from kspark._cli.main import build_parser

LAG = ("records-lag", "consumer-fetch-manager-metrics")
DROPPED = ("dropped-records-total", "stream-task-metrics")


Name = MetricName  # the real one: name, group, description, tags


@dataclass
class Value:
    value: object

    def metric_value(self):
        return self.value


def lag(topic, partition, n):
    return Name(*LAG, tags={"topic": topic, "partition": str(partition)}), Value(n)


def dropped(task, n):
    return Name(*DROPPED, tags={"task-id": task}), Value(n)


def test_rates_are_count_differences_over_the_monotonic_time_between_two_readings():
    before = Reading(100.0, "RUNNING", {"records_in": 1000, "records_out": 500})
    after = Reading(104.0, "RUNNING", {"records_in": 9000, "records_out": 2500})
    assert "in 9000 (2000/s), out 2500 (500/s)" in line(before, after)


def test_a_count_that_fell_or_no_time_passing_gives_a_rate_of_zero():
    before = Reading(10.0, None, {"records_in": 50})
    assert "in 40 (0/s)" in line(before, Reading(12.0, None, {"records_in": 40}))
    assert "in 90 (0/s)" in line(before, Reading(10.0, None, {"records_in": 90}))


def test_lag_per_input_topic_is_the_sum_over_its_partitions():
    metrics = dict([lag("payments", 0, 2), lag("orders", 0, 3), lag("orders", 1, 4)])
    lags, _ = metric_figures(metrics)
    assert lags == {"orders": 7, "payments": 2}
    assert ", lag orders=7 payments=2," in line(Reading(0.0, None), Reading(5.0, None, {}, lags))


def test_without_lag_metrics_the_line_shows_the_total_lag_of_progress():
    lags, _ = metric_figures(dict([dropped("0_0", 0)]))
    assert lags is None
    assert ", lag 12," in line(Reading(0.0, None), Reading(5.0, None, {"lag": 12}, lags))


def test_dropped_records_are_the_sum_over_every_tasks_dropped_records_total():
    assert metric_figures(dict([dropped("0_0", 3), dropped("1_0", 1)]))[1] == 4


def test_a_missing_dropped_metric_is_zero_when_the_metrics_have_kafka_names():
    assert metric_figures(dict([lag("orders", 0, 1)])) == ({"orders": 1}, 0)


def test_a_metric_value_of_none_nan_or_no_number_counts_as_zero():
    metrics = dict([dropped("0_0", None), dropped("1_0", math.nan), dropped("2_0", "x"),
                    dropped("3_0", 2.0), lag("orders", 0, math.nan)])
    assert metric_figures(metrics) == ({"orders": 0}, 2)


def test_keys_without_name_and_group_are_ignored_and_the_old_shape_says_nothing():
    old = {"stream_threads": {}, "lag": {"orders": {0: 5}}, "async": {}}
    assert metric_figures(old) == (None, None)
    assert metric_figures({**old, **dict([dropped("0_0", 1)])}) == (None, 1)


def test_the_line_shows_state_commits_restores_moves_and_dropped_records():
    after = Reading(5.0, "REBALANCING", {"commits": 9, "task_restores": 2,
                                         "restored_records": 1200, "task_moves": 1}, None, 3)
    assert line(Reading(0.0, None), after) == (
        "kspark run: REBALANCING, in 0 (0/s), out 0 (0/s), lag 0, commits 9, restores 2 "
        "(1200 records), moves 1, dropped 3")


def test_the_summary_says_how_the_run_ended_and_its_average_rate():
    last = Reading(9.0, "NOT_RUNNING", {"records_in": 263, "records_out": 280, "commits": 4},
                   None, 0)
    assert summary("hourly", "finished its batch run", last, 31.4) == (
        "kspark run: application 'hourly' finished its batch run: 263 records in, 280 records "
        "out, 31.4 s, 8.4 records/s; commits 4, restores 0, moves 0, dropped 0")
    assert "dropped" not in summary("hourly", "stopped", Reading(9.0, None), 0.0)


class Client:
    """A stand-in KafkaStreams: 100 records in and 90 out per second of the stand-in
    clock, which ``await_termination`` advances; ends after ``runs`` seconds (or raises
    ``end``)."""

    def __init__(self, clock, runs=12.0, end=None, metrics=None):
        self.clock, self.runs, self.end, self.closed = clock, runs, end, False
        self._metrics = metrics if metrics is not None else dict([dropped("0_0", 1)])

    def __call__(self, topology, config):
        self.config = config
        return self

    def start(self):
        self.began = self.clock.now

    def stop_offsets(self):
        return {("orders", 0): 1200} if self.config["autostop.at"] == "eol" else None

    def await_termination(self, timeout_s):
        self.clock.now += timeout_s
        if self.clock.now - self.began >= self.runs:
            if self.end is not None:
                raise self.end
            return True
        return False

    def progress(self):
        t = self.clock.now - self.began
        return {"records_in": round(100 * t), "records_out": round(90 * t), "commits": int(t)}

    def state(self):
        return "RUNNING"

    def metrics(self):
        if isinstance(self._metrics, Exception):
            raise self._metrics
        return self._metrics

    def close(self):
        self.closed = True

    def metrics_http_port(self):
        return 9464 if self.config["metrics.http.port"] is not None else None


class Clock:
    now = 1000.0

    def __call__(self):
        return self.now


def run(monkeypatch, client, clock, *sets, every=5.0, lines=None):
    """``kspark run`` over ``client``: its exit code and the lines it printed (into
    ``lines`` when given, there also when it raises)."""
    monkeypatch.setattr("kspark.streams.KafkaStreams", client)
    monkeypatch.setattr(_runner, "load_topology", lambda spec: object())
    monkeypatch.setattr(_runner, "monotonic", clock)
    lines = [] if lines is None else lines
    sets = ["application.id=app", "bootstrap.servers=b:9092", *sets]
    code = _runner.run_application("app:TOPOLOGY", None, list(sets), lines.append, every)
    return code, lines


def test_a_batch_run_prints_a_line_every_few_seconds_and_a_summary(monkeypatch):
    clock = Clock()
    code, lines = run(monkeypatch, Client(clock), clock, "autostop.at=eol")
    assert code == 0
    assert lines[0] == ("kspark run: application 'app' started (batch run); stop offsets "
                        "orders[0]=1200")
    assert lines[1:3] == [
        "kspark run: RUNNING, in 500 (100/s), out 450 (90/s), lag 0, commits 5, restores 0, "
        "moves 0, dropped 1",
        "kspark run: RUNNING, in 1000 (100/s), out 900 (90/s), lag 0, commits 10, "
        "restores 0, moves 0, dropped 1"]
    assert lines[3:] == [
        "kspark run: application 'app' finished its batch run: 1200 records in, 1080 records "
        "out, 12.0 s, 100 records/s; commits 12, restores 0, moves 0, dropped 1; stop offsets "
        "reached: orders[0]=1200"]


def test_every_zero_prints_only_the_start_and_the_summary(monkeypatch):
    clock = Clock()
    _, lines = run(monkeypatch, Client(clock), clock, every=0)
    assert len(lines) == 2 and lines[1].startswith("kspark run: application 'app' stopped: ")


def test_metrics_that_raise_leave_their_part_out_and_never_end_the_run(monkeypatch):
    clock = Clock()
    code, lines = run(monkeypatch, Client(clock, metrics=RuntimeError("x")), clock)
    assert code == 0 and len(lines) == 4
    assert all("dropped" not in text and ", lag 0," in text for text in lines[1:3])


def test_a_progress_that_raises_gives_no_reading_and_no_line():
    class Broken:
        def progress(self):
            raise RuntimeError("not started")

    assert read(Broken(), 1.0) is None
    view = LiveView(5.0, Reading(0.0, None))
    assert view.tick(6.0, lambda: None) is None and view.last.at == 0.0
    assert view.tick(6.5, lambda: Reading(6.5, None)) is not None


def test_ctrl_c_closes_and_the_summary_says_the_batch_run_resumes(monkeypatch):
    clock = Clock()
    client = Client(clock, runs=3.0, end=KeyboardInterrupt())
    code, lines = run(monkeypatch, client, clock, "autostop.at=eol")
    assert code == 130 and client.closed
    assert lines[-1] == (
        "kspark run: application 'app' interrupted: 300 records in, 270 records out, 3.0 s, "
        "100 records/s; commits 3, restores 0, moves 0, dropped 1; the batch run is "
        "unfinished and the next start resumes it")


def test_a_failed_run_prints_its_summary_then_raises_its_error(monkeypatch):
    clock = Clock()
    lines: list[str] = []
    with pytest.raises(ValueError, match="boom"):
        run(monkeypatch, Client(clock, runs=1.0, end=ValueError("boom")), clock, lines=lines)
    assert lines[-1].startswith("kspark run: application 'app' failed: 100 records in, ")


def test_every_is_five_seconds_by_default_and_never_negative():
    parser = build_parser()
    assert parser.parse_args(["run", "app:T"]).every == 5.0
    assert parser.parse_args(["run", "app:T", "--every", "0"]).every == 0.0
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "app:T", "--every", "-1"])


def test_the_metrics_endpoint_is_named_when_it_is_on(monkeypatch):
    clock = Clock()
    _, lines = run(monkeypatch, Client(clock), clock, "autostop.at=eol",
                   "metrics.http.port=9464")
    assert lines[1] == ("kspark run: metrics on http://127.0.0.1:9464/metrics (/health/live, "
                        "/health/ready)")
