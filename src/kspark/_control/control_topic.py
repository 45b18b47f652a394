"""The Kafka clients of a real-time stream thread: its input consumer, the stop signal and
its live metrics.

The stop signal is a one-partition topic, ``<application.id>-kspark-control``: the driver
appends a record naming the run to stop; every thread of that run watches the topic from
the offset the driver noted when it launched the epoch, so a signal sent before a thread
started is still seen. Threads also append their live metrics there (key ``metrics``, a
JSON value naming the run), which the driver reads (:class:`MetricsReader`).

Example (needs a broker, so not run)::

    begin = control_end(settings)             # the driver, before launching an epoch
    watch = StopWatch(settings, app_id, begin, run)   # each thread
    send_stop(settings, app_id, run)          # the driver, to stop
    watch.stopped()                           # True, at the thread's next look
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaException

from kspark._graph.resources import control_group, control_topic
from kspark._kafka.factory import new_consumer, new_producer
from kspark._kafka.retry import Stall, not_yet_visible, transient
from kspark._kafka.settings import ClientSettings, as_settings
from kspark.errors import StreamsError

log = logging.getLogger("kspark")

__all__ = ["thread_consumer", "StopWatch", "send_stop", "control_end",
           "MetricsSender", "MetricsReader", "send_assignment"]


# The control topic is idle most of the time: a fetch parked on the broker returns as soon as
# a record arrives (no later for a long wait), while a short wait makes the broker answer an
# empty fetch every few ms for every watcher (measured: about 40 % of the broker's CPU
# during a real-time run).
CONTROL_FETCH_WAIT_MS = 500

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
    from confluent_kafka import TopicPartition

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
    p.produce(control_topic(app_id), key=b"stop", value=run.encode())
    if p.flush(30):  # not delivered: the stop falls back to cancelling the epoch
        log.warning("application %r: the stop request was not delivered to the control topic "
                    "within 30 s (is the cluster at %s up?)", app_id, settings.bootstrap)


def send_assignment(where: ClientSettings | str, app_id: str, run: str, version: int,
                    active: Any, standby: Any) -> None:
    """Tell every thread of run ``run`` its tasks and standby copies (a new version)."""
    import json

    settings = as_settings(where)
    p = new_producer(settings.conf("producer", "control", {"acks": "all"}), "control topic")
    p.produce(control_topic(app_id), key=b"assign", value=json.dumps(
        {"query": run, "version": version, "active": [list(a) for a in active],
         "standby": [list(s) for s in standby]}).encode())
    if p.flush(30) != 0:
        raise StreamsError(f"application {app_id!r}: a new assignment of its tasks was not "
                           f"delivered to the control topic within 30 s (is the cluster at "
                           f"{settings.bootstrap} up?)")


class StopWatch:
    """A thread's view of the control topic: :meth:`stopped` once one of its ``runs`` (its
    own epoch's, the whole query's) was asked to stop."""

    def __init__(self, where: ClientSettings | str, app_id: str, begin: int, *runs: str):
        from confluent_kafka import TopicPartition

        settings = as_settings(where)
        self.runs = {r.encode() for r in runs if r}
        self._assignment: tuple[int, list, list] | None = None
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
                if m.error() is None and m.key() == b"assign":
                    self._take_assignment(m.value())
            self._stopped = any(m.error() is None and m.key() == b"stop" and m.value() in self.runs
                                for m in msgs)
        return self._stopped

    def _take_assignment(self, value: bytes) -> None:
        import json

        try:
            a = json.loads(value)
            if a["query"].encode() in self.runs and (
                    self._assignment is None or a["version"] > self._assignment[0]):
                self._assignment = (int(a["version"]), a["active"], a["standby"])
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("a malformed assignment on the control topic was left out")

    def assignment(self) -> tuple[int, list, list] | None:
        """The newest assignment of this run seen so far: (version, per thread its active
        tasks, per thread its standby copies), as indices into the run's tasks."""
        return self._assignment

    def close(self) -> None:
        self._consumer.close()


class MetricsSender:
    """A thread's sender of its live metrics to the control topic (fire and forget)."""

    def __init__(self, where: ClientSettings | str, app_id: str, run: str):
        settings = as_settings(where)
        self.topic, self.run = control_topic(app_id), run
        self._producer = new_producer(settings.conf("producer", "metrics", {
            "acks": "1", "linger.ms": 5}), "control topic")

    def send(self, report: dict[str, Any]) -> None:
        import json

        self._producer.produce(self.topic, key=b"metrics",
                               value=json.dumps({"run": self.run, **report}).encode())
        self._producer.poll(0)

    def close(self) -> None:
        self._producer.flush(5)


class MetricsReader:
    """The driver's reader of the threads' metrics, from offset ``begin`` of the control
    topic on."""

    def __init__(self, where: ClientSettings | str, app_id: str, begin: int):
        from confluent_kafka import TopicPartition

        settings = as_settings(where)
        self._consumer = new_consumer(settings.conf("consumer", "control", {
            "group.id": control_group(app_id), "enable.auto.commit": False,
            "fetch.wait.max.ms": CONTROL_FETCH_WAIT_MS}), "control topic")
        self._consumer.assign([TopicPartition(control_topic(app_id), 0, begin)])

    def read(self) -> list[tuple[str, dict[str, Any]]]:
        """The reports that arrived since the last call: (run, report), oldest first."""
        import json

        out = []
        while True:
            msgs = self._consumer.consume(500, 0)
            if not msgs:
                return out
            for m in msgs:
                if m.error() is None and m.key() == b"metrics":
                    try:
                        report = json.loads(m.value())
                        run = str(report.pop("run"))
                        int(report["thread"]), dict(report["lag"])  # a report's shape
                        out.append((run, report))
                    except (ValueError, TypeError, KeyError, AttributeError):
                        log.warning("control topic offset %d: a metrics record that is not "
                                    "a thread's report was skipped", m.offset())

    def close(self) -> None:
        self._consumer.close()
