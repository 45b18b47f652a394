"""The client's states as Kafka Streams' (KafkaStreams.State), the state listener, the
supervisor that moves them with the run, and the uncaught exception handler's answers."""

from __future__ import annotations

import threading

import pytest

from kspark import KafkaStreams, StreamsBuilder, StreamThreadExceptionResponse
from kspark._client.states import Lifecycle, State
from kspark._client.supervisor import Supervisor
from kspark.errors import StreamsError

JAVA_TRANSITIONS = {  # KafkaStreams.State's valid transitions in Kafka Streams 4.1
    "CREATED": {"REBALANCING", "PENDING_SHUTDOWN"},
    "REBALANCING": {"RUNNING", "PENDING_SHUTDOWN", "PENDING_ERROR"},
    "RUNNING": {"REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "PENDING_ERROR"},
    "PENDING_SHUTDOWN": {"NOT_RUNNING"}, "NOT_RUNNING": set(), "PENDING_ERROR": {"ERROR"},
    "ERROR": set()}


def test_the_allowed_transitions_are_javas():
    for old in State:
        allowed = {new.name for new in State if old.valid_transition_to(new)}
        assert allowed == JAVA_TRANSITIONS[old.name], old


def test_the_listener_sees_each_change_as_new_then_old():
    seen = []
    life = Lifecycle(lambda new, old: seen.append((new.name, old.name)))
    assert life.to(State.REBALANCING) and life.to(State.RUNNING)
    assert not life.to(State.CREATED)  # refused: nothing changes, no call
    assert seen == [("REBALANCING", "CREATED"), ("RUNNING", "REBALANCING")]


def test_a_listener_that_raises_does_not_stop_the_change():
    def bad(new, old):
        raise RuntimeError("listener bug")
    life = Lifecycle(bad)
    assert life.to(State.REBALANCING) and life.state is State.REBALANCING


def test_a_state_equals_its_name():
    assert State.RUNNING == "RUNNING" and KafkaStreams.State.ERROR is State.ERROR


class _Run:
    """A runner stand-in: ends, fails or gets ready when told."""

    def __init__(self):
        self.is_ready, self.error = False, None
        self.ended = threading.Event()

    def await_termination(self, timeout_s):
        if self.ended.wait(timeout_s):
            if self.error:
                raise self.error
            return True
        return False

    def ready(self):
        return self.is_ready


def _watched():
    seen = []
    life = Lifecycle(lambda new, old: seen.append(new.name))
    life.to(State.REBALANCING)
    run = _Run()
    sup = Supervisor(run, life, every_s=0.01)
    sup.start()
    return run, life, seen, sup


def test_a_ready_run_is_running_and_rebalances_when_it_is_not_ready_again():
    run, life, seen, sup = _watched()
    run.is_ready = True
    assert life.wait_for((State.RUNNING,), 10)
    run.is_ready = False
    assert life.wait_for((State.REBALANCING,), 10)
    sup.stop()
    assert seen[:3] == ["REBALANCING", "RUNNING", "REBALANCING"]


def test_a_failed_run_moves_to_error_through_pending_error_without_a_caller():
    run, life, seen, sup = _watched()
    run.is_ready = True
    assert life.wait_for((State.RUNNING,), 10)
    run.error = StreamsError("task 0_0 failed")
    run.ended.set()
    assert life.wait_for((State.ERROR,), 5)
    assert seen[-3:] == ["RUNNING", "PENDING_ERROR", "ERROR"]
    assert isinstance(sup.error, StreamsError)


def test_a_run_that_fails_between_two_looks_goes_to_error_without_rebalancing():
    run, life, seen, sup = _watched()
    run.is_ready = True
    assert life.wait_for((State.RUNNING,), 10)
    run.is_ready = False  # as a failed query is: not ready, and its wait raises
    run.error = StreamsError("task 0_0 failed")
    run.ended.set()
    assert life.wait_for((State.ERROR,), 5)
    assert seen[-3:] == ["RUNNING", "PENDING_ERROR", "ERROR"], seen


def test_a_run_that_ends_by_itself_shuts_down():
    run, life, seen, _ = _watched()
    run.ended.set()
    assert life.wait_for((State.NOT_RUNNING,), 5)
    assert seen == ["REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING"]


def _client(handler=None):
    b = StreamsBuilder()
    b.stream("in").to("out")
    streams = KafkaStreams(b.build(), {"application.id": "app", "bootstrap.servers": "b:1"})
    if handler is not None:
        streams.set_uncaught_exception_handler(handler)
    return streams


def test_close_before_start_moves_created_to_not_running_and_tells_the_listener():
    seen = []
    streams = _client()
    streams.set_state_listener(lambda new, old: seen.append((old.name, new.name)))
    streams.close()
    assert seen == [("CREATED", "PENDING_SHUTDOWN"), ("PENDING_SHUTDOWN", "NOT_RUNNING")]
    with pytest.raises(StreamsError, match="only before start"):
        streams.set_state_listener(lambda new, old: None)


def test_the_default_handler_shuts_the_client_down():
    assert not _client()._replace_after(RuntimeError("x"))  # noqa: SLF001


def test_replace_thread_is_the_handlers_answer():
    # its bound (RESTARTS_PER_TIMEOUT within task.timeout.ms): test_supervision.py
    streams = _client(lambda e: StreamThreadExceptionResponse.REPLACE_THREAD)
    assert streams._replace_after(RuntimeError("x"))  # noqa: SLF001


def test_the_handler_sees_the_failure_explained_and_may_be_an_object():
    got = []

    class Handler:
        def handle(self, exception):
            got.append(exception)
            return StreamThreadExceptionResponse.SHUTDOWN_APPLICATION

    streams = _client(Handler())
    assert not streams._replace_after(RuntimeError("kspark.errors.ProcessorError: "  # noqa: SLF001
                                                   "task 0_0, processor 'X': boom"))
    assert isinstance(got[0], StreamsError) and "processor 'X': boom" in str(got[0])


def test_a_handler_that_raises_shuts_the_client_down():
    def bad(e):
        raise RuntimeError("handler bug")
    assert not _client(bad)._replace_after(RuntimeError("x"))  # noqa: SLF001


def test_a_handler_must_be_callable():
    with pytest.raises(StreamsError, match="set_uncaught_exception_handler"):
        _client("REPLACE_THREAD")
