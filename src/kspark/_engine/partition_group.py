"""PartitionGroup: the records of a task's partitions, handed out in timestamp order."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from itertools import groupby
from operator import itemgetter

from kspark._engine.nodes import RawRecord

__all__ = ["PartitionGroup"]

_TOPIC_PARTITION = itemgetter(0, 1)  # a RawRecord's (topic, partition)


class PartitionGroup:
    """Buffers records per topic-partition and yields the one with the lowest head timestamp.

    :meth:`drain` takes a batch (the Spark host): ties break on (topic, partition) so that a
    replay picks the same order. :meth:`next_record` takes one record at a time while more
    arrive (the test driver): Java's ``PartitionGroup.nextRecord``, whose priority queue of
    non-empty partitions keyed by head timestamp re-offers a partition after each record,
    so equal heads alternate. Use one of the two per group. Within a partition, offset
    order is kept.

    Example:
        >>> g = PartitionGroup()
        >>> g.add([RawRecord("a", 0, 0, 5, None, b"x"), RawRecord("b", 0, 0, 3, None, b"y")])
        >>> [r.topic for r in g.drain()]
        ['b', 'a']
    """

    def __init__(self) -> None:
        self._queues: dict[tuple[str, int], deque[RawRecord]] = {}
        self._by_time: list[deque[RawRecord]] = []  # next_record's heap of non-empty queues

    def add(self, records: Iterable[RawRecord]) -> None:
        # a run of one partition's records goes into its queue at once (polls hand them so)
        for tp, run in groupby(records, _TOPIC_PARTITION):
            q = self._queues.get(tp)
            if q is None:
                q = self._queues[tp] = deque()
            empty = not q
            q.extend(run)
            if empty:  # a queue that becomes non-empty is offered (Java's addRawRecords)
                self._by_time.append(q)
                _sift_up(self._by_time, len(self._by_time) - 1, q)

    def next_record(self) -> RawRecord | None:
        """The head of the non-empty partition whose head has the lowest timestamp, or
        None; that partition is offered again if records remain (Java's nextRecord)."""
        heap = self._by_time
        if not heap:
            return None
        q, last = heap[0], heap.pop()
        if heap:
            _sift_down(heap, last)
        rec = q.popleft()
        if q:
            heap.append(q)
            _sift_up(heap, len(heap) - 1, q)
        return rec

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def drain(self) -> Iterable[RawRecord]:
        """Every buffered record, lowest head timestamp first (taken from the group)."""
        self._by_time.clear()  # drained: nothing stays for next_record
        queues = [q for q in self._queues.values() if q]
        if len(queues) == 1:  # one partition: offset order is the order
            records = list(queues[0])
            queues[0].clear()
            return records
        return self._merged()

    def _merged(self) -> Iterable[RawRecord]:
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


# java.util.PriorityQueue's siftUp and siftDown (strict comparisons), so that queues with
# equal head timestamps come out in the order Java's picks them.
def _sift_up(heap: list[deque[RawRecord]], k: int, q: deque[RawRecord]) -> None:
    ts = q[0].timestamp
    while k > 0:
        parent = (k - 1) >> 1
        if ts >= heap[parent][0].timestamp:
            break
        heap[k] = heap[parent]
        k = parent
    heap[k] = q


def _sift_down(heap: list[deque[RawRecord]], q: deque[RawRecord]) -> None:
    n, k, ts = len(heap), 0, q[0].timestamp
    while k < n >> 1:
        child = 2 * k + 1
        if child + 1 < n and heap[child][0].timestamp > heap[child + 1][0].timestamp:
            child += 1
        if ts <= heap[child][0].timestamp:
            break
        heap[k] = heap[child]
        k = child
    heap[k] = q
