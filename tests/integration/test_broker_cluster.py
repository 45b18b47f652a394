"""The local three-node KRaft cluster: replication by default, a crashed node (transactions
still commit; it rejoins), the CLI. A rolling restart and the single broker killed and
started again on its port run under an application in ``test_broker_faults.py``."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kspark._kafka.admin import Admin
from kspark._control.stop_offsets import StopOffsets
from kspark._cli.main import main
from kspark.config import declared_default
from tests.conftest import consume_all

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(broker_cluster):
    """The session's cluster with every node running and every partition in sync (a test
    before may have killed or stopped a node)."""
    broker_cluster.start()
    broker_cluster.wait_in_sync()
    return broker_cluster


def metadata(cluster, topic: str | None = None):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    return admin.list_topics(topic, timeout=20)


def replicas(cluster, topic: str) -> list[tuple[int, int, int]]:
    """(partition, replica count, ISR size) of every partition of ``topic``, once the node
    this client asks knows the topic (a topic just created reaches the other nodes'
    metadata a moment later: CI saw none at first)."""
    deadline = time.monotonic() + 30
    while True:
        parts = metadata(cluster, topic).topics[topic].partitions.values()
        if parts or time.monotonic() > deadline:
            return sorted((p.id, len(p.replicas), len(p.isrs)) for p in parts)
        time.sleep(0.2)


def write_committed(bootstrap: str, topic: str, values: list[bytes], txn_id: str) -> float:
    """Write ``values`` in one transaction (acks=all); the seconds it took."""
    started = time.monotonic()
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "log_level": 0})
    p.init_transactions(60)
    p.begin_transaction()
    for i, v in enumerate(values):
        p.produce(topic, key=str(i).encode(), value=v)
    p.commit_transaction(60)
    return time.monotonic() - started


def test_three_brokers_and_internal_topics_replicated_three_times(cluster, topic_name):
    assert sorted(metadata(cluster).brokers) == [1, 2, 3]
    topic = topic_name("rf")
    # replication.factor's default (-1): the brokers' default.replication.factor, 3
    Admin(cluster.bootstrap).create_topics({topic: 3},
                                           replication_factor=declared_default("replication.factor"))
    assert replicas(cluster, topic) == [(0, 3, 3), (1, 3, 3), (2, 3, 3)]
    meta = StopOffsets(cluster.bootstrap, topic_name("app"))  # an internal topic kspark makes
    meta.create()
    assert replicas(cluster, meta.topic) == [(0, 3, 3)]


def test_a_killed_node_leaves_transactions_working_and_rejoins(cluster, topic_name):
    topic = topic_name("kill")
    Admin(cluster.bootstrap).create_topics({topic: 3})
    write_committed(cluster.bootstrap, topic, [b"before"] * 30, f"t-{topic}")
    victim = metadata(cluster, topic).topics[topic].partitions[0].leader
    assert cluster.kill(victim)
    assert not cluster.status()[victim].running
    took = write_committed(cluster.bootstrap, topic, [b"after"] * 30, f"t-{topic}")
    values = [m.value() for m in consume_all(cluster.bootstrap, topic, 60, timeout_s=30)]
    assert sorted(values) == [b"after"] * 30 + [b"before"] * 30
    print(f"a transaction committed {took:.1f}s after node {victim} was killed")

    cluster.start_node(victim)
    assert victim in metadata(cluster).brokers
    cluster.wait_in_sync(60)
    assert replicas(cluster, topic) == [(0, 3, 3), (1, 3, 3), (2, 3, 3)]
    assert {len(p.replicas) for p in metadata(cluster, "__transaction_state")
            .topics["__transaction_state"].partitions.values()} == {3}


def test_cli_status_and_start_of_the_cluster(cluster, capsys):
    """``kspark broker start|status --brokers 3`` on the cluster's directory: the ports kept
    in it; a stopped node is reported, and started again by ``start``."""
    args = ["--brokers", "3", "--dir", str(cluster.dir)]
    assert main(["broker", "status", *args]) == 0
    assert f"bootstrap.servers={cluster.bootstrap}" in capsys.readouterr().out
    assert cluster.stop_node(3)
    assert main(["broker", "status", *args]) == 3
    assert "2 of 3 nodes running" in capsys.readouterr().out
    assert main(["broker", "start", *args]) == 0
    assert f"bootstrap.servers={cluster.bootstrap}" in capsys.readouterr().out
    assert sorted(metadata(cluster).brokers) == [1, 2, 3]
