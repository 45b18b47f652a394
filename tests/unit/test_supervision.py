"""Supervision's decisions (``_host/supervision.py``), one test per rule of its table, and
both modes' handles deciding by them: whether a failed unit (the micro-batch query, one
real-time stream thread) starts again, after what pause, within what bound, and the one
error a failed run raises. The handles themselves: ``test_restarting_query.py``."""

import logging
import threading
from types import SimpleNamespace

import pytest

from kspark._host.rules import RESTARTS_PER_TIMEOUT
from kspark._host.supervision import (
    MAX_BACK_OFF_MS,
    REPLACED,
    TRANSIENT,
    Restarts,
    RunHandle,
    announce,
    back_off_s,
    cause_of,
)
from kspark.errors import RunFailedError, StreamsError

TIMEOUT_MS = 300_000
TRANSIENT_TEXT = "kspark.errors.TransientKafkaError: task 0_1: commit_transaction did not return"
OTHER_TEXT = "kspark.errors.ProcessorError: task 0_0, processor 'X': boom"
ERROR = RuntimeError("the failure the handler sees")


def _replacing(seen=None):
    def handler(error):
        if seen is not None:
            seen.append(error)
        return True
    return handler


def test_a_transient_failure_starts_the_unit_again_after_retry_backoff():
    restart = Restarts(TIMEOUT_MS, 100).decide(TRANSIENT_TEXT, ERROR, now=10.0)
    assert restart is not None
    assert (restart.count, restart.why, restart.delay_s) == (1, TRANSIENT, 0.1)
    assert restart.cause == "TransientKafkaError: task 0_1: commit_transaction did not return"


def test_the_pause_doubles_with_each_restart_up_to_ten_seconds():
    r = Restarts(TIMEOUT_MS, 100)
    delays = [r.decide(TRANSIENT_TEXT, ERROR, now=10.0 + i).delay_s for i in range(9)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0]
    assert back_off_s(50, 100) == MAX_BACK_OFF_MS / 1000 and r.back_off_s() == 10.0


def test_without_retry_backoff_a_unit_starts_again_at_once():
    assert Restarts(TIMEOUT_MS).decide(TRANSIENT_TEXT, ERROR, now=1.0).delay_s == 0.0


def test_at_most_so_many_restarts_within_task_timeout_then_the_run_fails():
    r = Restarts(TIMEOUT_MS, 100)
    for i in range(RESTARTS_PER_TIMEOUT):
        assert r.decide(TRANSIENT_TEXT, ERROR, now=100.0 + i) is not None
    assert r.decide(TRANSIENT_TEXT, ERROR, now=200.0) is None
    assert len(r) == RESTARTS_PER_TIMEOUT


def test_restarts_older_than_task_timeout_neither_bound_nor_lengthen_the_pause():
    r = Restarts(TIMEOUT_MS, 100)
    for i in range(RESTARTS_PER_TIMEOUT):
        r.decide(TRANSIENT_TEXT, ERROR, now=100.0 + i)
    later = r.decide(TRANSIENT_TEXT, ERROR, now=100.0 + TIMEOUT_MS / 1000 + 10)
    assert later is not None and later.count == 1 and later.delay_s == 0.1


def test_a_task_timeout_is_not_transient_and_fails_the_run():
    text = "kspark.errors.TaskTimeoutError: task 0_1: the cluster did not answer"
    assert Restarts(TIMEOUT_MS, 100).decide(text, ERROR, now=1.0) is None


def test_any_other_failure_fails_the_run_without_a_handler():
    r = Restarts(TIMEOUT_MS, 100)
    assert r.decide(OTHER_TEXT, ERROR, now=1.0) is None and len(r) == 0


def test_the_handlers_replace_thread_starts_the_unit_again_and_it_sees_the_error():
    seen: list = []
    restart = Restarts(TIMEOUT_MS, 100, _replacing(seen)).decide(OTHER_TEXT, ERROR, now=1.0)
    assert restart is not None and restart.why == REPLACED and seen == [ERROR]


def test_a_handler_that_does_not_replace_fails_the_run_and_counts_no_restart():
    r = Restarts(TIMEOUT_MS, 100, lambda e: False)
    assert r.decide(OTHER_TEXT, ERROR, now=1.0) is None and len(r) == 0


def test_the_handler_is_not_asked_about_a_transient_failure():
    seen: list = []
    assert Restarts(TIMEOUT_MS, 100, _replacing(seen)).decide(TRANSIENT_TEXT, ERROR, now=1.0)
    assert seen == []


def test_the_handlers_replacements_share_the_bound_with_transient_restarts(caplog):
    r = Restarts(TIMEOUT_MS, 100, _replacing())
    for i in range(RESTARTS_PER_TIMEOUT - 1):
        assert r.decide(TRANSIENT_TEXT, ERROR, now=100.0 + i)
    assert r.decide(OTHER_TEXT, ERROR, now=150.0).why == REPLACED
    with caplog.at_level(logging.ERROR, "kspark"):
        assert r.decide(OTHER_TEXT, ERROR, now=151.0) is None
    assert "failed 10 times within task.timeout.ms" in caplog.text


