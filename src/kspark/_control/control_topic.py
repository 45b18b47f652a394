"""The Kafka clients of a real-time stream thread: its input consumer, and the stop signal
and assignments it watches for.

The stop signal is a one-partition topic, ``<application.id>-kspark-control``: the driver
appends a :class:`~kspark._control.messages.Stop` naming the run to stop; every thread of
that run watches the topic from the offset the driver noted when it launched the epoch, so a
signal sent before a thread started is still seen. The driver's new assignments of the
run's tasks travel there too (:class:`~kspark._control.messages.Assignment`), and the
threads' live metrics (``reports.py``).

Example (needs a broker, so not run)::

    begin = control_end(settings)             # the driver, before launching an epoch
    watch = StopWatch(settings, app_id, begin, run)   # each thread
    send_stop(settings, app_id, run)          # the driver, to stop
    watch.stopped()                           # True, at the thread's next look
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from kspark._control.messages import Assignment, Stop, read_message
from kspark._graph.resources import control_group, control_topic
from kspark._kafka.factory import new_consumer, new_producer
from kspark._kafka.retry import Stall, not_yet_visible, transient
from kspark._kafka.settings import ClientSettings, as_settings
from kspark.errors import StreamsError

log = logging.getLogger("kspark")

__all__ = ["thread_consumer", "StopWatch", "send_stop", "control_end", "send_assignment",
           "CONTROL_FETCH_WAIT_MS"]


# The control topic is idle most of the time: a fetch parked on the broker returns as soon as
# a record arrives (no later for a long wait), while a short wait makes the broker answer an
# empty fetch every few ms for every watcher (measured: about 40 % of the broker's CPU
# during a real-time run).
CONTROL_FETCH_WAIT_MS = 500
_WATCHED = (Stop.KEY, Assignment.KEY)  # a thread skips the others' records undecoded

def thread_consumer(where: ClientSettings | str, app_id: str, index: int) -> Any:
    """A consumer of the group ``app_id`` that is only assigned partitions (never
    subscribed: a thread's partitions are fixed), read_committed, committing nothing itself
    (its tasks commit offsets with their markers or in their transactions), telling when a
    partition is read to its end (a task waits for its partitions that are not)."""
    settings = as_settings(where)
    return new_consumer(settings.conf("consumer", f"stream-thread-{index}", {
        "group.id": app_id, "enable.auto.commit": False, "isolation.level": "read_committed",
        "fetch.wait.max.ms": 5, "enable.partition.eof": True}), f"stream thread {index}")


def control_end(where: ClientSettings | str, app_id: str) -> int:
    """The control topic's end offset: where an epoch's threads start watching.

    The driver has just created the topic: a node of the cluster that has not seen it yet
    answers "unknown partition" for a moment, which is retried like a broker restart."""
    settings = as_settings(where)
    c = new_consumer(settings.conf("consumer", "control", {"group.id": control_group(app_id),
                                                           "enable.auto.commit": False}),
                     "control topic")
    stall: Stall | None = None
    try:
        while True:  # a broker restart: retried within task.timeout.ms
            try:
                _, high = c.get_watermark_offsets(TopicPartition(control_topic(app_id), 0),
                                                  timeout=10)
                return int(high)
            except KafkaException as e:
                if not (transient(e.args[0]) or not_yet_visible(e.args[0])):
                    raise
                stall = stall or Stall.of(f"application {app_id!r}: reading the end of the "
                                          "control topic", settings)
                stall.wait(e.args[0])
    finally:
        c.close()


def send_stop(where: ClientSettings | str, app_id: str, run: str) -> None:
    """Ask every thread of run ``run`` to commit and end."""
    settings = as_settings(where)
    p = new_producer(settings.conf("producer", "control", {"acks": "all"}), "control topic")
    key, value = Stop(run).encode()
    p.produce(control_topic(app_id), key=key, value=value)
    if p.flush(30):  # not delivered: the stop falls back to cancelling the epoch
        log.warning("application %r: the stop request was not delivered to the control topic "
                    "within 30 s (is the cluster at %s up?)", app_id, settings.bootstrap)


def send_assignment(where: ClientSettings | str, app_id: str, run: str, version: int,
                    active: Any, standby: Any) -> None:
    """Tell every thread of run ``run`` its tasks and standby copies (a new version)."""
    settings = as_settings(where)
    p = new_producer(settings.conf("producer", "control", {"acks": "all"}), "control topic")
    key, value = Assignment(run, version, tuple(tuple(a) for a in active),
                            tuple(tuple(s) for s in standby)).encode()
    p.produce(control_topic(app_id), key=key, value=value)
    if p.flush(30) != 0:
        raise StreamsError(f"application {app_id!r}: a new assignment of its tasks was not "
                           f"delivered to the control topic within 30 s (is the cluster at "
                           f"{settings.bootstrap} up?)")


class StopWatch:
    """A thread's view of the control topic: :meth:`stopped` once one of its ``runs`` (its
    own epoch's, the whole query's) was asked to stop."""

    def __init__(self, where: ClientSettings | str, app_id: str, begin: int, *runs: str):
        settings = as_settings(where)
        self.runs = {r for r in runs if r}
        self._assignment: tuple[int, tuple, tuple] | None = None
        self._consumer = new_consumer(settings.conf("consumer", "control", {
            "group.id": control_group(app_id), "enable.auto.commit": False,
            "fetch.wait.max.ms": CONTROL_FETCH_WAIT_MS}), "control topic")
        self._consumer.assign([TopicPartition(control_topic(app_id), 0, begin)])
        self._stopped = False

    def stopped(self) -> bool:
        """Whether a stop of this run has arrived (looks without waiting)."""
        while not self._stopped:
            msgs = self._consumer.consume(100, 0)
            if not msgs:
                break
            for m in msgs:
                message = read_message(m) if m.key() in _WATCHED else None
                if isinstance(message, Assignment):
                    self._take_assignment(message)
                elif isinstance(message, Stop) and message.run in self.runs:
                    self._stopped = True
        return self._stopped

    def _take_assignment(self, a: Assignment) -> None:
        if a.query in self.runs and (self._assignment is None or
                                     a.version > self._assignment[0]):
            self._assignment = (a.version, a.active, a.standby)

    def assignment(self) -> tuple[int, tuple, tuple] | None:
        """The newest assignment of this run seen so far: (version, per thread its active
        tasks, per thread its standby copies), as indices into the run's tasks."""
        return self._assignment

    def close(self) -> None:
        self._consumer.close()
