"""An application switches between execution modes without ``kspark reset``: both modes
keep their progress in the consumer group (offsets) and the tasks' markers, so a run in one
mode goes on exactly where the run in the other left off; ``progress()`` and ``metrics()``
have one shape in both. Real-time mode deletes the
micro-batch mode's Spark checkpoint when it starts (it would be stale after its first
commit), so a later micro-batch run resumes from the group."""

from __future__ import annotations

import collections
import os

import pytest

from kspark import KafkaStreams
from kspark._host.progress import PROGRESS_KEYS
from tests.conftest import consume_all
from tests.integration.test_real_time import L, _count_topology, _latest, _produce

pytestmark = pytest.mark.integration


def test_micro_batch_then_real_time_then_micro_batch_counts_exactly_once(
        broker, spark, admin, topic_name, app_config):
    src, dst = topic_name("switch-in"), topic_name("switch-out")
    admin.create_topics({src: 2, dst: 2})
    cfg = app_config(processing_guarantee="exactly_once_v2", statestore_cache_max_bytes=0)
    checkpoint = os.path.join(cfg["state.dir"], cfg["application.id"], "checkpoint")
    sent: list = []
    for i, mode in enumerate(("micro_batch", "real_time", "micro_batch")):
        batch = [(f"k{j % 5}", f"v{j}", 1000 * (i + 1) + j) for j in range(40)]
        _produce(broker, src, batch)
        sent += batch
        streams = KafkaStreams(_count_topology(src, dst),
                               {**cfg, "execution.mode": mode}, spark=spark)
        streams.start()  # a batch run (autostop.at=eol): what is there now, then stop
        assert streams.await_termination(180) and streams.batch_finished(), mode
        progress, metrics = streams.progress(), streams.metrics()
        streams.close()
        # one shape in both modes; records_out counts the output, changelogs apart
        assert list(progress) == list(PROGRESS_KEYS), (mode, progress)
        # one metrics mapping in both modes: Kafka Streams' task metrics of the 2 tasks
        assert len(metrics.find("process-total", "stream-task-metrics")) == 2, (mode, metrics)
        assert metrics.total("records-consumed-total") == 40, (mode, metrics)
        assert (progress["records_in"], progress["records_out"]) == (40, 40), (mode, progress)
        assert progress["changelog_records"] > 0 and progress["commits"] > 0, (mode, progress)
        if mode == "real_time":  # the micro-batch checkpoint went: the next run uses Kafka's
            assert not os.path.exists(checkpoint)
        out = consume_all(broker, dst, len(sent), timeout_s=60)
        assert len(out) == len(sent), (mode, len(out))  # cache off: one update per record
    assert _latest(out) == dict(collections.Counter(k for k, _, _ in sent))
    assert [L.deserialize("", m.value()) for m in out if m.key() == b"k0"] == \
        list(range(1, 25))  # no count seen twice, none skipped
