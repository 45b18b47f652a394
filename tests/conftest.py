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
