"""The ProcessorContext a node's processor sees."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Mapping, Protocol, cast

from kspark._engine.api import ProcessorContext, Record, RecordMetadata
from kspark._engine.durations import to_ms

if TYPE_CHECKING:
    from kspark._engine.nodes import ProcessorNode, RawRecord
    from kspark._engine.task import StreamTask

__all__ = ["NodeContext", "DropsRecords", "record_dropped", "count_metric"]


class DropsRecords(Protocol):
    """What a built-in processor that drops records needs of its context beyond the
    Processor API: the engine's ``NodeContext`` provides it."""

    def record_dropped(self, reason: str) -> None: ...


def record_dropped(context: ProcessorContext, reason: str) -> None:
    """Count and log a record a built-in processor drops (Java's dropped-records sensor).

    Built-in processors run only in a task, whose context is a ``NodeContext``; the call
    goes to it as is (any other context fails here, as it always did).
    """
    cast(DropsRecords, context).record_dropped(reason)


def count_metric(context: ProcessorContext, stat: str, value: int | float = 0) -> None:
    """Count ``stat`` of the context's node in its task's metrics at DEBUG level (kspark's
    DSL processors: a suppress node's emits, final results), as Java's node-level sensors; a
    context without a task (a test's) counts nothing."""
    if isinstance(context, NodeContext) and context._task.stats.debug:  # noqa: SLF001
        context._task.stats.record(stat, value, context._node.name)  # noqa: SLF001


class NodeContext(ProcessorContext):
    """Context bound to one node of one task."""

    def __init__(self, task: "StreamTask", node: "ProcessorNode"):
        self._task = task
        self._node = node

    def forward(self, record: Record, child_name: str | None = None) -> None:
        if child_name is not None:
            self._node.child(child_name).process(record)
            return
        for child in self._node.children:
            child.process(record)

    def record_metadata(self) -> RecordMetadata | None:
        return self._task.record_metadata

    def task_id(self) -> str:
        return self._task.task_id

    def application_id(self) -> str:
        return self._task.config["application.id"]

    def app_config(self) -> Mapping[str, Any]:
        return self._task.config

    def current_stream_time_ms(self) -> int:
        return self._task.stream_time

    def current_system_time_ms(self) -> int:
        return self._task.clock()

    def commit(self) -> None:
        self._task.commit_requested = True

    def record_dropped(self, reason: str) -> None:
        """Count and log a record the processor drops (kspark-internal)."""
        self._task.record_dropped(self._node, reason)

    def get_state_store(self, name: str) -> Any:
        return self._task.get_state_store(self._node, name)

    def schedule(self, interval_ms: Any, punctuation_type: Any, callback: Any) -> Any:
        return self._task.schedule(self._node, to_ms(interval_ms, "schedule() interval"),
                                   punctuation_type, callback)

    def schedule_record(self, record: Record, delay_ms: Any) -> None:
        self._task.schedule_record(self._node, record, to_ms(delay_ms, "delay_ms"))

    def is_delayed_delivery(self) -> bool:
        return self._task.delayed_delivery

    # -- engine-side: what an async step (``async_.processor.AsyncProcessor``) asks of its task
    def node_name(self) -> str:
        """The name of the node this context is bound to."""
        return self._node.name

    def async_runtime(self) -> Any:
        """The runtime the task's async calls run on (None: the shared thread runtime)."""
        return self._task.async_runtime

    def input_record(self) -> "RawRecord | None":
        """The input record being processed, as read (None in a punctuation)."""
        return self._task.current_raw()

    def as_input(self, raw: "RawRecord | None") -> AbstractContextManager[None]:
        """Act as if ``raw`` were the input record being processed (dead letters and errors
        name it)."""
        return self._task.processing(raw)

    def dead_letter(self, raw: "RawRecord | None", error: BaseException,
                    extra_headers: tuple = ()) -> bool:
        """Send ``raw`` to the dead-letter topic if one is configured; whether it was."""
        if not self._task.dead_letter_topic:
            return False
        self._task.dead_letter(raw, error, extra_headers)
        return True
