"""``kspark reset`` on a real broker (and, where an application runs, real Spark): each flag,
the dry run, and the refusal while the application runs."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer

from kspark import KafkaStreams
from kspark._graph.resources import metadata_topic
from kspark._control.stop_offsets import StopOffsets
from kspark._cli.main import main
from tests.integration import eos_app, soak

pytestmark = pytest.mark.integration
KEYS = 20


def _reset(broker: str, app_id: str, *flags: str) -> int:
    return main(["reset", "--application-id", app_id, "--bootstrap-servers", broker, *flags])


def test_full_reset_refused_while_running_then_dry_run_then_reprocesses_from_scratch(
        broker, admin, spark, topic_name, tmp_path, capsys):
    src = topic_name("reset-full")
    admin.create_topics({src: 3, f"{src}-echo": 3, f"{src}-agg": 3})
    n = 1200
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"reset-full-{src}"
    state = tmp_path / "state"
    cfg = eos_app.config(broker, app_id, str(state), "exactly_once_v2", 1000)

    running = KafkaStreams(eos_app.topology(src), {**cfg, "autostop.at": "none"}, spark=spark)
    running.start()
    try:
        assert _reset(broker, app_id, "--state-dir", str(state)) == 2
        err = capsys.readouterr().err
        assert f"application {app_id!r} is running" in err and f"{app_id}-kspark-instance" in err
    finally:
        running.close()
    assert (state / app_id).exists()

    first = KafkaStreams(eos_app.topology(src), cfg, spark=spark)
    first.start()
    assert first.await_termination(300) and first.batch_finished()
    first.close()
    internal = sorted(t for t in admin.partition_counts() if t.startswith(f"{app_id}-"))
    assert set(internal) == {f"{app_id}-aggs-changelog", f"{app_id}-kspark-progress",
                             f"{app_id}-kspark-instance", metadata_topic(app_id),
                             f"{app_id}-kspark-control"}
    ends = admin.end_offsets([(src, p) for p in range(3)])
    assert admin.group_offsets(app_id).items() >= ends.items()

    assert _reset(broker, app_id, "--state-dir", str(state), "--dry-run") == 0
    out = capsys.readouterr().out
    for topic in internal:
        assert f"would delete internal topic {topic!r}" in out
    for p in range(3):
        assert f"would commit offset 0 for input topic {src!r} partition {p}" in out
    assert f"would delete local directory {state / app_id}" in out
    assert set(internal) <= set(admin.partition_counts()) and (state / app_id).exists()

    assert _reset(broker, app_id, "--state-dir", str(state)) == 0
    assert not set(internal) & set(admin.partition_counts())
    assert not (state / app_id).exists()
    assert admin.group_offsets(app_id) == {(src, p): 0 for p in range(3)}

    # The next start reprocesses everything from empty state: the aggregates start over.
    again = KafkaStreams(eos_app.topology(src), cfg, spark=spark)
    again.start()
    assert again.await_termination(300) and again.batch_finished()
    again.close()
    assert again.progress()["records_in"] == n
    final = {}
    for m in soak.read_all(broker, f"{src}-agg"):
        final[m.key().decode()] = json.loads(m.value())
    assert final == soak.expected_aggregates(n, KEYS)

    # Stopped, moved back 100 records a partition: the resumed application reads just those.
    ends = admin.end_offsets([(src, p) for p in range(3)])
    assert _reset(broker, app_id, "--state-dir", str(state), "--shift-by", "-100",
                  "--dry-run") == 0
    out = capsys.readouterr().out
    for p in range(3):
        assert (f"would commit offset {ends[(src, p)] - 100} for input topic {src!r} partition "
                f"{p} (committed now: {ends[(src, p)]}; --shift-by -100)") in out
    assert _reset(broker, app_id, "--state-dir", str(state), "--shift-by", "-100") == 0
    resumed = KafkaStreams(eos_app.topology(src), cfg, spark=spark)
    resumed.start()
    assert resumed.await_termination(300) and resumed.batch_finished()
    resumed.close()
    assert resumed.progress()["records_in"] == 300


def test_input_offsets_to_latest_to_offset_and_chosen_topics(broker, admin, topic_name, capsys):
    a, b = topic_name("reset-a"), topic_name("reset-b")
    admin.create_topics({a: 2, b: 1})
    soak.produce(broker, a, 0, 40, KEYS)
    soak.produce(broker, b, 0, 10, KEYS)
    app_id = f"reset-offsets-{a}"
    ends = admin.end_offsets([(a, 0), (a, 1), (b, 0)])
    admin.commit_group_offsets(app_id, {(a, 0): 3, (a, 1): 4, (b, 0): 5})

    assert _reset(broker, app_id, "--input-topics", a, "--to-latest") == 0
    assert admin.group_offsets(app_id) == {(a, 0): ends[(a, 0)], (a, 1): ends[(a, 1)]}
    assert _reset(broker, app_id, "--input-topics", f"{a},{b}", "--to-offset", "7") == 0
    assert admin.group_offsets(app_id) == {(a, 0): 7, (a, 1): 7, (b, 0): 7}
    assert _reset(broker, app_id, "--to-offset", "1000") == 0  # clamped to each log's end
    assert admin.group_offsets(app_id) == ends
    assert _reset(broker, app_id, "--input-topics", "no-such-topic") == 2
    assert "'no-such-topic' not found" in capsys.readouterr().err


def test_delete_stopoffsets_alone(broker, admin, topic_name, capsys):
    src = topic_name("reset-stop")
    admin.create_topics({src: 2})
    app_id = f"reset-stop-{src}"
    meta = StopOffsets(broker, app_id)
    meta.begin_run(meta.read(), {(src, 0): 12, (src, 1): 9})
    assert meta.read().resumable

    assert _reset(broker, app_id, "--delete-stopoffsets", "--dry-run") == 0
    assert ("would delete the stop offsets of the last batch run (3 record(s)"
            in capsys.readouterr().out)
    assert meta.read().resumable
    assert _reset(broker, app_id, "--delete-stopoffsets", "--to-latest") == 2
    assert "give it alone" in capsys.readouterr().err
    assert _reset(broker, app_id, "--delete-stopoffsets") == 0
    state = meta.read()
    assert (state.live_keys, state.completed, state.offsets) == (set(), False, {})
    assert metadata_topic(app_id) in admin.partition_counts()  # only the offsets went


def _first_at(records: list, partition: int, ts: int) -> int:
    return min(m.offset() for m in records if m.partition() == partition
               and m.timestamp()[1] >= ts)


def test_each_offset_option_dry_run_prints_the_plan_then_commits_it(
        broker, admin, topic_name, tmp_path, capsys):
    """One input topic reset again and again: old records (timestamps 1970-01-01T00:16:40
    + i ms) then 10 written now."""
    src = topic_name("reset-options")
    admin.create_topics({src: 2})
    soak.produce(broker, src, 0, 200, KEYS)
    p = Producer({"bootstrap.servers": broker})
    for i in range(10):
        p.produce(src, key=f"k{i}".encode(), value=b"now", partition=i % 2)
    assert p.flush(30) == 0
    app_id = f"reset-options-{src}"
    tps = [(src, 0), (src, 1)]
    ends = admin.end_offsets(tps)
    old = soak.read_all(broker, src)
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{src},0,7\n{src},1,9999\n")
    admin.commit_group_offsets(app_id, {tp: 20 for tp in tps})
    steps = [  # (flags, the offsets they give)
        (["--to-datetime", "1970-01-01T00:16:40.100Z"],
         {tp: _first_at(old, tp[1], 1_000_100) for tp in tps}),
        (["--to-datetime", "1970-01-01T01:16:40.150+01:00"],
         {tp: _first_at(old, tp[1], 1_000_150) for tp in tps}),
        (["--by-duration", "PT1H"], {tp: ends[tp] - 5 for tp in tps}),
        (["--shift-by", "-3"], {tp: ends[tp] - 8 for tp in tps}),
        (["--shift-by", "50"], ends),
        (["--from-file", str(plan)], {(src, 0): 7, (src, 1): ends[(src, 1)]}),
        (["--to-offset", "4"], {tp: 4 for tp in tps}),
    ]
    current = {tp: 20 for tp in tps}
    for flags, want in steps:
        assert _reset(broker, app_id, "--input-topics", src, *flags, "--dry-run") == 0
        out = capsys.readouterr().out
        for (t, part), o in want.items():
            assert (f"would commit offset {o} for input topic {t!r} partition {part} (committed "
                    f"now: {current[(t, part)]}; {' '.join(flags)}") in out, (flags, out)
        assert admin.group_offsets(app_id) == current
        assert _reset(broker, app_id, "--input-topics", src, *flags) == 0, flags
        assert admin.group_offsets(app_id) == want, flags
        current = want
    plan.write_text(f"{src},0,7\n")
    assert _reset(broker, app_id, "--input-topics", src, "--from-file", str(plan)) == 2
    assert f"has no line for input topic {src!r} partition 1" in capsys.readouterr().err


def _joined(broker: str, group: str, topic: str, client_id: str) -> Consumer:
    c = Consumer({"bootstrap.servers": broker, "group.id": group, "client.id": client_id,
                  "session.timeout.ms": 45000, "heartbeat.interval.ms": 1000})
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    assert c.assignment()
    return c


def test_internal_topics_subset_and_force_removes_a_stopped_member_not_a_live_one(
        broker, admin, topic_name, capsys):
    src = topic_name("reset-force")
    app_id = f"reset-force-{src}"
    changelog, repartition = f"{app_id}-counts-changelog", f"{app_id}-by-key-repartition"
    admin.create_topics({src: 1, changelog: 1, repartition: 1})
    soak.produce(broker, src, 0, 10, KEYS)
    admin.commit_group_offsets(app_id, {(src, 0): 10})

    assert _reset(broker, app_id, "--internal-topics", f"{changelog},{src}") == 2
    assert f"--internal-topics: {src!r} is not an internal topic" in capsys.readouterr().err

    stale = _joined(broker, app_id, src, "stale-member")  # joined, then hangs: never polled
    try:
        assert _reset(broker, app_id, "--internal-topics", changelog) == 2
        err = capsys.readouterr().err
        assert f"consumer group {app_id!r} is still active: stale-member (host" in err
        assert "--force" in err
        assert _reset(broker, app_id, "--internal-topics", changelog, "--force", "--dry-run") == 0
        out = capsys.readouterr().out
        assert "would remove member stale-member (host" in out
        assert f"would delete internal topic {changelog!r}" in out
        assert repartition not in out
        assert _reset(broker, app_id, "--internal-topics", changelog, "--force") == 0
        assert "remove member stale-member (host" in capsys.readouterr().out
    finally:
        stale.close()
    assert admin.group_members(app_id)[0] == []
    assert admin.group_offsets(app_id) == {(src, 0): 0}
    topics = admin.partition_counts()
    assert changelog not in topics and repartition in topics

    live = _joined(broker, app_id, src, "live-member")  # polls on: joins again when removed
    stop = threading.Event()
    polling = threading.Thread(target=lambda: [live.poll(0.1) for _ in iter(stop.is_set, True)])
    polling.start()
    try:
        assert _reset(broker, app_id, "--to-latest", "--force") == 2
        assert "live-member" in (err := capsys.readouterr().err) and "joined consumer group" in err
        assert "Nothing was reset" in err
        assert admin.group_offsets(app_id) == {(src, 0): 0}
    finally:
        stop.set()
        polling.join()
        live.close()
