"""Live metrics of real-time stream threads: what each thread reports, and the driver's sum.

A thread reports after a commit round, at most every commit interval and at least every
5 s (see :class:`ThreadMeter`), a ``ThreadReport`` (``_control/messages.py``) through the
control topic (``_control/reports.py``); the driver keeps each thread's latest report of
the running epoch and adds them to the totals of the finished epochs (:class:`LiveTotals`).

Example:
    >>> m = ThreadMeter(thread=0, every_s=1.0, now=0.0, run="run-1")
    >>> m.committed(0.004); m.committed(0.010)
    >>> r = m.report(records_in=500, records_out=480, commits=2,
    ...              lag={("in", 0): 3}, now=2.0)
    >>> r.process_rate, r.commit_latency_avg_ms, r.commit_latency_max_ms, r.lag
    (250.0, 7.0, 10.0, {'in:0': 3})
    >>> totals = LiveTotals()
    >>> totals.add_report(r)
    >>> totals.progress()["records_in"], totals.progress()["lag"]
    (500, 3)
    >>> totals.lag(), totals.thread_values()[0]["commit-total"]
    ({('in', 0): 3}, 2)
    >>> totals.end_epoch("run-1", [{"records_in": 600, "records_out": 590, "commits": 3}])
    >>> totals.progress()["records_in"], totals.progress()["commits"]
    (600, 3)
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from kspark._control.messages import ThreadReport
from kspark._engine.async_.metrics import async_metrics, merge_metrics, summarize_metrics
from kspark._engine.metrics.stats import merge_stats, split_key
from kspark._host.metrics import TaskMetrics
from kspark._engine.state.build import changelog_topic

__all__ = ["ThreadMeter", "LiveTotals", "ThreadReporter", "COUNTS", "changelog_positions"]

COUNTS = ("records_in", "records_out", "changelog_records", "commits")
# counted when an epoch ends: what opening its tasks cost (restores) and tasks that moved
EPOCH_COUNTS = ("restored_records", "task_restores", "task_moves")
LIVE_COUNTS = ("records_in", "records_out", "commits")  # the counts a report has live


class ThreadMeter:
    """One thread's meter over an epoch: commit latencies and the process rate since its
    last report; :meth:`due` tells when to report next. ``run``: the run of the thread's
    epoch, which its reports name."""

    def __init__(self, thread: int, every_s: float, now: float, run: str = ""):
        self.thread, self.every_s, self.run = thread, every_s, run
        self._last_at, self._last_in = now, 0
        self._commit_s: list[float] = []
        self._latency = (0.0, 0.0)  # avg and max of the last window with commits, in ms

    def committed(self, seconds: float) -> None:
        """A commit round that committed something took ``seconds``."""
        self._commit_s.append(seconds)

    def due(self, now: float) -> bool:
        return now - self._last_at >= self.every_s

    def report(self, records_in: int, records_out: int, commits: int,
               lag: dict[tuple[str, int], int], now: float,
               committed: dict[str, Any] | None = None) -> ThreadReport:
        """The report, and the start of the next window. ``committed``:
        the thread's counts of its commits so far (:data:`COUNTS` and :data:`EPOCH_COUNTS`),
        what the driver keeps of an epoch that is lost before it returns."""
        took = max(now - self._last_at, 1e-9)
        if self._commit_s:  # else the last window's figures stand
            latencies = self._commit_s
            self._latency = (round(1000 * sum(latencies) / len(latencies), 1),
                             round(1000 * max(latencies), 1))
        out = ThreadReport(
            run=self.run, thread=self.thread, records_in=records_in, records_out=records_out,
            commits=commits, process_rate=round((records_in - self._last_in) / took, 1),
            commit_latency_avg_ms=self._latency[0], commit_latency_max_ms=self._latency[1],
            lag={f"{t}:{p}": n for (t, p), n in sorted(lag.items())},
            committed=dict(committed or {}))
        self._last_at, self._last_in, self._commit_s = now, records_in, []
        return out


class LiveTotals:
    """The driver's view: finished epochs' counts plus the running epoch's latest reports."""

    def __init__(self) -> None:
        self.finished = dict.fromkeys(COUNTS, 0)
        self.live: dict[tuple[str, int], ThreadReport] = {}  # (run, thread) -> report
        self.ended: set[str] = set()
        self.tasks_kept = 0
        self.opened = dict.fromkeys(EPOCH_COUNTS, 0)
        self.finished_async: dict[str, dict[str, float]] = {}  # async steps' raw counters
        self.finished_streams: dict[str, list] = {}  # Kafka Streams' metrics' counts
        self.thread_of_task: dict[str, int] = {}  # the thread that last ran each task

    def add_report(self, report: ThreadReport) -> None:
        """The latest report of a thread of epoch ``report.run`` (ignored once the epoch
        ended). A report of a new attempt of the thread's epoch (Spark retried its task,
        lost with its executor) ends the attempt before: what it last reported as committed
        counts."""
        if report.run in self.ended:
            return
        key = (report.run, report.thread)
        before = self.live.get(key)
        if before is not None and before.attempt != report.attempt:
            self._add_rows([before.committed] if before.committed else [])
        self.live[key] = report

    def end_epoch(self, run: str, rows: list[dict[str, Any]]) -> None:
        """Epoch ``run`` returned ``rows`` (each thread's final counts, and how many of its
        tasks it kept from its previous epoch); a lost epoch returns none, and what its
        threads last reported as committed counts instead."""
        if not rows:
            rows = [r.committed for k, r in self.live.items() if k[0] == run and r.committed]
        self.ended.add(run)
        self.live = {k: v for k, v in self.live.items() if k[0] != run}
        self._add_rows(rows)

    def _add_rows(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            for k in COUNTS:
                self.finished[k] += int(row.get(k, 0))
            self.tasks_kept += int(row.get("tasks_kept", 0))
            for k in EPOCH_COUNTS:
                self.opened[k] += int(row.get(k, 0))
            merge_metrics(self.finished_async, row.get("async", {}))
            merge_stats(self.finished_streams, row.get("streams", {}))

    def progress(self) -> dict[str, int]:
        """Counts so far (live), the input lag the threads last saw, the tasks that
        finished epochs kept open from the epoch before, and what opening the tasks of
        finished epochs cost: records restored, tasks that restored any, tasks that moved."""
        live = list(self.live.values())

        def now(r: ThreadReport, k: str) -> int:  # a count not reported live: as committed
            return int(getattr(r, k) if k in LIVE_COUNTS else r.committed.get(k, 0))

        out = {k: self.finished[k] + sum(now(r, k) for r in live) for k in COUNTS}
        out["lag"] = sum(int(n) for r in live for n in r.lag.values())
        out["tasks_kept"] = self.tasks_kept
        out.update({k: self.opened[k] + sum(now(r, k) for r in live) for k in EPOCH_COUNTS})
        return out

    def streams_stats(self) -> dict[str, list]:
        """Kafka Streams' metrics' counts: the finished epochs' and the running one's
        threads' latest (what they committed), and which thread ran each task last."""
        out: dict[str, list] = {}
        merge_stats(out, self.finished_streams)
        for (_, thread), r in sorted(self.live.items(), key=lambda kv: kv[0][1]):
            stats = r.committed.get("streams", {})
            merge_stats(out, stats)
            for key in stats:
                self.thread_of_task[split_key(key)[1]] = thread
        return out

    def changelogs(self) -> tuple[set[tuple[str, int]], dict[tuple[str, int], int]]:
        """The changelog partitions of the live threads' active tasks, and of their standby
        copies the offset each holds (the most caught-up copy's, where several are kept):
        ``KafkaStreams.all_local_store_partition_lags()`` (``_host/lags.py``)."""
        active: set[tuple[str, int]] = set()
        standby: dict[tuple[str, int], int] = {}
        for r in self.live.values():
            held = r.changelogs
            active.update(_tp(tp) for tp in held.get("active", ()))
            for tp, offset in (held.get("standby") or {}).items():
                standby[_tp(tp)] = max(int(offset), standby.get(_tp(tp), 0))
        return active, standby

    def thread_values(self) -> dict[int, dict[str, float]]:
        """Each live thread's figures by Java's thread-metric names."""
        out = {}
        for (_, thread), r in sorted(self.live.items(), key=lambda kv: kv[0][1]):
            out[thread] = {"process-total": r.records_in, "process-rate": r.process_rate,
                           "commit-total": r.commits,
                           "commit-latency-avg": r.commit_latency_avg_ms,
                           "commit-latency-max": r.commit_latency_max_ms}
        return out

    def lag(self) -> dict[tuple[str, int], int]:
        """Each input partition's lag, as the threads last saw it."""
        out = {}
        for r in self.live.values():
            for tp, n in r.lag.items():
                topic, _, p = tp.rpartition(":")
                out[(topic, int(p))] = int(n)
        return out

    def async_summary(self) -> dict[str, dict[str, float]]:
        """The async steps (KIP-311) as the micro-batch mode reports them: the finished
        epochs' counters and the running one's, with the calls in flight now."""
        raw = merge_metrics({}, self.finished_async)
        in_flight: dict[str, float] = {}  # now: the sum of the threads' latest reports
        for r in self.live.values():
            merge_metrics(raw, r.async_)
            for name, m in r.async_.items():
                in_flight[name] = in_flight.get(name, 0) + m["in_flight"]
        for name, m in raw.items():
            m["in_flight"] = in_flight.get(name, 0)
        return summarize_metrics(raw)


def _tp(text: str) -> tuple[str, int]:
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)


