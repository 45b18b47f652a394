"""Micro-batch mode's looped topics (a cycle's back edge, ``QueryPlan.looped``): the source
reads them to their end in every micro-batch, an incremental batch run's too, and a batch
run is finished only once they are read to their end. No Spark job, no broker."""

from __future__ import annotations

import pytest

from kspark._plan.options import SourceOptions
from kspark.errors import StreamsError

LOOPED = "app-X-SUBSCRIPTION-REGISTRATION-0000000006-topic"


class FakeAdmin:
    """The source's and the batch run's admin: partition counts and read_committed ends."""

    def __init__(self, ends):
        self.ends = ends  # {(topic, partition): end}

    def check_topics(self, topics, sinks):
        return {t: 1 + max(p for (tt, p) in self.ends if tt == t) for t in topics}

    def end_offsets(self, tps, earliest=False):
        return {tp: 0 if earliest else self.ends[tp] for tp in tps}


def _reader(admin, stop):
    from kspark._kafka.settings import ClientSettings
    from kspark._spark.source import KafkaStreamReader

    options = SourceOptions(("right", LOOPED), "kafka:9092", 1000, 3000, 6000,
                            resets={LOOPED: "earliest"}, stop=stop, emit="ranges",
                            looped=(LOOPED,))
    reader = KafkaStreamReader(options, ClientSettings("kafka:9092"))
    reader._admin_client = admin
    return reader


def test_an_incremental_batch_run_reads_the_looped_topic_to_its_end_at_every_batch():
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    admin = FakeAdmin({("right", 0): 7, (LOOPED, 0): 3})
    reader = _reader(admin, {"right": {"0": 5}})
    reader.prepareForTriggerAvailableNow()
    start = {"right": {"0": 0}, LOOPED: {"0": 0}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"right": {"0": 5}, LOOPED: {"0": 3}}
    admin.ends[(LOOPED, 0)] = 9  # the run wrote more: the next batch reads it, the input stays
    assert reader.latestOffset(start, ReadAllAvailable()) == {"right": {"0": 5}, LOOPED: {"0": 9}}


class _Checkpoint:
    def __init__(self, reached):
        self.reached = reached

    def last_committed(self):
        return 4

    def offsets(self, batch):
        return self.reached

    def pinned_start(self):
        return {}


class _Meta:
    app_id, finished = "app", False

    def finish(self):
        self.finished = True


def test_a_batch_run_is_finished_only_once_its_looped_topics_are_read_to_their_end():
    from kspark._spark.batch_run import BatchRun

    admin = FakeAdmin({(LOOPED, 0): 12})
    meta = _Meta()
    run = BatchRun(meta, {("right", 0): 5}, False, admin, [(LOOPED, 0)])
    with pytest.raises(StreamsError, match=f"offset 10 of topic '{LOOPED}' partition 0, whose "
                                           "end is 12"):
        run.finish(_Checkpoint({"right": {"0": 5}, LOOPED: {"0": 10}}))
    assert not meta.finished
    run.finish(_Checkpoint({"right": {"0": 5}, LOOPED: {"0": 12}}))
    assert meta.finished


def test_the_looped_topics_are_purged_up_to_what_a_committed_micro_batch_read():
    purged = []

    class Admin(FakeAdmin):
        def delete_records(self, before):
            purged.append(dict(before))

    reader = _reader(Admin({("right", 0): 7, (LOOPED, 0): 3}), None)
    reader.commit({"right": {"0": 5}, LOOPED: {"0": 3}})
    reader.commit({"right": {"0": 7}, LOOPED: {"0": 3}})  # nothing new read: no request
    assert purged == [{(LOOPED, 0): 3}]
