"""Where async calls run (KIP-311): :class:`ThreadRuntime` (one event loop thread and a
thread pool per process) or the TopologyTestDriver's :class:`InlineRuntime` (on the task's
thread, with backoffs on the driver's mocked wall clock). Either retries a failing call per
its :class:`RetryPolicy` (exponential backoff with jitter) and reports an :class:`Outcome`.

Example:
    >>> p = RetryPolicy(max_attempts=4, initial_backoff_ms=100, max_backoff_ms=250, jitter=0)
    >>> [p.backoff_ms(n) for n in (1, 2, 3)]
    [100, 200, 250]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark.errors import TopologyError

__all__ = ["RetryPolicy", "Outcome", "ThreadRuntime", "InlineRuntime"]


@dataclass(frozen=True)
class RetryPolicy:
    """How a failing async call is retried: ``max_attempts`` in all (1: no retry); the wait
    before attempt n+1 is ``initial_backoff_ms * multiplier**(n-1)``, at most
    ``max_backoff_ms``, spread by ±``jitter`` (a fraction); only exceptions of the
    ``retry_on`` types are retried."""

    max_attempts: int = 3
    initial_backoff_ms: int = 100
    max_backoff_ms: int = 10_000
    multiplier: float = 2.0
    jitter: float = 0.2
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.initial_backoff_ms < 0 or self.max_backoff_ms < 0:
            raise TopologyError(f"invalid {self!r}: max_attempts must be >= 1 and backoffs >= 0")

    def backoff_ms(self, attempt: int, rng: random.Random | None = None) -> int:
        """The wait after failed attempt ``attempt`` (1-based)."""
        base = min(self.max_backoff_ms, self.initial_backoff_ms * self.multiplier ** (attempt - 1))
        if self.jitter and rng is not None:
            base *= 1 + rng.uniform(-self.jitter, self.jitter)
        return int(base)


@dataclass
class Outcome:
    """How a call ended: its result, or the last error; attempts made; seconds taken."""

    ok: bool
    value: Any
    error: BaseException | None
    attempts: int
    seconds: float
    waits_ms: tuple[int, ...] = ()  # the backoffs waited before each retry


def _attempts(fn: Callable[[Any], Any], arg: Any, policy: RetryPolicy, timeout_s: float | None,
              rng: random.Random, run_one: Callable, sleep: Callable) -> Any:
    """A coroutine running ``fn(arg)`` per ``policy`` (``run_one`` makes one attempt awaitable)."""
    async def go() -> Outcome:
        began, waits = time.monotonic(), list[int]()
        for attempt in range(1, policy.max_attempts + 1):
            try:
                call = run_one(fn, arg)
                value = await (asyncio.wait_for(call, timeout_s) if timeout_s else call)
                return Outcome(True, value, None, attempt, time.monotonic() - began, tuple(waits))
            except BaseException as e:  # noqa: BLE001 - every failure is reported or retried
                if isinstance(e, asyncio.TimeoutError):
                    e = TimeoutError(f"the call took longer than {timeout_s:g} s")
                if attempt == policy.max_attempts or not isinstance(e, policy.retry_on):
                    return Outcome(False, None, e, attempt, time.monotonic() - began, tuple(waits))
                wait = policy.backoff_ms(attempt, rng)
                waits.append(wait)
                await sleep(wait / 1000)
        raise AssertionError("unreachable")
    return go()


class ThreadRuntime:
    """Runs calls concurrently: one event loop thread per process, and a thread pool for
    blocking functions."""

    _lock = threading.Lock()
    _instance: "ThreadRuntime | None" = None

    def __init__(self, threads: int = 64):
        self.loop = asyncio.new_event_loop()
        self.pool = concurrent.futures.ThreadPoolExecutor(threads,
                                                          thread_name_prefix="kspark-async")
        threading.Thread(target=self.loop.run_forever, daemon=True,
                         name="kspark-async-loop").start()

    @classmethod
    def shared(cls) -> "ThreadRuntime":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _run_one(self, fn: Callable, arg: Any) -> Any:
        if inspect.iscoroutinefunction(fn):
            return fn(arg)
        return self.loop.run_in_executor(self.pool, fn, arg)

    def submit(self, fn: Callable, arg: Any, policy: RetryPolicy, timeout_s: float | None,
               rng: random.Random) -> concurrent.futures.Future:
        coro = _attempts(fn, arg, policy, timeout_s, rng, self._run_one, asyncio.sleep)
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


class _InlineCall(concurrent.futures.Future):
    """A call of the TopologyTestDriver's runtime: its attempts run when the test says."""

    def __init__(self, fn: Callable, arg: Any, policy: RetryPolicy, rng: random.Random):
        super().__init__()
        self.fn, self.arg, self.policy, self.rng = fn, arg, policy, rng
        self.attempt = 0
        self.due_ms: int | None = None  # a retry's due time on the fake clock (None: no retry due)
        self.waits: list[int] = []


class InlineRuntime:
    """The TopologyTestDriver's runtime: a call runs only when the test completes it, on the
    task's thread, and backoffs wait on the driver's mocked wall clock (``clock``), never on
    a real one.

    :meth:`complete` with ``wait=False`` runs a call's first attempt; a failed attempt with
    retries left is then due ``RetryPolicy.backoff_ms`` later on the fake clock, and
    :meth:`run_due` (the driver's ``advance_wall_clock_time``) runs the attempts due. With
    ``wait=True`` (a commit) every attempt runs at once and the waits are only recorded in
    the call's :class:`Outcome`."""

    def __init__(self, clock: Callable[[], int] | None = None) -> None:
        self.clock = clock or (lambda: 0)
        self.pending: list[_InlineCall] = []

    def submit(self, fn: Callable, arg: Any, policy: RetryPolicy, timeout_s: float | None,
               rng: random.Random) -> concurrent.futures.Future:
        call = _InlineCall(fn, arg, policy, rng)
        self.pending.append(call)
        return call

    def complete(self, fut: concurrent.futures.Future, wait: bool = True) -> None:
        """Run ``fut``'s attempts now: all of them (``wait``), or those due on the clock."""
        call: _InlineCall = fut  # type: ignore[assignment]
        while not call.done() and (wait or call.due_ms is None or call.due_ms <= self.clock()):
            self._attempt(call, wait)
            if not wait and call.due_ms is not None and call.due_ms > self.clock():
                return  # a retry waits for the fake clock

    def run_due(self) -> int:
        """Run the retries due on the clock (of calls already started); how many ran."""
        due = [c for c in self.pending if c.due_ms is not None and c.due_ms <= self.clock()]
        for call in due:
            self.complete(call, wait=False)
        return len(due)

    def _attempt(self, call: _InlineCall, wait: bool) -> None:
        call.attempt += 1
        try:
            value = asyncio.run(call.fn(call.arg)) if inspect.iscoroutinefunction(call.fn) \
                else call.fn(call.arg)
        except BaseException as e:  # noqa: BLE001 - every failure is reported or retried
            if call.attempt == call.policy.max_attempts or not isinstance(e, call.policy.retry_on):
                self._finish(call, Outcome(False, None, e, call.attempt, sum(call.waits) / 1000,
                                           tuple(call.waits)))
                return
            backoff = call.policy.backoff_ms(call.attempt, call.rng)
            call.waits.append(backoff)
            call.due_ms = self.clock() + backoff
            return
        self._finish(call, Outcome(True, value, None, call.attempt, sum(call.waits) / 1000,
                                   tuple(call.waits)))

    def _finish(self, call: _InlineCall, outcome: Outcome) -> None:
        self.pending.remove(call)
        call.due_ms = None
        call.set_result(outcome)
