"""The real-time driver's sum of its threads' reports (``_spark/realtime/thread_metrics.py``)
and the one progress shape (``_host/progress.py``): no broker, no Spark."""

from kspark._control.messages import ThreadReport
from kspark._host.metrics import TaskMetrics
from kspark._host.progress import PROGRESS_KEYS, progress_of
from kspark._spark.realtime.thread_metrics import LiveTotals, ThreadMeter


def _report(thread, records_in, committed_in):
    meter = ThreadMeter(thread, every_s=1.0, now=0.0, run="run-1")
    committed = {"records_in": committed_in, "records_out": committed_in,
                 "changelog_records": 0, "commits": 1, "restored_records": 0,
                 "task_restores": 0, "task_moves": 0}
    return meter.report(records_in, records_in, 1, {}, now=1.0, committed=committed)


def test_a_lost_epoch_counts_what_its_threads_last_reported_as_committed():
    totals = LiveTotals()
    totals.add_report(_report(0, records_in=500, committed_in=400))
    totals.add_report(_report(1, records_in=300, committed_in=300))
    totals.end_epoch("run-1", [])  # the epoch was lost: its threads returned nothing
    progress = totals.progress()
    # what was committed is counted; what was processed after the last commit will be
    # processed again by the next epoch, and counted then
    assert (progress["records_in"], progress["commits"]) == (700, 2)


def test_a_running_epoch_counts_its_changelog_records_and_restores_as_last_committed():
    totals = LiveTotals()
    report = _report(0, records_in=500, committed_in=400)
    report.committed.update(changelog_records=120, restored_records=80, task_restores=1,
                            task_moves=1)
    totals.add_report(report)  # no end: epochs have no scheduled end by default
    progress = totals.progress()
    assert (progress["changelog_records"], progress["restored_records"],
            progress["task_restores"], progress["task_moves"]) == (120, 80, 1, 1)


def test_a_finished_epoch_counts_its_threads_final_rows_not_their_reports():
    totals = LiveTotals()
    totals.add_report(_report(0, records_in=500, committed_in=400))
    totals.end_epoch("run-1", [{"records_in": 600, "records_out": 590, "commits": 3}])
    assert totals.progress()["records_in"] == 600


def test_progress_has_one_shape_whatever_is_counted():
    assert list(progress_of(0, 0, 0, TaskMetrics())) == list(PROGRESS_KEYS)
    assert list(progress_of(3, 9, 1, {"records_in": 9, "lag": 99})) == list(PROGRESS_KEYS)


def test_the_threads_changelogs_give_the_store_partition_lags():
    """all_local_store_partition_lags (issue 53): active tasks at their changelog's end, a
    standby copy where it is, for a partition no live thread holds active."""
    from kspark._host.lags import partition_lags
    from kspark._spark.realtime.thread_metrics import LiveTotals

    live = LiveTotals()
    live.add_report(ThreadReport(run="r", thread=0, changelogs={
        "active": ["app-c-changelog:0"], "standby": {"app-c-changelog:1": 7}}))
    live.add_report(ThreadReport(run="r", thread=1, changelogs={
        "active": ["app-c-changelog:1"], "standby": {"app-c-changelog:0": 3}}))
    live.add_report(ThreadReport(run="r", thread=2, changelogs={
        "active": [], "standby": {"app-c-changelog:2": 4, "app-c-changelog:0": 5}}))
    active, standby = live.changelogs()
    assert active == {("app-c-changelog", 0), ("app-c-changelog", 1)}
    assert standby[("app-c-changelog", 0)] == 5  # the most caught-up copy
    lags = partition_lags("app", {"c": 3}, active, standby, lambda tps: dict.fromkeys(tps, 10))
    assert {p: (i.current_offset_position, i.offset_lag) for p, i in lags["c"].items()} == {
        0: (10, 0), 1: (10, 0), 2: (4, 6)}
