"""Async processing (KIP-311): out-of-order execution, in-order retirement.

An async step issues a call per record into a *reservation station* (at most
``max_in_flight`` per task; issuing waits while all are taken), the calls run concurrently
(an ``async def`` on an event loop, a blocking function on a thread pool), and results are
forwarded downstream in input order: per task (``ordering="partition"``, the default) or per
key (``ordering="key"``: a key's records stay in order, other keys may pass them). A station
is freed when its result is forwarded. At a commit (the end of a micro-batch on Spark, every
record in the TopologyTestDriver) the task first completes every call in flight, so nothing
is committed past a record whose call has not finished.

A failing call is retried per its :class:`RetryPolicy` (exponential backoff with jitter);
after the last attempt the record goes to the dead-letter topic
(``errors.dead.letter.queue.topic.name``, with headers naming the error and the attempts) or
fails the task, as ``on_failure`` says.
"""

from __future__ import annotations

import concurrent.futures
import random
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from kspark._engine.api import Processor, ProcessorContext, Record
from kspark._engine.async_.metrics import new_metrics
from kspark._engine.async_.runtime import InlineRuntime, Outcome, RetryPolicy, ThreadRuntime
from kspark._config_defaults import default_of
from kspark.errors import ProcessorError, TopologyError

__all__ = ["AsyncProcessor", "AsyncStepProcessor", "AsyncContext", "check_async_options"]


@runtime_checkable
class AsyncContext(Protocol):
    """What an :class:`AsyncProcessor` needs of its context beyond the Processor API: the
    engine's ``NodeContext`` provides it (and the contexts that wrap one pass it on)."""

    def task_id(self) -> str: ...

    def app_config(self) -> Mapping[str, Any]: ...

    def node_name(self) -> str: ...

    def async_runtime(self) -> Any: ...

    def input_record(self) -> Any: ...

    def as_input(self, raw: Any) -> AbstractContextManager[None]: ...

    def dead_letter(self, raw: Any, error: BaseException, extra_headers: tuple = ()) -> bool: ...


class _Station:
    __slots__ = ("record", "future", "raw", "key")

    def __init__(self, record: Record, future: concurrent.futures.Future, raw: Any, key: Any):
        self.record, self.future, self.raw, self.key = record, future, raw, key


