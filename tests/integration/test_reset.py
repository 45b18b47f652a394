"""``kspark reset`` on a real broker (and, where an application runs, real Spark): each flag,
the dry run, and the refusal while the application runs."""

from __future__ import annotations

import json

import pytest

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
