"""The real-time driver's sum of its threads' reports (``_spark/realtime/thread_metrics.py``)
and the one progress shape (``_host/progress.py``): no broker, no Spark."""

from kspark._host.metrics import TaskMetrics
from kspark._host.progress import PROGRESS_KEYS, progress_of
from kspark._spark.realtime.thread_metrics import LiveTotals, ThreadMeter


def _report(thread, records_in, committed_in):
    meter = ThreadMeter(thread, every_s=1.0, now=0.0)
    committed = {"records_in": committed_in, "records_out": committed_in,
                 "changelog_records": 0, "commits": 1, "restored_records": 0,
                 "task_restores": 0, "task_moves": 0}
    return meter.report(records_in, records_in, 1, {}, now=1.0, committed=committed)


def test_a_lost_epoch_counts_what_its_threads_last_reported_as_committed():
    totals = LiveTotals()
    totals.add_report("run-1", _report(0, records_in=500, committed_in=400))
    totals.add_report("run-1", _report(1, records_in=300, committed_in=300))
    totals.end_epoch("run-1", [])  # the epoch was lost: its threads returned nothing
    progress = totals.progress()
    # what was committed is counted; what was processed after the last commit will be
    # processed again by the next epoch, and counted then
    assert (progress["records_in"], progress["commits"]) == (700, 2)


def test_a_finished_epoch_counts_its_threads_final_rows_not_their_reports():
    totals = LiveTotals()
    totals.add_report("run-1", _report(0, records_in=500, committed_in=400))
    totals.end_epoch("run-1", [{"records_in": 600, "records_out": 590, "commits": 3}])
    assert totals.progress()["records_in"] == 600


def test_progress_has_one_shape_whatever_is_counted():
    assert list(progress_of(0, 0, 0, TaskMetrics())) == list(PROGRESS_KEYS)
    assert list(progress_of(3, 9, 1, {"records_in": 9, "lag": 99})) == list(PROGRESS_KEYS)
