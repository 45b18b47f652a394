"""No silent corruption: one active instance per application, lost changelogs detected,
start-up checks (dead-letter topic, record sizes)."""

from __future__ import annotations


import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from tests.integration.soak import read_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
KEYS = 50


def _produce(broker: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": broker, "partitioner": "murmur2_random", "linger.ms": 20})
    for i in range(n):
        p.produce(topic, key=f"k{i % KEYS}".encode(), value=b"x", timestamp=1000 + i)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def _count(src: str, dst: str):
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .count().to_stream().to(dst, key_serde=S, value_serde=L))
    return b.build()


@pytest.mark.full_matrix(reason="test_real_time.py's passthrough test refuses a second "
                         "instance of a running application")
def test_a_second_instance_of_a_running_application_is_refused(broker, admin, spark, topic_name,
                                                               app_config, tmp_path):
    from kspark.errors import InstanceAlreadyRunningError

    src, dst = topic_name("twice-in"), topic_name("twice-out")
    admin.create_topics({src: 3, dst: 3})
    first_cfg = app_config(autostop_at="none")
    second_cfg = {**first_cfg, "state.dir": str(tmp_path / "other-host")}
    first = KafkaStreams(_count(src, dst), first_cfg, spark=spark)
    first.start()
    try:
        with pytest.raises(InstanceAlreadyRunningError,
                           match=rf"{first_cfg['application.id']}.*already running"
                                 r".*kspark-instance@"):
            KafkaStreams(_count(src, dst), second_cfg, spark=spark).start()
    finally:
        first.close()
    again = KafkaStreams(_count(src, dst), {**second_cfg, "autostop.at": "eol"}, spark=spark)
    again.start()  # once the first has closed, an instance may start at once
    assert again.await_termination(120)
    again.close()


