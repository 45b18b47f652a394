"""Shared fixtures: one real Kafka broker and one real SparkSession per test session."""

from __future__ import annotations

import itertools
import os
import time
import uuid

import pytest

from kspark._kafka.admin import Admin
from kspark._kafka.broker import LocalBroker, free_port

_ids = itertools.count()


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A real single-node KRaft broker started by kspark, on a free loopback port."""
    b = LocalBroker(tmp_path_factory.mktemp("broker"), port=free_port())
    bootstrap = b.start()
    yield bootstrap
    b.stop()


@pytest.fixture(scope="session")
def spark():
    """The SparkSession kspark builds, shared by every integration test."""
    from kspark import spark_session

    session = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                             "spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def admin(broker):
    return Admin(broker, 30000)


@pytest.fixture
def topic_name():
    """A factory of topic names unique within the session."""
    return lambda base: f"{base}-{next(_ids)}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def app_config(broker, tmp_path):
    """A config for one application with its own id and state directory."""
    def make(**extra):
        cfg = {"application.id": f"test-{next(_ids)}-{uuid.uuid4().hex[:6]}",
               "bootstrap.servers": broker, "state.dir": str(tmp_path / "state"),
               "autostop.at": "eol", "request.timeout.ms": 10000}
        cfg.update({k.replace("_", "."): v for k, v in extra.items()})
        return cfg
    return make


def consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> list:
    """Every record of ``topic`` read with read_committed, waiting until ``expected`` arrived."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([topic])
    out: list = []
    deadline = time.monotonic() + timeout_s
    quiet_polls = 0
    while time.monotonic() < deadline and (len(out) < expected or quiet_polls < 2):
        msgs = c.consume(5000, 0.5)
        quiet_polls = 0 if msgs else quiet_polls + 1
        for m in msgs:
            assert m.error() is None, m.error()
            out.append(m)
    c.close()
    return out


os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)


class SecureBrokerHandle:
    """The secured test broker: SASL_SSL (SCRAM-SHA-512) on ``bootstrap``, ACLs enforced."""

    def __init__(self, broker: LocalBroker):
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self.ca_file = str(broker.ca_file)
        self.other_ca_file = str(broker.other_ca_file)
        self.admin_conf = broker.admin_config()

    def user(self, name: str | None = None) -> dict:
        """A new SCRAM-SHA-512 user (no ACLs) with a random password, usable on return; its
        client settings in Kafka Streams' top-level style (no bootstrap.servers)."""
        import secrets

        from kspark._kafka.security_admin import create_scram_user

        name = name or f"user-{next(_ids)}-{uuid.uuid4().hex[:6]}"
        password = secrets.token_urlsafe(18)
        create_scram_user(self.admin_conf, name, password)
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": name, "sasl.password": password, "ssl.ca.location": self.ca_file}


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory):
    """A second real broker, secured: TLS from a private CA, SCRAM-SHA-512, ACLs enforced."""
    b = LocalBroker(tmp_path_factory.mktemp("secure-broker"), port=free_port(), secure=True)
    b.start()
    try:
        yield SecureBrokerHandle(b)
    finally:
        b.stop()


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    """A real Spark standalone cluster for one test module (stopped after it, so its JVMs
    do not idle through the rest of the suite): a master and two workers (1 core, 1g each,
    each with its own work directory), started with the launcher classes inside pyspark,
    on 127.0.0.1 (see tests/integration/standalone.py)."""
    from tests.integration.standalone import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def spark_standalone(standalone_cluster):
    """The module's standalone cluster with every worker alive: a worker an earlier test
    killed (``kill_worker``) is started again first."""
    standalone_cluster.revive()
    return standalone_cluster
