"""What a real-time thread holds of one task's input between polls: Kafka Streams'
``PartitionGroup`` with ``max.task.idle.ms=0`` (wait for an empty partition while it has
data on the broker), or ``-1`` (``wait=False``: never wait).

Example:
    >>> from kspark._engine.nodes import RawRecord
    >>> g = PartitionGroup((("a", 0), ("b", 0)))
    >>> g.add([RawRecord("a", 0, 7, 1, None, b"x", ())])
    >>> g.ready(at_end=set()), g.ready(at_end={("b", 0)})
    (False, True)
    >>> [r.offset for r in g.take()], g.positions
    ([7], {('a', 0): 8})
"""

from __future__ import annotations

from collections.abc import Container

from kspark._engine.nodes import RawRecord

__all__ = ["PartitionGroup"]

TP = tuple[str, int]


class PartitionGroup:
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

    def take(self) -> list[RawRecord]:
        """Every record held, noting each partition's next offset in :attr:`positions`."""
        records = [r for rs in self.pending.values() for r in rs]
        for tp, rs in self.pending.items():
            self.positions[tp] = rs[-1].offset + 1
        self.pending.clear()
        return records
