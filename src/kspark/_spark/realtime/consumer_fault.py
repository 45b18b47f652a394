"""A stream thread's view of a broker outage, as its consumer reports it.

The consumer reconnects by itself after a broker restart; meanwhile it hands the thread
transport errors (which are not a reason to fail) and nothing to process. An idle thread
has nothing to commit either, so no commit would ever notice an outage that does not end:
:class:`ConsumerFault` does. Once a transient error was seen it asks the cluster for an end
offset once a second; an answer ends the fault, and a fault longer than
``task.timeout.ms`` fails the thread with a TaskTimeoutError — never a silent wait.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kspark._kafka.retry import Stall

__all__ = ["ConsumerFault"]

log = logging.getLogger("kspark")
PROBE_EVERY_S = 1.0


class ConsumerFault:
    """``probe``: a topic-partition the consumer reads (its end offset is asked)."""

    def __init__(self, consumer: Any, probe: tuple[str, int] | None, settings: Any):
        self.consumer, self.probe, self.settings = consumer, probe, settings
        self.stall: Stall | None = None
        self._probed = 0.0

    def seen(self, topic: str, detail: str) -> None:
        """A transient error of the consumer (reading ``topic``): the fault begins (or
        goes on)."""
        self.stall = self.stall or Stall.of(f"stream thread reading topic {topic!r}",
                                            self.settings)
        self.stall.note(detail)

    def check(self) -> None:
        """While a fault lasts, once a second: is the cluster back? Raises TaskTimeoutError
        once the fault has lasted ``task.timeout.ms``."""
        from confluent_kafka import KafkaException, TopicPartition

        if self.stall is None or time.monotonic() - self._probed < PROBE_EVERY_S:
            return
        if self.probe is None:  # nothing to ask about: the commits bound the fault
            self.stall = None
            return
        self._probed = time.monotonic()
        try:
            self.consumer.get_watermark_offsets(TopicPartition(*self.probe), timeout=1.0)
        except KafkaException as e:
            if self.stall.expired():
                raise self.stall.timeout_error(e.args[0].str()) from None
            self.stall.note(e.args[0].str())
            return
        log.info("%s: the cluster answers again after %.0f s", self.stall.what,
                 self.stall.elapsed_s)
        self.stall = None
