"""A crafted pickle written to every changelog of an application on Spark: the restore that
follows refuses it with a CorruptStateError naming the store, topic, partition and offset,
and never runs it (the stores kspark encodes itself no longer use pickle)."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kspark import (
    Joined,
    KafkaStreams,
    Materialized,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from kspark.errors import StreamsError
from kspark.state import Stores
from tests.conftest import consume_all

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()


class _Touch:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def _topology(t):
    b = StreamsBuilder()
    (b.stream(t["events"], key_serde=S, value_serde=S).group_by_key()      # a suppress buffer
      .windowed_by(TimeWindows.of_size_and_grace(10, 0)).count()
      .suppress(Suppressed.until_window_closes()).to_stream()
      .map(lambda wk, n: (wk.key, n)).to(t["counts"], key_serde=S, value_serde=L))
    orders = b.table(t["orders"], key_serde=S, value_serde=S)             # an unnamed FK join
    products = b.table(t["products"], key_serde=S, value_serde=S)
    orders.join(products, lambda v: v, lambda o, p: (o, p)).to_stream().map_values(repr).to(
        t["enriched"], value_serde=S)
    rates = b.table(t["rates"], key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 1000)))     # a grace buffer
    b.stream(t["clicks"], key_serde=S, value_serde=L).join(
        rates, lambda v, r: v * r, joined=Joined().with_grace_period(100)).to(
        t["priced"], key_serde=S, value_serde=L)
    return b.build()


def _produce(broker, t, ts):
    p = Producer({"bootstrap.servers": broker})
    for topic, key, value in (("events", "a", "x"), ("products", "p1", "apple"),
                              ("orders", "o1", "p1"), ("rates", "eur", 2), ("clicks", "eur", 3)):
        for i in range(3):
            raw = L.serialize(topic, value) if isinstance(value, int) else value.encode()
            p.produce(t[topic], key=key.encode(), value=raw, timestamp=ts + 20 * i)
    p.flush(10)


def test_a_crafted_pickle_on_every_changelog_fails_the_restore_and_never_runs(
        broker, spark, admin, topic_name, app_config, tmp_path):
    t = {n: topic_name(f"crafted-{n}") for n in ("events", "counts", "orders", "products",
                                                   "enriched", "rates", "clicks", "priced")}
    admin.create_topics({topic: 1 for topic in t.values()})
    cfg = app_config(statestore_cache_max_bytes=0)
    app = cfg["application.id"]
    _produce(broker, t, 1000)
    streams = KafkaStreams(_topology(t), cfg, spark=spark)
    streams.start()
    assert streams.await_termination(120)
    streams.close()
    assert consume_all(broker, t["enriched"], 1, timeout_s=10)  # the stores were used

    changelogs = sorted(n for n in admin.partition_counts()
                        if n.startswith(app) and n.endswith("-changelog"))
    assert any("SUPPRESS" in n for n in changelogs) and any("-Buffer-" in n for n in changelogs)
    assert any(re.search(r"SUBSCRIPTION-STATE-STORE-\d+-changelog$", n) for n in changelogs)
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Touch(marker), protocol=5)
    p = Producer({"bootstrap.servers": broker})
    for topic in changelogs:
        p.produce(topic, key=b"crafted", value=payload, partition=0)
    p.flush(10)
    shutil.rmtree(Path(cfg["state.dir"]) / app)                 # the next run restores
    _produce(broker, t, 2000)

    streams = KafkaStreams(_topology(t), cfg, spark=spark)
    streams.start()
    with pytest.raises(StreamsError) as e:
        streams.await_termination(120)
    streams.close()
    message = str(e.value)
    assert "CorruptStateError" in message, message
    found = re.search(r"cannot restore store '([^']+)' \(.*?\): the record at offset (\d+) of "
                      r"changelog topic '([^']+)' partition 0 is not in kspark's internal format "
                      r"\(.*a Python pickle.*\); kspark never runs such data",
                      message)  # (a suppress buffer's, in Java's layout: what did not parse)
    assert found, message
    store, offset, topic = found.groups()
    assert topic == f"{app}-{store}-changelog" and topic in changelogs and int(offset) >= 0
    assert not marker.exists(), "a crafted changelog record ran code"
