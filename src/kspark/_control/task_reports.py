"""The micro-batch mode's task reports: what each committed task batch counted, sent to the
application's control topic (``<application.id>-kspark-control``, key ``task``) and summed
by the driver — the channel the real-time threads' live metrics take (key ``metrics``), so
both modes count through Kafka and neither needs a Spark accumulator (which a Spark Connect
session does not have).

A worker sends its report after the task batch committed and before its Spark task ends
(:meth:`TaskReportSender.send` waits for the delivery), so once a micro-batch completed its
reports are in the topic; the driver reads the topic up to its end when asked
(:meth:`TaskReportReader.read`). A report is sent once per committed batch: a replayed batch
commits nothing and sends nothing.

Example (needs a broker, so not run)::

    begin = control_end(settings, app_id)                 # the driver, before the query
    TaskReportSender.of(settings, app_id).send({"task": "0_1", "counts": {...}})  # a worker
    TaskReportReader(settings, app_id, begin).read()      # [{"task": "0_1", ...}]
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from kspark._kafka.factory import new_consumer, new_producer
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._graph.resources import control_group, control_topic

__all__ = ["TaskReportSender", "TaskReportReader", "REPORT_KEY"]

log = logging.getLogger("kspark")
REPORT_KEY = b"task"
_SENDERS: dict[tuple[str, str], TaskReportSender] = {}
_LOCK = threading.Lock()


class TaskReportSender:
    """A worker process's sender of task reports (one producer per application, kept)."""

    def __init__(self, settings: ClientSettings, app_id: str):
        self.app_id, self.topic = app_id, control_topic(app_id)
        self._producer = new_producer(settings.conf("producer", "reports", {
            "acks": "all", "linger.ms": 0}), "control topic")

    @classmethod
    def of(cls, where: ClientSettings | str, app_id: str) -> TaskReportSender:
        settings = as_settings(where)
        with _LOCK:
            key = (settings.bootstrap, app_id)
            if key not in _SENDERS:
                _SENDERS[key] = cls(settings, app_id)
            return _SENDERS[key]

    def send(self, report: dict[str, Any], timeout_s: float = 30.0) -> None:
        """Send ``report`` (JSON-able) and wait until Kafka has it; a report that cannot be
        delivered in ``timeout_s`` is missing from the application's metrics, and says so."""
        self._producer.produce(self.topic, key=REPORT_KEY, value=json.dumps(report).encode())
        if self._producer.flush(timeout_s):
            log.warning("application %r: the counts of task %s were not delivered to the "
                        "control topic %r within %.0f s: metrics() misses them", self.app_id,
                        report.get("task"), self.topic, timeout_s)


class TaskReportReader:
    """The driver's reader of task reports, from offset ``begin`` of the control topic on."""

    def __init__(self, where: ClientSettings | str, app_id: str, begin: int):
        from confluent_kafka import TopicPartition

        settings = as_settings(where)
        self.app_id = app_id
        self._tp = TopicPartition(control_topic(app_id), 0, begin)
        self._next = begin
        self._consumer = new_consumer(settings.conf("consumer", "reports", {
            "group.id": control_group(app_id), "enable.auto.commit": False}), "control topic")
        self._consumer.assign([self._tp])
        self._lock = threading.Lock()

    def read(self, patience_s: float = 5.0) -> list[dict[str, Any]]:
        """The task reports that arrived since the last call, read up to the topic's end as
        of now (or as far as ``patience_s`` allows: the rest comes with the next call)."""
        out: list[dict[str, Any]] = []
        with self._lock:
            try:
                _, end = self._consumer.get_watermark_offsets(self._tp, timeout=patience_s)
            except Exception as e:  # noqa: BLE001 - KafkaException: a broker restarting
                log.info("application %r: the control topic's end is not known now (%s); "
                         "task counts are read at the next call", self.app_id, e)
                return out
            deadline = time.monotonic() + patience_s
            while self._next < end and time.monotonic() < deadline:
                for m in self._consumer.consume(500, 0.2):
                    if m.error() is not None:
                        continue
                    self._next = m.offset() + 1
                    if m.key() == REPORT_KEY:
                        out.extend(_report(m.value(), m.offset()))
        return out

    def close(self) -> None:
        with self._lock:
            self._consumer.close()


def _report(raw: bytes, offset: int) -> list[dict[str, Any]]:
    """A report, or none (logged) if the record is not one."""
    try:
        report = json.loads(raw)
        str(report["task"]), dict(report["counts"])
        return [report]
    except (ValueError, TypeError, KeyError):
        log.warning("control topic offset %d: a task report that is not one was skipped",
                    offset)
        return []
