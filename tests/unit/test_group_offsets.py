"""Reading a consumer group's committed offsets: a partition the group coordinator answers
with an error is never taken for a partition without a committed offset (a thread would
start it over by its reset policy: under exactly-once, every record of it again)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException

import kspark._kafka.group_offsets as group_offsets


@dataclass
class _Answer:
    topic: str
    partition: int
    offset: int
    error: KafkaError | None = None


class _Consumer:
    def __init__(self, answers):
        self.answers = answers

    def committed(self, partitions, timeout):
        return self.answers.pop(0)

    def close(self):
        pass


def _with_answers(monkeypatch, *answers):
    consumer = _Consumer(list(answers))
    monkeypatch.setattr(group_offsets, "new_consumer", lambda conf, what: consumer)
    return consumer


def test_an_unstable_offset_commit_is_asked_again_not_taken_for_no_offset(monkeypatch):
    unstable = KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT, "pending transaction", retriable=True)
    _with_answers(monkeypatch,
                  [_Answer("in", 0, 40), _Answer("in", 1, -1001, unstable)],
                  [_Answer("in", 0, 40), _Answer("in", 1, 77)])
    monkeypatch.setattr(group_offsets.Stall, "wait", lambda self, err: None)
    got = group_offsets.committed_offsets("127.0.0.1:1", "app", [("in", 0), ("in", 1)])
    assert got == {("in", 0): 40, ("in", 1): 77}


def test_a_partition_without_a_committed_offset_is_left_out(monkeypatch):
    _with_answers(monkeypatch, [_Answer("in", 0, 12), _Answer("in", 1, -1001)])
    got = group_offsets.committed_offsets("127.0.0.1:1", "app", [("in", 0), ("in", 1)])
    assert got == {("in", 0): 12}


def test_a_lasting_partition_error_fails_the_call(monkeypatch):
    denied = KafkaError(KafkaError.INVALID_REQUEST, "bad", retriable=False)
    _with_answers(monkeypatch, [_Answer("in", 0, -1001, denied)])
    monkeypatch.setattr(group_offsets, "check_client", lambda *a: None)
    with pytest.raises(KafkaException):
        group_offsets.committed_offsets("127.0.0.1:1", "app", [("in", 0)])
