"""The micro-batch query started again after a transient Kafka failure
(``_spark/restarting.py``), over stand-in queries: what restarts, after what pause, what
fails (always as a RunFailedError), and that a restart keeps the last progress. The decision
itself: ``test_supervision.py``."""

import threading

import pytest
from pyspark.errors import StreamingQueryException

from kspark._host.supervision import RunHandle
from kspark._spark.restarting import RestartingQuery
from kspark.errors import RunFailedError


class _Query:
    """Ends as told: ``error`` (a failure text) or cleanly."""

    def __init__(self, error=None, progress=None):
        self.error, self.lastProgress = error, progress
        self.ended = threading.Event()
        self.stopped = False

    def awaitTermination(self):  # noqa: N802
        self.ended.wait(30)
        if self.error:
            raise StreamingQueryException(self.error)

    def stop(self):
        self.stopped = True
        self.ended.set()


def _starts(*queries):
    made = list(queries)
    started = []

    def start():
        q = made.pop(0)
        started.append(q)
        return q
    return start, started


def test_a_transient_kafka_failure_starts_the_query_again_from_its_checkpoint():
    first = _Query("kspark.errors.TransientKafkaError: task 0_1: commit_transaction did not "
                   "return", {"batchId": 4})
    second = _Query()
    start, started = _starts(first, second)
    q = RestartingQuery(start, "app", 300_000)
    first.ended.set()
    second.ended.set()
    assert q.await_termination(10) is True
    assert started == [first, second] and len(q.restarts) == 1 and q.exception() is None
    assert RunHandle in type(q).__mro__  # declared, not duck-typed


def test_the_last_progress_survives_a_restart_until_the_new_query_reports():
    first = _Query("kspark.errors.TransientKafkaError: x", {"batchId": 4})
    second = _Query()
    q = RestartingQuery(_starts(first, second)[0], "app", 300_000)
    first.ended.set()
    for _ in range(200):
        if q.current is second:
            break
        threading.Event().wait(0.01)
    assert q.last_progress() == {"batchId": 4}
    q.stop()
    assert second.stopped and not q.is_active()


@pytest.mark.parametrize("error", ["kspark.errors.TaskTimeoutError: the cluster did not answer",
                                   "kspark.errors.ProcessorError: node X raised"])
def test_any_other_failure_ends_the_query_with_that_failure(error):
    first = _Query(error)
    start, started = _starts(first)
    q = RestartingQuery(start, "app", 300_000)
    first.ended.set()
    with pytest.raises(RunFailedError, match=error.split(":")[0]) as raised:
        q.await_termination(10)
    assert isinstance(raised.value.cause, StreamingQueryException) and not raised.value.lost
    assert started == [first] and q.exception() is raised.value


class _LostServer:
    """A Spark Connect client's query whose server stopped: every call fails, as the
    client's does once its retries are spent (an error of PySpark's Connect module)."""

    def __init__(self):
        from pyspark.errors.exceptions.connect import SparkConnectGrpcException

        self.error = SparkConnectGrpcException("status = UNAVAILABLE, details = \"refused\"")
        self.calls = 0

    def awaitTermination(self):  # noqa: N802
        self.calls += 1
        raise self.error

    @property
    def lastProgress(self):  # noqa: N802
        self.calls += 1
        raise self.error

    def stop(self):
        self.calls += 1
        raise self.error


def test_a_query_whose_connect_server_stopped_ends_with_that_error_and_is_asked_nothing_more():
    lost = _LostServer()
    q = RestartingQuery(_starts(lost)[0], "app", 300_000)
    with pytest.raises(RunFailedError) as raised:
        q.await_termination(10)
    assert raised.value.lost and raised.value.cause is lost.error
    calls = lost.calls
    assert q.last_progress() is None and not q.ready()
    q.stop()  # returns at once: stopping a query on a lost server would wait for retries
    assert lost.calls == calls and q.exception() is raised.value


def test_progress_that_cannot_be_read_is_the_last_known():
    first = _Query(progress={"batchId": 2})
    q = RestartingQuery(_starts(first)[0], "app", 300_000)
    assert q.last_progress() == {"batchId": 2}
    q.current = _LostServer()  # a Connect server that does not answer now
    assert q.last_progress() == {"batchId": 2}
    first.ended.set()


def test_a_restart_waits_its_back_off_and_a_stop_meanwhile_starts_nothing():
    first = _Query("kspark.errors.TransientKafkaError: x", {"batchId": 1})
    second = _Query()
    start, started = _starts(first, second)
    q = RestartingQuery(start, "app", 300_000, retry_backoff_ms=5_000)
    first.ended.set()
    for _ in range(200):
        if len(q.restarts):
            break
        threading.Event().wait(0.01)
    assert not q.ready()  # the failed query's progress does not make it RUNNING
    q.stop()
    assert q.await_termination(5) and started == [first] and q.exception() is None


def test_the_uncaught_exception_handler_replaces_a_failed_query():
    seen = []
    first = _Query("kspark.errors.ProcessorError: task 0_0: boom")
    second = _Query()
    start, started = _starts(first, second)
    q = RestartingQuery(start, "app", 300_000, on_failure=lambda e: seen.append(e) or True)
    first.ended.set()
    second.ended.set()
    assert q.await_termination(10) and started == [first, second]
    assert isinstance(seen[0], RunFailedError) and "boom" in str(seen[0])