def changelog_positions(tasks: Any, standbys: Any) -> dict[str, Any]:
    """What a thread holds of its changelogs, for a report: its active tasks' changelog
    partitions (``topic:partition``), and per partition of its standby copies the offset
    the copy holds (0 before its first update)."""
    active = sorted({f"{t}:{p}" for h in tasks if h.task is not None
                     for t, p in (h.host.changelog_offsets or {})})
    standby = {}
    for copy in (standbys.copies if standbys is not None else ()):
        partition = int(copy.task_id.rsplit("_", 1)[1])
        position = dict(copy.position)  # replaced whole by the copy's updates
        for store in copy.builders:
            tp = (changelog_topic(copy.ctx.app_id, store), partition)
            standby[f"{tp[0]}:{tp[1]}"] = int(position.get(tp, 0))
    return {"active": active, "standby": standby}


class ThreadReporter:
    """Sends a thread's live metrics (a :class:`ThreadMeter` report) through ``sender`` (a
    ``_control/reports.ReportSender`` that does not wait)
    every commit interval, at least every 5 s, and when the thread ends; sums its tasks'
    commits (``TaskMetrics``) for the epoch's final row."""

    def __init__(self, index: int, epoch: Any, sender: Any, attempt: str = ""):
        self.sender, self.attempt = sender, attempt
        self.standbys: Any = None  # the thread's StandbyUpdater (its copies' lags, counts)
        self.meter = ThreadMeter(index, min(epoch.interval_ms / 1000, 5.0), time.monotonic(),
                                 epoch.run)
        self.async_raw: dict[str, dict[str, float]] = {}  # the epoch's async counters
        self.committed = TaskMetrics()  # the thread's commits' counts

    def watch_standbys(self, updater: Any) -> None:
        """Report ``updater``'s copies from now on (the counts of the one before kept)."""
        if self.standbys is not None:
            merge_stats(self.committed.streams, self.standbys.take_stats())
        self.standbys = updater

    def add(self, done: TaskMetrics) -> None:
        """A task committed ``done`` (its async counters join the live ones)."""
        merge_metrics(self.async_raw, done.async_)
        done.async_ = {}
        self.committed.add(done)

    def counts(self) -> dict[str, Any]:
        """The thread's counts of its commits (see ``thread_metrics.COUNTS``)."""
        c = self.committed
        return {"records_in": c.records_in, "records_out": c.records_out,
                "changelog_records": c.changelog_records, "commits": c.commits,
                "restored_records": c.restored_records, "task_restores": c.restores,
                "task_moves": c.moves, "streams": c.streams}

    def maybe_report(self, loop: Any, last: bool) -> None:
        now = time.monotonic()
        if not (last or self.meter.due(now)):
            return
        if self.standbys is not None:
            merge_stats(self.committed.streams, self.standbys.take_stats())
        tasks = loop.tasks.values()
        in_flight: dict[str, float] = {}  # now, not the epoch's peak
        for t in tasks:
            if t.task is not None and t.task.async_nodes:
                taken = async_metrics(t.task, take=True)
                merge_metrics(self.async_raw, taken)
                for name, m in taken.items():
                    in_flight[name] = in_flight.get(name, 0) + m["in_flight"]
        for name, n in in_flight.items():
            self.async_raw[name]["in_flight"] = n
        report = self.meter.report(
            sum(t.read for t in tasks), sum(t.collector.sent - t.collector.logged for t in tasks),
            sum(t.commits for t in tasks), loop.lag(), now, self.counts())
        self.sender.send(replace(
            report, async_=self.async_raw, attempt=self.attempt,
            standby=dict(self.standbys.lags if self.standbys else {}),
            active=tuple(sorted(s.task_id for s in loop.tasks)),
            changelogs=changelog_positions(tasks, self.standbys)))
