"""The driver's sum of the task reports (``_host/metrics.ReportedTotals``): what each
committed task batch sent through the control topic, added up once, readable after the run
ended. The reports' way through a real broker: every micro-batch integration test."""

from kspark._control.messages import Stop, TaskReport, ThreadReport
from kspark._host.metrics import ReportedTotals, TaskMetrics


class _Reader:
    """The control topic's messages, handed out once each, as ``ControlReader.read``."""

    def __init__(self, *batches):
        self.batches, self.closed = list(batches), False

    def read(self):
        return self.batches.pop(0) if self.batches else []

    def close(self):
        self.closed = True


def _report(task, **counts):
    return TaskReport(task, 1, TaskMetrics(**counts).to_dict())


def test_every_report_counts_once_and_where_a_task_committed_last_wins():
    reader = _Reader([_report("0_0", records_in=3, commits=1, where={"0_0": "a:/s"})],
                     [_report("0_0", records_in=2, commits=1, where={"0_0": "b:/s"}),
                      Stop("rt-0"), ThreadReport(run="rt-0", records_in=99),  # not counted
                      _report("0_1", records_in=5, commits=1)])
    totals = ReportedTotals(reader)
    assert totals.value().records_in == 3
    now = totals.value()
    assert (now.records_in, now.commits, now.where) == (10, 3, {"0_0": "b:/s"})
    assert totals.value().records_in == 10  # nothing new: nothing added


def test_closing_reads_what_is_left_and_the_totals_stay_readable():
    reader = _Reader([_report("0_0", records_in=4)])
    totals = ReportedTotals(reader)
    totals.close()
    assert reader.closed and totals.value().records_in == 4
    totals.close()  # twice: nothing more to do
