"""A count's cache flush straight to its sink (``count().to_stream().to(topic)``): a
flushed entry's bytes are the sink's record, so it is sent without building the records
in between (:class:`DirectEmit`), with the sink's metrics.

Example:
    >>> from kspark import Serdes, StreamsBuilder
    >>> b = StreamsBuilder()
    >>> S = Serdes.String()
    >>> b.stream("in", key_serde=S, value_serde=S).group_by_key().count() \\
    ...  .to_stream().to("out", key_serde=Serdes.String(), value_serde=Serdes.Long())
    >>> from kspark._graph.instantiate import build_task
    >>> from kspark._engine.collector import MemoryCollector
    >>> task = build_task(b.build()._graph, "0_0", {"application.id": "a", "state.dir":
    ...     __import__("tempfile").mkdtemp()}, MemoryCollector())
    >>> count = task.nodes[1]
    >>> direct_sink(count, task.stores[count.processor.store_name]).topic
    'out'
"""

from __future__ import annotations

from typing import Any, cast

from kspark._engine.aggregates.batch_base import key_family
from kspark._engine.aggregates.stream import StreamAggregateProcessor
from kspark._engine.collector import send_many
from kspark._engine.nodes import ProcessorNode, SinkNode
from kspark._engine.tables.processors import TableToStreamProcessor
from kspark.errors import SinkWriteError
from kspark.serde import _builtin as builtin

__all__ = ["DirectEmit", "direct_sink"]


def direct_sink(node: ProcessorNode, store: Any) -> SinkNode | None:
    """The sink a count's changes go to through ``to_stream()`` alone, where a flushed
    entry's bytes are the sink's record (the count's key bytes, its 8-byte long); else None."""
    (to_stream,) = node.children if len(node.children) == 1 else (None,)
    if to_stream is None or type(to_stream.processor) is not TableToStreamProcessor \
            or len(to_stream.children) != 1:
        return None
    (sink,) = to_stream.children
    if type(sink) is not SinkNode or not isinstance(sink.topic, str) \
            or sink.partitioner is not None or type(sink.value_serde) is not builtin.LongSerde \
            or key_family(sink.key_serde) is not key_family(store.key_serde):
        return None
    return sink


class DirectEmit:
    """A count's cache flush straight to its sink (``count().to_stream().to(topic)``): each
    flushed entry is sent as the sink would send the change ``to_stream()`` forwards, with
    the same metrics, without building the records in between. A send the collector refuses
    goes the whole way instead (the production handler decides there)."""

    def __init__(self, task: Any, node: ProcessorNode, sink: SinkNode):
        self.task, self.sink = task, sink
        count = cast(StreamAggregateProcessor, node.processor)
        self.slow = count._flushed  # noqa: SLF001 - the processor's own flush path
        self.deleted_at = count._deleted_at  # noqa: SLF001
        self.topic = cast(str, sink.topic)  # direct_sink: a topic name
        self.size = 20 + len(self.topic.encode())  # record_size without key, value, headers
        self.where = f"{sink.name}|{self.topic}"

    def flushed(self, key: bytes, new: bytes | None, old: bytes | None) -> None:
        """One flushed entry (the cache's ``on_flush``)."""
        self.flushed_many([(key, new, old)])

    def flushed_many(self, down: list[tuple[bytes, bytes | None, bytes | None]]) -> None:
        """A flush's entries, in order (the cache's ``on_flush_many``): the counts sent in
        one call; a deleted entry (none for a count) goes the processor's way."""
        run: list[tuple[bytes, bytes]] = []
        for key, new, old in down:
            if new is None:
                self._send(run)
                run = []
                self.slow(key, new, old)
            else:
                self.deleted_at.pop(key, None)
                run.append((key, new))
        self._send(run)

    def _send(self, run: list[tuple[bytes, bytes]]) -> None:
        if not run:
            return
        task = self.task
        records = [(k, new[8:], int.from_bytes(new[:8], "big", signed=True), (), None)
                   for k, new in run]
        try:
            send_many(task.collector, self.topic, records)
        except SinkWriteError as e:  # the sink's way for the refused one: the handler decides
            i = getattr(e, "index", 0)
            self._account(records[:i])
            key, new = run[i]
            self.slow(key, new, None)
            self._send(run[i + 1:])
            return
        self._account(records)

    def _account(self, records: list[tuple[bytes, bytes, int, Any, Any]]) -> None:
        """The sink's metrics of ``records``: bytes produced, end-to-end latency."""
        if not records:
            return
        now, n = self.task.clock(), len(records)
        sizes = [self.size + len(k) + len(v) for k, v, _, _, _ in records]
        stamps = [ts for _, _, ts, _, _ in records]
        stats = self.task.stats
        stats.record_many("bytes-produced", n, sum(sizes), max(sizes), min(sizes), self.where)
        stats.record_many("e2e", n, n * now - sum(stamps), now - min(stamps), now - max(stamps),
                          self.sink.name)
