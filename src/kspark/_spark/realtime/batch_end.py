"""When a real-time batch run (``autostop.at=eol``, KIP-95) is over, on the driver.

The threads process nothing at or after the run's stop offsets (``stream_thread.py``).
The run is over when the consumer group has committed every input partition up to its stop
offset and every repartition partition up to its read_committed end: the inputs are checked
first, so by then nothing more will be written to the repartition topics, whose ends are
final (intermediate topics drained, as the seed describes for stream threads).

Example (needs a broker, so not run)::

    end = BatchEnd(settings, config, "orders", {("in", 0): 120}, [("orders-r-repartition", 0)])
    end.reached()       # False until the group committed ("in", 0) at 120 and drained the rest
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kspark._kafka.clients import committed_offsets
from kspark._kafka.settings import ClientSettings

__all__ = ["BatchEnd"]

TP = tuple[str, int]


class BatchEnd:
    """The end of a batch run: ``stop`` (input partition -> stop offset) and the
    repartition partitions ``drained`` that must be read to their ends."""

    def __init__(self, settings: ClientSettings, config: Mapping[str, Any], app_id: str,
                 stop: Mapping[TP, int], drained: list[TP]):
        self.settings, self.config, self.app_id = settings, config, app_id
        self.stop, self.drained = dict(stop), drained

    def committed(self) -> dict[TP, int]:
        """The group's committed offsets of the input and repartition partitions."""
        return committed_offsets(self.settings, self.app_id, [*self.stop, *self.drained],
                                 stable=False)

    def reached(self) -> bool:
        from kspark._host.restore import admin_for

        committed = self.committed()
        if any(committed.get(tp, 0) < o for tp, o in self.stop.items()):
            return False
        ends = admin_for(self.config).end_offsets(self.drained) if self.drained else {}
        return all(committed.get(tp, 0) >= end for tp, end in ends.items())
