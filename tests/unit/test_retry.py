"""Riding through Kafka's own faults (``_kafka/retry.py``): which client errors are
transient, the ``task.timeout.ms`` bound of a stalled step, a call that never returns, and
a stream thread's consumer during an outage (``realtime/consumer_fault.py``)."""

import logging
import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from kspark._kafka.retry import CallHungError, Stall, bounded_call, not_yet_visible, transient
from kspark._kafka.settings import ClientSettings
from kspark.errors import BrokerUnreachableError, TaskTimeoutError


@pytest.mark.parametrize("code", [
    KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
    KafkaError._NOENT,  # librdkafka: "no leaders found" while the broker is down
    KafkaError._DESTROY_BROKER,  # a node left the metadata while a request was on it
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.FENCED_LEADER_EPOCH, KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_ENOUGH_REPLICAS])
def test_a_broker_restart_or_a_leader_or_coordinator_move_is_transient(code):
    assert transient(KafkaError(code))


@pytest.mark.parametrize("code", [
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_CONFIG, KafkaError.PRODUCER_FENCED])
def test_a_refusal_or_a_wrong_request_is_not_transient(code):
    assert not transient(KafkaError(code))


@pytest.mark.parametrize("code", [KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART])
def test_an_unknown_partition_is_only_not_yet_visible_never_transient(code):
    """A topic just created is unknown for a moment on a node without its metadata yet:
    retried only where the topic is known to exist (the control topic right after its
    creation); elsewhere it is a deleted or missing topic, reported at once."""
    assert not_yet_visible(KafkaError(code))
    assert not transient(KafkaError(code))


def test_a_fatal_error_is_never_transient():
    assert not transient(KafkaError(KafkaError._TIMED_OUT, fatal=True))


def test_a_stall_retries_until_task_timeout_then_names_step_cluster_and_bound():
    stall = Stall("task 0_1: commit_transaction", "b1:9092", timeout_ms=200, backoff_ms=1)
    began = time.monotonic()
    with pytest.raises(TaskTimeoutError) as e:
        while True:
            stall.wait(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
    assert 0.2 <= time.monotonic() - began < 5
    text = str(e.value)
    assert "task 0_1: commit_transaction" in text and "b1:9092" in text
    assert "task.timeout.ms=200" in text and "Connection refused" in text
    assert isinstance(e.value, BrokerUnreachableError)  # the family a caller may catch


def test_a_stall_backs_off_from_retry_backoff_ms_doubling_to_a_second():
    stall = Stall("x", "b", timeout_ms=60_000, backoff_ms=50)
    began = time.monotonic()
    for _ in range(3):
        stall.wait(KafkaError(KafkaError._TRANSPORT))
    assert 0.05 + 0.1 + 0.2 <= time.monotonic() - began < 5
    assert stall.tries == 3


def test_a_stall_says_so_in_the_log_at_most_every_ten_seconds(caplog, monkeypatch):
    monkeypatch.setattr("kspark._kafka.retry.WARN_EVERY_S", 0.0)
    stall = Stall("task 0_2: init_transactions", "b:9092", timeout_ms=60_000, backoff_ms=1)
    with caplog.at_level(logging.WARNING, logger="kspark"):
        stall.wait(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE, "not yet"))
    assert "task 0_2: init_transactions: waiting for the Kafka cluster at b:9092" in caplog.text
    monkeypatch.setattr("kspark._kafka.retry.WARN_EVERY_S", 3600.0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kspark"):
        stall.wait(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE, "not yet"))
    assert caplog.text == ""


def test_the_bound_comes_from_the_application_config():
    settings = ClientSettings.from_config({"bootstrap.servers": "b:1", "application.id": "a",
                                           "task.timeout.ms": 1234, "retry.backoff.ms": 7})
    stall = Stall.of("x", settings)
    assert (stall.timeout_ms, stall.backoff_ms, stall.where) == (1234, 7, "b:1")


def test_a_bounded_call_returns_its_value_or_raises_its_error():
    assert bounded_call(lambda a, b: a * b, (6, 7), 5) == 42
    with pytest.raises(KafkaException):
        bounded_call(lambda: (_ for _ in ()).throw(KafkaException(KafkaError(1))), (), 5)


def test_a_call_that_never_returns_is_left_behind_after_its_bound():
    release = threading.Event()
    began = time.monotonic()
    with pytest.raises(CallHungError):
        bounded_call(release.wait, (60,), 0.1)
    assert time.monotonic() - began < 5
    release.set()


class _Consumer:
    """A consumer whose cluster answers or not."""

    def __init__(self):
        self.up = False
        self.asked = 0

    def get_watermark_offsets(self, tp, timeout):
        self.asked += 1
        if not self.up:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
        return 0, 10


def _fault(consumer, timeout_ms):
    from kspark._spark.realtime.consumer_fault import ConsumerFault

    settings = ClientSettings("b:9092", task_timeout_ms=timeout_ms)
    fault = ConsumerFault(consumer, ("in", 0), settings)
    fault.seen("in", "Connection refused")
    return fault


def test_a_consumer_fault_ends_when_the_cluster_answers_again(monkeypatch):
    monkeypatch.setattr("kspark._spark.realtime.consumer_fault.PROBE_EVERY_S", 0.0)
    consumer = _Consumer()
    fault = _fault(consumer, 60_000)
    fault.check()
    assert fault.stall is not None
    consumer.up = True
    fault.check()
    assert fault.stall is None and consumer.asked == 2


def test_an_idle_thread_fails_once_the_outage_outlasts_task_timeout(monkeypatch):
    monkeypatch.setattr("kspark._spark.realtime.consumer_fault.PROBE_EVERY_S", 0.0)
    fault = _fault(_Consumer(), 0)
    with pytest.raises(TaskTimeoutError, match="stream thread reading topic 'in'"):
        fault.check()