def test_each_unit_is_bounded_on_its_own():
    one, two = Restarts(TIMEOUT_MS, 100), Restarts(TIMEOUT_MS, 100)
    for i in range(RESTARTS_PER_TIMEOUT):
        one.decide(TRANSIENT_TEXT, ERROR, now=100.0 + i)
    assert one.decide(TRANSIENT_TEXT, ERROR, now=120.0) is None
    assert two.decide(TRANSIENT_TEXT, ERROR, now=120.0).count == 1


def test_a_fenced_attempt_and_a_slow_python_worker_are_transient_too():
    for text in ("kspark.errors.TaskFencedError: task 0_0: fenced by a newer attempt",
                 "org.apache.spark.SparkException: Python worker failed to connect back."):
        assert Restarts(TIMEOUT_MS).decide(text, ERROR, now=1.0).why == TRANSIENT


def test_the_cause_is_the_transient_line_else_the_first():
    assert cause_of(f"Job aborted due to stage failure\n  {TRANSIENT_TEXT}\n  at x") == \
        "TransientKafkaError: task 0_1: commit_transaction did not return"
    assert cause_of(f"\n{OTHER_TEXT}\n  File 'app.py'") == OTHER_TEXT
    assert cause_of("") == "?"


def test_one_log_line_names_the_unit_the_cause_why_and_how_it_starts_again(caplog):
    restart = Restarts(TIMEOUT_MS, 100).decide(TRANSIENT_TEXT, ERROR, now=1.0)
    with caplog.at_level(logging.WARNING, "kspark"):
        announce("app", "the micro-batch query", restart.cause, restart.reason(),
                 "starting the query again")
    assert caplog.messages == [
        "application 'app': the micro-batch query ended (TransientKafkaError: task 0_1: "
        "commit_transaction did not return): a transient failure, restart 1 within "
        "task.timeout.ms; starting the query again from the last commit"]


def test_a_failed_run_is_one_error_a_streams_error_with_the_threads_traceback():
    class StandInError(Exception):
        traceback = f"Traceback (most recent call last):\n  ...\n{OTHER_TEXT}"

    e = RunFailedError(StandInError(OTHER_TEXT))
    assert isinstance(e, StreamsError) and str(e) == OTHER_TEXT and not e.lost
    assert e.desc == StandInError.traceback and isinstance(e.cause, StandInError)


def test_a_spark_connect_clients_own_error_is_the_server_lost_not_the_queries_failure():
    from pyspark.errors.exceptions.connect import (SparkConnectGrpcException,
                                                   StreamingQueryException)

    from kspark._spark.restarting import run_failed

    assert run_failed(SparkConnectGrpcException("status = UNAVAILABLE")).lost
    assert not run_failed(StreamingQueryException(OTHER_TEXT)).lost  # the server answered
    already = RunFailedError(RuntimeError("x"))
    assert run_failed(already) is already


def _real_time_query(on_failure=None):
    """A RealTimeQuery with only what its restart decision touches (no Spark, no Kafka)."""
    from kspark._spark.realtime.query import RealTimeQuery
    from kspark._spark.realtime.thread_metrics import LiveTotals

    q = RealTimeQuery.__new__(RealTimeQuery)
    q._lock, q._metrics_lock = threading.Lock(), threading.Lock()
    q._restarts, q.task_timeout_ms, q.on_failure = {}, TIMEOUT_MS, on_failure
    q.ctx = SimpleNamespace(app_id="app", settings=SimpleNamespace(retry_backoff_ms=100))
    q.live = LiveTotals()
    return q


def test_a_real_time_stream_thread_restarts_by_the_same_decision_each_on_its_own(caplog):
    from kspark._spark.realtime.failures import ThreadFailureError
    from kspark._spark.realtime.query import RealTimeQuery

    assert RunHandle in RealTimeQuery.__mro__  # declared, not duck-typed
    q, epoch = _real_time_query(), SimpleNamespace(run="r-0")
    failure = ThreadFailureError(TRANSIENT_TEXT, "Traceback ...")
    with caplog.at_level(logging.WARNING, "kspark"):
        restarts = [q._again(0, epoch, failure) for _ in range(RESTARTS_PER_TIMEOUT + 1)]
    assert [r.delay_s for r in restarts[:3]] == [0.1, 0.2, 0.4] and restarts[-1] is None
    assert q._again(1, epoch, failure).count == 1  # thread 1's bound is its own
    assert "stream thread 0's epoch ended (TransientKafkaError" in caplog.messages[0]
    assert "starting a new epoch of it" in caplog.messages[0]


def test_the_handler_sees_a_real_time_threads_failure_as_the_one_run_error():
    from kspark._spark.realtime.failures import ThreadFailureError

    seen: list = []
    q = _real_time_query(_replacing(seen))
    restart = q._again(0, SimpleNamespace(run="r-0"), ThreadFailureError(OTHER_TEXT, "tb"))
    assert restart.why == REPLACED
    assert isinstance(seen[0], RunFailedError) and seen[0].desc == "tb"


@pytest.mark.parametrize("text", [TRANSIENT_TEXT, OTHER_TEXT])
def test_a_decision_without_a_time_reads_the_clock(text):
    r = Restarts(TIMEOUT_MS, 100, _replacing())
    assert r.decide(text, ERROR) is not None and r.times and r.times[0] > 0
