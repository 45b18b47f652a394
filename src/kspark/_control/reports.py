"""How counts travel from the workers to the driver in both execution modes: a
:class:`ReportSender` appends typed messages (``messages.py``) to the application's control
topic (``<application.id>-kspark-control``) and the driver's :class:`ControlReader` reads
them back, so neither mode needs a Spark accumulator (which a Spark Connect session does
not have).

- micro-batch: a worker sends a :class:`~kspark._control.messages.TaskReport` after its
  task batch committed and before its Spark task ends, and waits for the delivery
  (``wait=True``), so once a micro-batch completed its reports are in the topic; a replayed
  batch commits nothing and sends nothing. The driver sums them (``_host/metrics.
  ReportedTotals``).
- real-time: a stream thread sends a :class:`~kspark._control.messages.ThreadReport` every
  commit interval (at most every 5 s) and does not wait (``wait=False``: the loop goes
  on); closing its sender delivers what is left. The driver keeps each thread's latest
  (``_spark/realtime/thread_metrics.LiveTotals``).

The driver's reader reads from the offset it noted before starting the query
(``control_end``) up to the topic's end as of each call; it returns every control message
in between, and each caller keeps the kinds it wants.

Example (needs a broker, so not run)::

    begin = control_end(settings, app_id)                              # the driver
    ReportSender.of(settings, app_id).send(TaskReport("0_1", 3, {...}))  # a worker
    ControlReader(settings, app_id, begin).read()                      # [TaskReport(...)]
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import TopicPartition

from kspark._control.control_topic import CONTROL_FETCH_WAIT_MS
from kspark._control.messages import Message, read_message
from kspark._graph.resources import control_group, control_topic
from kspark._kafka.factory import new_consumer, new_producer
from kspark._kafka.settings import ClientSettings, as_settings

__all__ = ["ReportSender", "ControlReader"]

log = logging.getLogger("kspark")
_SENDERS: dict[tuple[str, str], ReportSender] = {}
_LOCK = threading.Lock()


class ReportSender:
    """A sender of control messages of application ``app_id``: ``wait`` (the micro-batch
    tasks' reports) waits for each delivery, acknowledged by every in-sync replica; else
    (the real-time threads' metrics) :meth:`send` returns at once and :meth:`close`
    delivers what is left."""

    def __init__(self, where: ClientSettings | str, app_id: str, wait: bool):
        settings = as_settings(where)
        self.app_id, self.topic, self.wait = app_id, control_topic(app_id), wait
        purpose, conf = (("reports", {"acks": "all", "linger.ms": 0}) if wait else
                         ("metrics", {"acks": "1", "linger.ms": 5}))
        self._producer = new_producer(settings.conf("producer", purpose, conf), "control topic")

    @classmethod
    def of(cls, where: ClientSettings | str, app_id: str) -> ReportSender:
        """The worker process's waiting sender for ``app_id`` (one producer, kept)."""
        settings = as_settings(where)
        with _LOCK:
            key = (settings.bootstrap, app_id)
            if key not in _SENDERS:
                _SENDERS[key] = cls(settings, app_id, wait=True)
            return _SENDERS[key]

    def send(self, message: Message, timeout_s: float = 30.0) -> None:
        """Append ``message``; a waiting sender waits until Kafka has it: one that cannot be
        delivered in ``timeout_s`` is missing from the application's metrics, and says so."""
        key, value = message.encode()
        self._producer.produce(self.topic, key=key, value=value)
        if not self.wait:
            self._producer.poll(0)
        elif self._producer.flush(timeout_s):
            log.warning("application %r: %s was not delivered to the control topic %r within "
                        "%.0f s: metrics() misses it", self.app_id, message.summary,
                        self.topic, timeout_s)

    def close(self, timeout_s: float = 5.0) -> None:
        """Deliver what is left (best effort, within ``timeout_s``)."""
        self._producer.flush(timeout_s)


class ControlReader:
    """The driver's reader of the control topic of ``app_id``, from offset ``begin`` on.
    Safe to call from several threads (one reads at a time)."""

    def __init__(self, where: ClientSettings | str, app_id: str, begin: int):
        settings = as_settings(where)
        self.app_id = app_id
        self._tp = TopicPartition(control_topic(app_id), 0, begin)
        self._next = begin
        self._consumer = new_consumer(settings.conf("consumer", "control", {
            "group.id": control_group(app_id), "enable.auto.commit": False,
            "fetch.wait.max.ms": CONTROL_FETCH_WAIT_MS}), "control topic")
        self._consumer.assign([self._tp])
        self._lock = threading.Lock()

    def read(self, patience_s: float = 5.0) -> list[Message]:
        """The messages that arrived since the last call, oldest first, read up to the
        topic's end as of now (or as far as ``patience_s`` allows: the rest comes with the
        next call). Records of other readers and malformed ones (logged) are left out."""
        out: list[Message] = []
        with self._lock:
            try:
                _, end = self._consumer.get_watermark_offsets(self._tp, timeout=patience_s)
            except Exception as e:  # noqa: BLE001 - KafkaException: a broker restarting
                log.info("application %r: the control topic's end is not known now (%s); "
                         "reports are read at the next call", self.app_id, e)
                return out
            deadline = time.monotonic() + patience_s
            while self._next < end and time.monotonic() < deadline:
                for record in self._consumer.consume(500, 0.2):
                    if record.error() is None:
                        self._next = record.offset() + 1
                    message = read_message(record)
                    if message is not None:
                        out.append(message)
        return out

    def close(self) -> None:
        with self._lock:
            self._consumer.close()
