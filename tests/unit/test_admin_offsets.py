"""End offsets while a broker restarts (``Admin.end_offsets``): the client's "no offset yet"
(-1001), "no leaders found" and a leader epoch from before the restart are asked again —
never read as a deleted topic or a lost changelog (which would fail a task with
ChangelogLostError) — and a topic the cluster says does not exist fails once it has stayed
away for MISSING_GRACE_S (one being created again is read when it is back)."""

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from kspark._kafka.admin import Admin
from kspark._kafka.settings import ClientSettings
from kspark.errors import KSparkError, TaskTimeoutError


def _done(value=None, error=None) -> Future:
    f: Future = Future()
    if error is not None:
        f.set_exception(KafkaException(error))
    else:
        f.set_result(SimpleNamespace(offset=value))
    return f


class _Client:
    """Answers list_offsets from a script, one answer per call; the topic exists unless
    told otherwise."""

    def __init__(self, answers, topic_exists=True):
        self.answers, self.topic_exists = list(answers), topic_exists
        self.asked = 0

    def list_offsets(self, req, **_):
        self.asked += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return {tp: _done(*answer) for tp in req}

    def list_topics(self, topic=None, timeout=None):
        error = None if self.topic_exists else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        return SimpleNamespace(topics={topic: SimpleNamespace(error=error)})


def _admin(client, task_timeout_ms=60_000) -> Admin:
    a = Admin(ClientSettings("127.0.0.1:1", task_timeout_ms=task_timeout_ms,
                             retry_backoff_ms=1), 1000)
    a._admin = client
    return a


@pytest.mark.parametrize("first", [
    (-1001, None),  # the broker is recovering: no offset yet
    (None, KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found")),
    (None, KafkaError(KafkaError.FENCED_LEADER_EPOCH)),  # metadata from before the restart
])
def test_a_recovering_broker_is_asked_again_until_it_answers(first):
    client = _Client([first, first, (42, None)])
    assert _admin(client).end_offsets([("app-counts-changelog", 2)]) == {
        ("app-counts-changelog", 2): 42}
    assert client.asked == 3


def test_an_unknown_offset_for_longer_than_task_timeout_is_a_task_timeout_naming_it():
    client = _Client([(-1001, None)])
    with pytest.raises(TaskTimeoutError, match="topic 'app-counts-changelog' partition 2"):
        _admin(client, task_timeout_ms=100).end_offsets([("app-counts-changelog", 2)])


def test_a_topic_the_cluster_says_does_not_exist_fails_after_the_grace(monkeypatch):
    monkeypatch.setattr("kspark._kafka.admin_offsets.MISSING_GRACE_S", 0.05)
    nope = KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found")
    client = _Client([(None, nope)], topic_exists=False)
    with pytest.raises(KSparkError, match="cannot read the end offset of topic 'gone' "
                                          "partition 0 .*the topic does not exist"):
        _admin(client).end_offsets([("gone", 0)])


def test_a_topic_deleted_and_created_again_is_read_when_it_is_back():
    """KIP-406's global topic recreated: for a moment the cluster says it does not exist."""
    nope = KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found")
    client = _Client([(None, nope), (None, nope), (7, None)], topic_exists=False)
    assert _admin(client).end_offsets([("again", 0)]) == {("again", 0): 7}
    assert client.asked == 3
