"""The micro-batch query started again after a transient Kafka failure
(``_spark/restarting.py``), over stand-in queries: what restarts, what fails, and that a
restart keeps the last progress."""

import threading

import pytest
from pyspark.errors import StreamingQueryException

from kspark._spark.restarting import RestartingQuery


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
    assert q.awaitTermination(10) is True
    assert started == [first, second] and len(q.restarts) == 1 and q.exception() is None


def test_the_last_progress_survives_a_restart_until_the_new_query_reports():
    first = _Query("kspark.errors.TransientKafkaError: x", {"batchId": 4})
    second = _Query()
    q = RestartingQuery(_starts(first, second)[0], "app", 300_000)
    first.ended.set()
    for _ in range(200):
        if q.current is second:
            break
        threading.Event().wait(0.01)
    assert q.lastProgress == {"batchId": 4}
    q.stop()
    assert second.stopped and not q.isActive


@pytest.mark.parametrize("error", ["kspark.errors.TaskTimeoutError: the cluster did not answer",
                                   "kspark.errors.ProcessorError: node X raised"])
def test_any_other_failure_ends_the_query_with_that_failure(error):
    first = _Query(error)
    start, started = _starts(first)
    q = RestartingQuery(start, "app", 300_000)
    first.ended.set()
    with pytest.raises(StreamingQueryException, match=error.split(":")[0]):
        q.awaitTermination(10)
    assert started == [first] and q.exception() is not None
