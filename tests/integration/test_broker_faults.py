"""Kafka's own faults under a running application, in both execution modes: the single
broker SIGKILLed and restarted on its data directory (exactly-once), a broker outage longer
than ``task.timeout.ms``, and a rolling restart of a three-node cluster (both guarantees),
which moves every leader and coordinator off each node in turn. The output is read
with read_committed and checked record by record (``soak.verify``): no duplicate, nothing
lost, no wrong aggregate, no transaction left open; a fault the application cannot ride
through ends it with a clear error within ``task.timeout.ms`` plus 30 s, never a hang.

Each test prints how long processing paused (``-s`` shows it).
"""

from __future__ import annotations


import time

import pytest

from kspark._kafka.admin import Admin
from kspark._local.broker import LocalBroker, free_port
from tests.integration import soak
from tests.integration.faults import LeaderWatch, run_all_with_fault, run_with_fault
from tests.matrix import sampled_modes

RECORDS, KEYS = 20_000, 100
BOUNCE_RECORDS = 12_000  # 4 micro-batches of 3,000: the bounce falls after the first


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory):
    """A broker of this module's own, since its tests kill it (a 4 s broker session: a
    restarted broker registers again sooner, as in the cluster)."""
    b = LocalBroker(tmp_path_factory.mktemp("fault-broker"), port=free_port(),
                    overrides={"broker.session.timeout.ms": "4000",
                               "broker.heartbeat.interval.ms": "500"})
    b.start()
    try:
        yield b
    finally:
        b.stop()


def _app(bootstrap: str, name: str, tmp_path, mode: str, guarantee: str = "exactly_once_v2",
         *extra: str, records: int = RECORDS) -> tuple[list[str], str, str]:
    src, app_id = f"{name}-{mode}-{guarantee}", f"{name}-app-{mode}-{guarantee}"
    Admin(bootstrap, 20000).create_topics({src: 3, f"{src}-echo": 3, f"{src}-agg": 3})
    soak.produce(bootstrap, src, 0, records, KEYS)
    cmd = soak.app_command(bootstrap, src, app_id, str(tmp_path / "state"), "--mode", mode,
                           "--guarantee", guarantee, "--max-offsets", "3000", *extra)
    return cmd, src, app_id


def _exact(bootstrap: str, src: str, app_id: str, guarantee: str = "exactly_once_v2",
           records: int = RECORDS) -> None:
    f = soak.verify(bootstrap, src, app_id, records, KEYS)
    if guarantee == "exactly_once_v2":
        assert (f.duplicates, f.lost, f.wrong, f.open_transactions) == (0, 0, 0, 0), f.line(1)
    else:
        assert (f.lost, f.wrong, f.open_transactions) == (0, 0, 0), f.line(1)


def test_broker_sigkilled_and_restarted_under_exactly_once(own_broker, tmp_path):
    """The single broker SIGKILLed once output has started, started again 3 s later on its data
    directory and port, under an application of each execution mode at once (one bounce
    for both: the suite's time): each rides through and its output is exact."""
    own_broker.start()  # a no-op when it runs (the outage test leaves it down)
    modes = ("real_time", "micro_batch")
    apps = [_app(own_broker.bootstrap, "bounce", tmp_path / mode, mode, records=BOUNCE_RECORDS)
            for mode in modes]

    def bounce() -> None:
        own_broker.kill()
        time.sleep(3)  # the outage's length (and the restart's): what this test is about
        own_broker.start()

    runs = run_all_with_fault([cmd for cmd, _, _ in apps], bounce)
    for mode, run, (_, src, app_id) in zip(modes, runs, apps, strict=True):
        assert run.code == 0, f"the {mode} app did not finish (exit {run.code}):\n{run.text()}"
        print(f"\n{mode}: processing paused {run.pause_s():.1f} s (broker down "
              f"{run.fault_ended - run.fault_began:.1f} s, then {run.recovery_s():.1f} s)")
        _exact(own_broker.bootstrap, src, app_id, records=BOUNCE_RECORDS)


# Sampled for the suite's time (25 minutes): the default mode here; make soak-faults runs both
# (the full matrix).
@sampled_modes("real_time")
def test_outage_longer_than_task_timeout_fails_clearly(execution_mode, own_broker, tmp_path):
    """The broker down for longer than task.timeout.ms=5000: the application fails with a
    TaskTimeoutError naming the cluster and how long it waited, within 5 + 30 s."""
    own_broker.start()  # a no-op when it runs (an outage test leaves it down)
    cmd, _, _ = _app(own_broker.bootstrap, "outage", tmp_path, execution_mode, "exactly_once_v2",
                     "--task-timeout-ms", "5000")
    # left down: a test after this one that needs it starts it (the suite's time)
    run = run_with_fault(cmd, own_broker.kill, timeout_s=5 + 30 + 60)
    failed_after = run.lines[-1][0] - run.fault_began if run.lines else float("inf")
    assert run.code not in (None, 0), f"the app did not fail (exit {run.code}):\n{run.text()}"
    assert failed_after <= 5 + 30, f"failed only {failed_after:.0f} s after the outage began"
    text = run.text(200)
    assert "TaskTimeoutError" in text and own_broker.bootstrap in text, text
    assert "task.timeout.ms=5000" in text, text
    print(f"\n{execution_mode}: failed {failed_after:.1f} s after the broker went down")


@pytest.mark.full_matrix(reason="make soak-faults runs it; a broker SIGKILLed and restarted "
                         "runs always, in both modes")
@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_rolling_restart_of_a_three_broker_cluster(execution_mode, guarantee, broker_cluster,
                                                   tmp_path):
    """Each of three brokers restarted in turn (a clean stop, a start, the ISRs full again
    before the next), as an upgrade does, during a run: the output is as without it. The
    leaders of the input, output, changelog, repartition (real-time mode: micro-batch mode
    repartitions through a Spark exchange), offsets and transaction-state topics move off
    each stopping node (watched, not assumed), and so does the group coordinator; the
    transaction coordinators with their ``__transaction_state`` leaders."""
    cmd, src, app_id = _app(broker_cluster.bootstrap, "rolling", tmp_path, execution_mode,
                            guarantee)
    watch = LeaderWatch(broker_cluster.bootstrap)
    run = run_with_fault(cmd, lambda: broker_cluster.rolling_restart(log=lambda _: None,
                                                                     around=watch))
    assert run.code == 0, f"the app did not finish (exit {run.code}):\n{run.text()}"
    assert not watch.stuck, f"partitions left without another leader: {sorted(watch.stuck)}"
    moved_topics = {t for t, _ in watch.moved}
    kinds = [src, f"{src}-echo", f"{src}-agg", "__consumer_offsets"]
    if guarantee == "exactly_once_v2":
        kinds.append("__transaction_state")
    assert set(kinds) <= moved_topics, sorted(moved_topics)
    assert any(t.startswith(app_id) and t.endswith("-changelog") for t in moved_topics)
    if execution_mode == "real_time":  # micro-batch mode repartitions through a Spark exchange
        assert any(t.startswith(app_id) and t.endswith("-repartition") for t in moved_topics)
    assert watch.coordinator_moved(app_id)
    print(f"\n{execution_mode} {guarantee}: rolling restart took "
          f"{run.fault_ended - run.fault_began:.1f} s; "
          f"output paused {run.pause_s():.1f} s in all")
    _exact(broker_cluster.bootstrap, src, app_id, guarantee)