def test_a_missing_dead_letter_topic_is_found_at_start(admin, topic_name, app_config):
    from kspark.errors import MissingSinkTopicError

    src, dst = topic_name("dlq-in"), topic_name("dlq-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config(errors_dead_letter_queue_topic_name=topic_name("no-such-dlq"))
    with pytest.raises(MissingSinkTopicError, match="no-such-dlq"):
        KafkaStreams(_count(src, dst), cfg).start()


def test_records_as_large_as_the_topics_allow_are_written(broker, admin, spark, topic_name,
                                                         app_config):
    src, dst = topic_name("big-in"), topic_name("big-out")
    big = {"max.message.bytes": str(10 * 1024 * 1024)}
    admin.create_topics({src: 1, dst: 1}, big)
    p = Producer({"bootstrap.servers": broker, "message.max.bytes": 11 * 1024 * 1024})
    p.produce(src, key=b"k", value=b"v" * (5 * 1024 * 1024))
    assert p.flush(30) == 0
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=Serdes.ByteArray()).to(
        dst, key_serde=S, value_serde=Serdes.ByteArray())
    streams = KafkaStreams(b.build(), app_config(consumer_fetch_max_bytes=52428800), spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    (m,) = read_all(broker, dst)
    assert len(m.value()) == 5 * 1024 * 1024


def test_a_deleted_or_recreated_changelog_is_an_error_and_can_be_rebuilt(
        broker, admin, spark, topic_name, app_config):
    from kspark._cli.main import main
    from kspark.errors import ChangelogLostError, StreamsError

    src, dst = topic_name("cl-in"), topic_name("cl-out")
    admin.create_topics({src: 3, dst: 3})
    cfg = app_config()

    def run():
        streams = KafkaStreams(_count(src, dst), cfg, spark=spark)
        streams.start()
        assert streams.await_termination(300)
        streams.close()

    _produce(broker, src, 30_000)
    run()
    changelogs = [t for t in admin.partition_counts() if t.startswith(cfg["application.id"])
                  and t.endswith("-changelog")]
    assert len(changelogs) == 1
    store = changelogs[0][len(cfg["application.id"]) + 1:-len("-changelog")]
    admin.delete_topics(changelogs)
    _produce(broker, src, 30_000)
    with pytest.raises(ChangelogLostError, match=rf"{changelogs[0]}.*does not exist.*rebuild"):
        KafkaStreams(_count(src, dst), cfg, spark=spark).start()

    # Created again (by hand, with records of its own): found when a task restores.
    admin.create_topics({changelogs[0]: 3}, {"cleanup.policy": "compact"})
    junk = Producer({"bootstrap.servers": broker})
    for p in range(3):
        for i in range(300):
            junk.produce(changelogs[0], key=f"junk{i}".encode(), value=b"\0" * 8, partition=p)
    assert junk.flush(30) == 0
    with pytest.raises(StreamsError, match=rf"{changelogs[0]}' was deleted and created again"):
        run()

    # The documented way out: rebuild the changelog from the local state, then go on.
    admin.delete_topics(changelogs)
    args = ["changelog", "rebuild", "--bootstrap-servers", broker, "--application-id",
            cfg["application.id"], "--state-dir", cfg["state.dir"], "--store", store,
            "--partitions", "3"]
    assert main(args) == 0
    run()
    assert _final_counts(broker, dst) == {f"k{i}": 1200 for i in range(KEYS)}


def _run(src: str, dst: str, cfg: dict, spark) -> None:
    streams = KafkaStreams(_count(src, dst), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()


def _final_counts(broker: str, topic: str) -> dict[str, int]:
    latest = {}
    for m in read_all(broker, topic):
        latest[m.key().decode()] = L.deserialize(topic, m.value())
    return latest


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_a_lost_state_dir_resumes_from_the_groups_offsets(broker, admin, spark, topic_name,
                                                          app_config, guarantee):
    """Case 2: the Spark checkpoint went with the state directory; the group's offsets
    remain, so the second run counts only the new records (on top of the restored counts)."""
    import shutil

    src, dst = topic_name("lost-in"), topic_name("lost-out")
    admin.create_topics({src: 3, dst: 3})
    cfg = app_config(processing_guarantee=guarantee)
    _produce(broker, src, 30_000)
    _run(src, dst, cfg, spark)
    assert set(_final_counts(broker, dst).values()) == {600}
    shutil.rmtree(cfg["state.dir"])
    _produce(broker, src, 30_000)
    _run(src, dst, cfg, spark)
    assert _final_counts(broker, dst) == {f"k{i}": 1200 for i in range(KEYS)}


def test_a_checkpoint_older_than_the_groups_offsets_is_refused(broker, admin, spark, topic_name,
                                                              app_config, tmp_path):
    """A restored old copy of the Spark checkpoint (here at a configured location) would
    process records again: it is refused, naming topic, partition and both offsets."""
    import shutil

    from kspark.errors import ProgressMismatchError

    src, dst = topic_name("old-in"), topic_name("old-out")
    admin.create_topics({src: 1, dst: 1})
    location = tmp_path / "elsewhere" / "checkpoint"
    cfg = app_config(checkpoint_location=str(location))
    _produce(broker, src, 1000)
    _run(src, dst, cfg, spark)
    assert (location / "commits").is_dir()  # the checkpoint went where it was told
    shutil.copytree(location, tmp_path / "copy")
    _produce(broker, src, 1000)
    _run(src, dst, cfg, spark)
    shutil.rmtree(location)
    shutil.copytree(tmp_path / "copy", location)
    _produce(broker, src, 1000)
    with pytest.raises(ProgressMismatchError,
                       match=rf"{src}' partition 0: the group has committed offset 2000, but "
                             r"the checkpoint's last batch ends at 1000.*delete the checkpoint"):
        KafkaStreams(_count(src, dst), cfg, spark=spark).start()
    shutil.rmtree(location)  # the documented way out: the group's offsets win
    _run(src, dst, cfg, spark)
    assert _final_counts(broker, dst) == {f"k{i}": 60 for i in range(KEYS)}


def test_a_deleted_group_is_reported_not_silently_ignored(broker, admin, spark, topic_name,
                                                         app_config):
    from confluent_kafka.admin import AdminClient

    from kspark.errors import ProgressMismatchError

    src, dst = topic_name("nogroup-in"), topic_name("nogroup-out")
    admin.create_topics({src: 1, dst: 1})
    cfg = app_config()
    _produce(broker, src, 500)
    _run(src, dst, cfg, spark)
    client = AdminClient({"bootstrap.servers": broker})  # kept: its futures need it alive
    for f in client.delete_consumer_groups([cfg["application.id"]], request_timeout=30).values():
        f.result(timeout=60)
    with pytest.raises(ProgressMismatchError, match=r"processed up to offset 500, but the "
                                                    r"group has no committed offset.*deleted"):
        KafkaStreams(_count(src, dst), cfg, spark=spark).start()


def test_two_instances_started_at_once_never_both_run(broker, admin, spark, topic_name,
                                                      app_config, tmp_path):
    """Case 1 as reported: two starts at the same moment with different state.dirs. Each is
    refused while the other runs (or waits out the other's run: a start waits up to 26 s for
    a member to leave, and then resumes from the group's offsets); the counts are exact."""
    import threading

    from kspark.errors import InstanceAlreadyRunningError

    src, dst = topic_name("race-in"), topic_name("race-out")
    admin.create_topics({src: 3, dst: 3})
    _produce(broker, src, 6000)
    cfg = app_config()
    configs = [cfg, {**cfg, "state.dir": str(tmp_path / "second-host")}]
    gate, outcomes = threading.Barrier(2), [None, None]

    def start(i):
        streams = KafkaStreams(_count(src, dst), configs[i], spark=spark)
        gate.wait()
        try:
            streams.start()
        except InstanceAlreadyRunningError as e:
            outcomes[i] = e
            return
        assert streams.await_termination(300)
        streams.close()
        outcomes[i] = "ran"

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(400)
    assert all(o == "ran" or isinstance(o, InstanceAlreadyRunningError) for o in outcomes), outcomes
    refused = [o for o in outcomes if o != "ran"]
    assert all("already running" in str(o) and "kspark-instance@" in str(o) for o in refused)
    if "ran" not in outcomes:
        _run(src, dst, cfg, spark)  # both refused: a later start runs alone
    assert _final_counts(broker, dst) == {f"k{i}": 120 for i in range(KEYS)}


def test_a_record_too_large_for_the_producer_fails_naming_topic_partition_size_and_setting(
        broker, admin, spark, topic_name, app_config):
    """Case 5, failing path: the error names what to change; with
    production.exception.handler=log_and_continue the record is skipped and its input
    record dead-lettered instead."""
    from kspark.errors import StreamsError

    src, dst, dlq = topic_name("huge-in"), topic_name("huge-out"), topic_name("huge-dlq")
    dst2 = topic_name("huge-out")  # the failed at-least-once run's partial output stays in dst
    admin.create_topics({src: 1, dst: 1, dst2: 1, dlq: 1})
    p = Producer({"bootstrap.servers": broker})
    for key, size in (("a", 10), ("big", 600_000), ("c", 10)):
        p.produce(src, key=key.encode(), value=b"v" * size)
    assert p.flush(30) == 0

    def doubled(out):  # the output of "big" (1.2 MB) exceeds the 1 MB the topics allow
        b = StreamsBuilder()
        (b.stream(src, key_serde=S, value_serde=Serdes.ByteArray())
          .map_values(lambda v: v * 2).to(out, key_serde=S, value_serde=Serdes.ByteArray()))
        return b.build()

    streams = KafkaStreams(doubled(dst), app_config(), spark=spark)
    streams.start()
    with pytest.raises(StreamsError, match=rf"SinkWriteError: sink 'KSTREAM-SINK-\d+' in task 0_0: "
                                           rf"producer .*cannot write a record of 1200003 "
                                           rf"bytes to topic '{dst}' partition 0: .*Raise "
                                           r"producer.message.max.bytes"):
        streams.await_termination(300)
    streams.close()

    cfg = app_config(production_exception_handler="log_and_continue",
                     errors_dead_letter_queue_topic_name=dlq)
    streams = KafkaStreams(doubled(dst2), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(300)
    streams.close()
    assert [(m.key(), len(m.value())) for m in read_all(broker, dst2)] == [(b"a", 20), (b"c", 20)]
    (dead,) = read_all(broker, dlq)
    assert (dead.key(), len(dead.value())) == (b"big", 600_000)
    headers = dict(dead.headers())
    assert headers["__streams.errors.exception"] == b"kspark.errors.SinkWriteError"
    assert headers["__streams.errors.topic"] == src.encode()


def test_a_changelog_whose_partition_count_changed_is_refused_at_start(broker, admin, spark,
                                                                       topic_name, app_config):
    from confluent_kafka.admin import AdminClient, NewPartitions

    from kspark.errors import TopologyError

    src, dst = topic_name("grown-in"), topic_name("grown-out")
    admin.create_topics({src: 2, dst: 2})
    cfg = app_config()
    _produce(broker, src, 200)
    _run(src, dst, cfg, spark)
    (changelog,) = [t for t in admin.partition_counts() if t.startswith(cfg["application.id"])
                    and t.endswith("-changelog")]
    client = AdminClient({"bootstrap.servers": broker})
    for f in client.create_partitions([NewPartitions(changelog, 3)]).values():
        f.result(timeout=60)
    with pytest.raises(TopologyError, match=rf"{changelog}' has 3 partitions but there are 2"):
        KafkaStreams(_count(src, dst), cfg, spark=spark).start()