class AsyncProcessor(Processor):
    """A Processor API processor whose per-record work runs concurrently (KIP-311).

    Subclass it and implement :meth:`call`: an ``async def`` (run on one event loop per
    worker) or a blocking method (run on a thread pool). It runs off the task, out of order,
    so it must not use the context or stores. :meth:`complete` then gets each record with
    its call's result on the task, in input order (per task, or per key with
    ``ordering="key"``): it may forward, use stores and schedule records. By default it
    forwards the record with the result as its value.

    At most ``max_in_flight`` calls per task run at once (config ``async.max.in.flight``
    by default): issuing waits while all are taken. Before a commit the task completes every
    call in flight. ``retry``, ``timeout_ms`` and ``on_failure`` are as for
    ``KStream.map_values_async``. A subclass that overrides :meth:`init` must call
    ``super().init(context)``.

    Example:
        >>> class Lookup(AsyncProcessor):
        ...     async def call(self, record):
        ...         return record.value * 2            # e.g. await an HTTP client
        ...     def complete(self, record, result):
        ...         self.context.forward(record.with_value(result))
        >>> p = Lookup(max_in_flight=16, retry=RetryPolicy(max_attempts=3))
    """

    def __init__(self, max_in_flight: int | None = None, ordering: str = "partition",
                 retry: RetryPolicy | None = None, timeout_ms: int | None = None,
                 on_failure: str = "fail"):
        check_async_options(max_in_flight, ordering, on_failure)
        self.ordering, self.on_failure = ordering, on_failure
        self.max_in_flight = max_in_flight
        self.retry = retry or RetryPolicy(max_attempts=1)
        self.timeout_s = None if timeout_ms is None else timeout_ms / 1000
        self.stations: deque[_Station] = deque()
        self.metrics = new_metrics()

    def call(self, record: Record) -> Any:
        """The concurrent work for ``record`` (may be ``async def``); its result goes to
        :meth:`complete`. Must not use the context or stores."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(record)")

    def complete(self, record: Record, result: Any) -> None:
        """``record``'s call has finished with ``result``; called in input order, on the task."""
        self.context.forward(record.with_value(result))

    def _fn_and_arg(self, record: Record) -> tuple[Callable[[Any], Any], Any]:
        return self.call, record

    def init(self, context: ProcessorContext) -> None:
        if not isinstance(context, AsyncContext):
            raise TopologyError(f"{type(self).__name__} runs only in a kspark task: its context "
                                f"{type(context).__name__} lacks what async steps need "
                                f"(AsyncContext)")
        self.context = context
        self._async_context: AsyncContext = context
        self.runtime = context.async_runtime() or ThreadRuntime.shared()
        if self.max_in_flight is None:
            key = "async.max.in.flight"
            self.max_in_flight = int(context.app_config().get(key, default_of(key)))
        self._limit: int = self.max_in_flight
        self.node_name = context.node_name()
        self.rng = random.Random(zlib.crc32(f"{context.task_id()}/{self.node_name}".encode()))

    def process(self, record: Record) -> None:
        while len(self.stations) >= self._limit:  # all stations taken: wait
            self._wait_and_retire()
        fn, arg = self._fn_and_arg(record)
        fut = self.runtime.submit(fn, arg, self.retry, self.timeout_s, self.rng)
        raw = self._async_context.input_record()
        self.stations.append(_Station(record, fut, raw, record.key))
        self.metrics["in_flight"] = len(self.stations)
        self.metrics["in_flight_peak"] = max(self.metrics["in_flight_peak"], len(self.stations))
        self.retire_finished()

    def _wait_and_retire(self) -> None:
        waiting = [self.stations[0].future] if self.ordering == "partition" else [
            s.future for s in self.stations]
        if isinstance(self.runtime, InlineRuntime):
            self.runtime.complete(waiting[0])
        else:
            concurrent.futures.wait(waiting, return_when=concurrent.futures.FIRST_COMPLETED)
        self.retire_finished()

    def retire_finished(self) -> None:
        """Forward every result that is done and has no unfinished record before it (in the
        task, or of the same key)."""
        if self.ordering == "partition":
            while self.stations and self.stations[0].future.done():
                self._emit(self.stations.popleft())
        else:
            blocked, keep = set[Any](), deque[_Station]()
            for s in self.stations:
                if s.future.done() and s.key not in blocked:
                    self._emit(s)
                else:
                    blocked.add(s.key)
                    keep.append(s)
            self.stations = keep
        self.metrics["in_flight"] = len(self.stations)

    def complete_in_flight(self) -> None:
        """Finish every call in flight and forward the results (before a commit)."""
        while self.stations:
            self._wait_and_retire()

    def _emit(self, s: _Station) -> None:
        """Hand one finished record to :meth:`complete`, as if its input record were being
        processed (dead letters and errors name it)."""
        out: Outcome = s.future.result()
        self.metrics["retried"] += out.attempts - 1
        self.metrics["finished"] += 1
        self.metrics["total_latency_s"] += out.seconds
        with self._async_context.as_input(s.raw):
            if not out.ok:
                self._failed(s, out)
                return
            self.metrics["completed"] += 1
            self.complete(s.record, out.value)

    def _failed(self, s: _Station, out: Outcome) -> None:
        where = ("" if s.raw is None else
                 f" (input record topic {s.raw.topic!r}, partition {s.raw.partition}, offset "
                 f"{s.raw.offset})")
        assert out.error is not None
        if self.on_failure == "dead_letter" and self._async_context.dead_letter(
                s.raw, out.error, (("__streams.errors.attempts", str(out.attempts).encode()),
                                   ("__streams.errors.processor", self.node_name.encode()))):
            self.metrics["dead_lettered"] += 1
            return
        raise ProcessorError(
            f"task {self._async_context.task_id()}, async processor {self.node_name!r}: the "
            f"call failed after "
            f"{out.attempts} attempt(s){where}: {type(out.error).__name__}: {out.error}"
            + ("" if self.on_failure == "fail" else "; set errors.dead.letter.queue.topic.name "
               "to dead-letter such records")) from out.error


def check_async_options(max_in_flight: int | None, ordering: str, on_failure: str) -> None:
    """Raise a TopologyError naming a bad async-step option."""
    if ordering not in ("partition", "key"):
        raise TopologyError(f"ordering must be 'partition' or 'key', got {ordering!r}")
    if on_failure not in ("fail", "dead_letter"):
        raise TopologyError(f"on_failure must be 'fail' or 'dead_letter', got {on_failure!r}")
    if max_in_flight is not None and max_in_flight < 1:
        raise TopologyError(f"max_in_flight must be >= 1, got {max_in_flight}")


class AsyncStepProcessor(AsyncProcessor):
    """The DSL's async steps: ``kind`` "map_values" (forward the result as the value),
    "flat_map_values" (one record per result item) or "filter" (forward the record if the
    result is true); ``fn`` gets the record's value."""

    def __init__(self, fn: Callable[[Any], Any], kind: str, max_in_flight: int | None,
                 ordering: str, retry: RetryPolicy | None, timeout_ms: int | None,
                 on_failure: str):
        super().__init__(max_in_flight, ordering, retry, timeout_ms, on_failure)
        self.fn, self.kind = fn, kind

    def _fn_and_arg(self, record: Record) -> tuple[Callable[[Any], Any], Any]:
        return self.fn, record.value

    def complete(self, record: Record, result: Any) -> None:
        if self.kind == "map_values":
            self.context.forward(record.with_value(result))
        elif self.kind == "filter":
            if result:
                self.context.forward(record)
        else:
            for item in result or ():
                self.context.forward(record.with_value(item))
