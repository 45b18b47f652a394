"""What a real-time thread holds of one task's input between polls: Kafka Streams'
``PartitionGroup`` with ``max.task.idle.ms=0`` (wait for an empty partition while it has
data on the broker), or ``-1`` (``wait=False``: never wait).

Example:
    >>> from kspark._engine.nodes import RawRecord
    >>> g = PolledRecords((("a", 0), ("b", 0)))
    >>> g.add([RawRecord("a", 0, 7, 1, None, b"x", ())])
    >>> g.ready(at_end=set()), g.ready(at_end={("b", 0)})
    (False, True)
    >>> [r.offset for r in g.take({("b", 0)})], g.positions
    ([7], {('a', 0): 8})

A partition that runs out while it has records left to fetch stops the take there, as
Kafka Streams waits for it (``max.task.idle.ms=0``):

    >>> g.add([RawRecord("a", 0, 8, 5, None, b"x", ()), RawRecord("a", 0, 9, 9, None, b"y", ())])
    >>> g.add([RawRecord("b", 0, 0, 6, None, b"z", ())])
    >>> [(r.topic, r.offset) for r in g.take()], sorted(g.pending)
    ([('a', 8), ('b', 0)], [('a', 0)])
"""

from __future__ import annotations

import heapq
from collections.abc import Container

from kspark._engine.nodes import RawRecord

__all__ = ["PolledRecords"]

TP = tuple[str, int]


class PolledRecords:
    """The records polled and not processed yet of a task reading ``sources``."""

    def __init__(self, sources: tuple[TP, ...], wait: bool = True):
        self.sources, self.wait = sources, wait
        self.pending: dict[TP, list[RawRecord]] = {}
        self.positions: dict[TP, int] = {}  # after the records taken: the next offset

    def add(self, records: list[RawRecord]) -> None:
        """Hold polled records (of one partition, in offset order) until :meth:`ready`."""
        if records:
            self.pending.setdefault((records[0].topic, records[0].partition), []).extend(records)

    def ready(self, at_end: Container[TP]) -> bool:
        """Whether to process what is held: every input partition has records held or has
        none left to fetch (``at_end``), so that records are picked by head timestamp across
        the partitions; without ``wait``, whenever records are held."""
        return bool(self.pending) and (not self.wait or all(
            tp in self.pending or tp in at_end for tp in self.sources))

    def take(self, at_end: Container[TP] = ()) -> list[RawRecord]:
        """The records to process now, noting each partition's next offset in
        :attr:`positions`: as Kafka Streams picks them (lowest head timestamp first, ties
        to the lower topic and partition, as the task's own group drains them), up to where
        a partition that still has records to fetch (not ``at_end``) runs out; the rest stay
        held. Without ``wait``, or with one partition, everything held."""
        if not self.wait or len(self.pending) == 1 and len(self.sources) == 1:
            records = [r for rs in self.pending.values() for r in rs]
            for tp, rs in self.pending.items():
                self.positions[tp] = rs[-1].offset + 1
            self.pending.clear()
            return records
        return self._take_in_order(at_end)

    def _take_in_order(self, at_end: Container[TP]) -> list[RawRecord]:
        taken: dict[TP, int] = {tp: 0 for tp in self.pending}
        heap = [(rs[0].timestamp, tp) for tp, rs in self.pending.items()]
        heapq.heapify(heap)
        blocked = any(tp not in self.pending and tp not in at_end for tp in self.sources)
        out: list[RawRecord] = []
        while heap and not blocked:
            _, tp = heap[0]
            rs, i = self.pending[tp], taken[tp]
            out.append(rs[i])
            taken[tp] = i + 1
            if i + 1 < len(rs):
                heapq.heapreplace(heap, (rs[i + 1].timestamp, tp))
            else:
                heapq.heappop(heap)
                blocked = tp not in at_end  # Java waits for it: it has data on the broker
        for tp, n in taken.items():
            if n:
                self.positions[tp] = self.pending[tp][n - 1].offset + 1
            rest = self.pending[tp][n:]
            if rest:
                self.pending[tp] = rest
            else:
                del self.pending[tp]
        return out
