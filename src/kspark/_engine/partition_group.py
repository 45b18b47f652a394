"""PartitionGroup: the records of a task's partitions, handed out in timestamp order."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable

from kspark._engine.nodes import RawRecord

__all__ = ["PartitionGroup"]


class PartitionGroup:
    """Buffers records per topic-partition and yields the one with the lowest head timestamp.

    Ties break on (topic, partition) so that a replay picks the same order. Within a
    partition, offset order is kept.

    Example:
        >>> g = PartitionGroup()
        >>> g.add([RawRecord("a", 0, 0, 5, None, b"x"), RawRecord("b", 0, 0, 3, None, b"y")])
        >>> [r.topic for r in g.drain()]
        ['b', 'a']
    """

    def __init__(self) -> None:
        self._queues: dict[tuple[str, int], deque[RawRecord]] = {}

    def add(self, records: Iterable[RawRecord]) -> None:
        for r in records:
            q = self._queues.get((r.topic, r.partition))
            if q is None:
                q = self._queues[(r.topic, r.partition)] = deque()
            q.append(r)

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def drain(self) -> Iterable[RawRecord]:
        """Yield every buffered record, lowest head timestamp first."""
        queues = [q for q in self._queues.values() if q]
        if len(queues) == 1:  # one partition: offset order is the order
            q = queues[0]
            while q:
                yield q.popleft()
            return
        heap = [(q[0].timestamp, tp, q) for tp, q in self._queues.items() if q]
        heapq.heapify(heap)
        while heap:
            _, tp, q = heap[0]
            rec = q.popleft()
            if q:
                heapq.heapreplace(heap, (q[0].timestamp, tp, q))
            else:
                heapq.heappop(heap)
            yield rec
