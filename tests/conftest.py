"""Shared fixtures: one real Kafka broker and one real SparkSession per test session (and, for
the tests that ask, a secured broker and a three-node Kafka cluster); the test matrix's
``execution_mode`` fixtures and ``full_matrix`` marker (see tests/matrix.py)."""

from __future__ import annotations

import itertools
import os
import time
import uuid

import pytest
from confluent_kafka import KafkaError

from kspark._kafka.admin import Admin
from kspark._local.broker import LocalBroker, free_port
from tests.matrix import MODES, argnames_of, full_matrix, full_matrix_only, skip_reason

_ids = itertools.count()


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc):
    """A test asking for ``execution_mode`` runs once per mode, unless a ``parametrize`` of
    its own names it (``sampled_modes``, or pairs such as ``"execution_mode, guarantee"``).
    Last, so the mode comes last in a test's id (``[exactly_once_v2-real_time]``)."""
    if "execution_mode" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        if "execution_mode" in argnames_of(mark.args[0]):
            return
    metafunc.parametrize("execution_mode", MODES, indirect=True)


def pytest_collection_modifyitems(config, items):
    """A test marked ``full_matrix`` is skipped unless this run is the full matrix."""
    if full_matrix():
        return
    for item in items:
        mark = item.get_closest_marker("full_matrix")
        if mark is not None:
            reason = mark.kwargs.get("reason") or (mark.args[0] if mark.args else None)
            item.add_marker(pytest.mark.skip(reason=skip_reason(reason)))


@pytest.fixture
def execution_mode(request):
    """The ``execution.mode`` a test runs in: ``micro_batch`` and ``real_time``, one run
    each (ids ``[micro_batch]``, ``[real_time]``); ``@sampled_modes(...)`` samples them."""
    return request.param


@pytest.fixture(params=[full_matrix_only("micro_batch", reason="the classic session runs "
                                         "the conformance sample in micro_batch mode"),
                        "real_time"])
def execution_mode_on_connect(request):
    """The ``execution.mode`` a test on Spark Connect runs in: ``real_time`` in ``make
    test``, ``micro_batch`` too in the full matrix (the classic session's tests run both)."""
    return request.param


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A real single-node KRaft broker started by kspark, on a free loopback port."""
    b = LocalBroker(tmp_path_factory.mktemp("broker"), port=free_port())
    bootstrap = b.start()
    yield bootstrap
    b.stop()


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory):
    """A real Schema Registry (Apicurio Registry, Confluent's API at ``.url``, in memory,
    BACKWARD compatibility) started by kspark on a free loopback port when a test first asks
    for it, stopped at the end of the session; the LocalRegistry itself."""
    from kspark._local.registry import LocalRegistry

    r = LocalRegistry(tmp_path_factory.mktemp("schema-registry"))
    try:
        r.start()
        yield r
    finally:
        r.stop()


@pytest.fixture(scope="module")
def broker_cluster(tmp_path_factory):
    """A real three-node KRaft cluster (each node broker and controller; replication factor 3,
    min.insync.replicas 2), started for a test module that asks for it and stopped after
    it (three idle JVMs stay out of the rest of the suite). Tests may kill or stop its nodes
    (``LocalCluster.kill``, ``stop_node``)."""
    from kspark._local.cluster import LocalCluster

    c = LocalCluster(tmp_path_factory.mktemp("broker-cluster"), brokers=3)
    try:
        c.start()
        yield c
    finally:  # thrown away: SIGKILL (a clean stop of the three waited up to 30 s for quorum)
        for node in range(1, c.size + 1):
            c.kill(node)


@pytest.fixture(scope="session")
def spark():
    """The SparkSession kspark builds, shared by every integration test."""
    from kspark import spark_session

    session = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                             "spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server (``local[2,4]``: two slots, a failed task tried again), started
    out of process from the PySpark package when a test first asks for it."""
    from pathlib import Path

    from kspark._spark.connect_server import LocalConnectServer

    root = str(Path(__file__).resolve().parent.parent)  # the workers import tests.*
    server = LocalConnectServer(tmp_path_factory.mktemp("connect"), master="local[2,4]",
                                conf={"spark.sql.shuffle.partitions": "2"},
                                env={"PYTHONPATH": root}).start()
    yield server
    server.stop()


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
               "autostop.at": "eol", "request.timeout.ms": 10000,
               # explicit: the tests written for the micro-batch mode stay in it; a test
               # runs real_time by passing execution_mode="real_time" (the default mode)
               "execution.mode": "micro_batch"}
        cfg.update({k.replace("_", "."): v for k, v in extra.items()})
        return cfg
    return make


def consume_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 60,
                until_quiet: bool = False) -> list:
    """Every record of ``topic`` read with read_committed, waiting until ``expected`` arrived
    and the read reached the end of every partition with nothing uncommitted behind it (the
    output of a writer that has finished, read without waiting longer).

    ``until_quiet``: the writer may still be running, so read on until nothing arrived for a
    second (late duplicates show up); this is also the rule when a transaction is still open
    at the end of a partition."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True,
                  "fetch.wait.max.ms": 10})  # a fetch at a partition's end returns at once
    partitions = _assign_all(c, topic)
    uncommitted = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                            "isolation.level": "read_uncommitted"})  # asks for high watermarks
    out: list = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    last_record = time.monotonic()
    while time.monotonic() < deadline:
        for m in c.consume(5000, 0.1):
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                if _nothing_uncommitted_after(uncommitted, topic, m.partition(), m.offset()):
                    at_end.add(m.partition())
                continue
            at_end.discard(m.partition())
            last_record = time.monotonic()
            out.append(m)
        if len(out) < expected:
            continue
        if time.monotonic() - last_record >= 1.0:
            break  # quiet for a second
        if not until_quiet and partitions and at_end >= partitions:
            break  # at the end of every partition
    c.close()
    uncommitted.close()
    return out


def _assign_all(consumer, topic: str) -> set[int]:
    """Assign every partition of ``topic`` from offset 0 (no group join; a log that starts
    later is read from its start, auto.offset.reset); its partitions, or an empty set (then
    subscribed) when the topic's metadata is not there yet."""
    from confluent_kafka import TopicPartition

    md = consumer.list_topics(topic, timeout=20).topics.get(topic)
    if md is None or md.error is not None or not md.partitions:
        consumer.subscribe([topic])
        return set()
    consumer.assign([TopicPartition(topic, p, 0) for p in md.partitions])
    return set(md.partitions)


def _nothing_uncommitted_after(consumer, topic: str, partition: int, eof: int) -> bool:
    """The end a read_committed read reached (the last stable offset) is the partition's high
    watermark (``consumer`` reads uncommitted): no open transaction holds records behind it."""
    from confluent_kafka import TopicPartition

    _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10,
                                             cached=False)
    return eof >= high


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
