"""The broker kspark manages: CLI life cycle, transactions, and start-up failures."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kspark._local.broker import LocalBroker, free_port
from kspark._cli.main import main
from kspark.errors import BrokerError
from tests.conftest import consume_all

pytestmark = pytest.mark.integration


def test_transactions_work_on_the_test_broker(broker, admin, topic_name):
    topic = topic_name("txn")
    admin.create_topics({topic: 1})
    p = Producer({"bootstrap.servers": broker, "transactional.id": f"t-{topic}"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"aborted")
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"committed")
    p.commit_transaction(30)
    assert [m.value() for m in consume_all(broker, topic, 1, timeout_s=20)] == [b"committed"]


def test_cli_start_status_stop(tmp_path, capsys):
    port = free_port()
    args = ["--port", str(port), "--dir", str(tmp_path)]
    try:
        assert main(["broker", "start", *args]) == 0
        assert f"bootstrap.servers=127.0.0.1:{port}" in capsys.readouterr().out
        assert main(["broker", "status", *args]) == 0
        assert "running" in capsys.readouterr().out
    finally:
        assert main(["broker", "stop", *args]) == 0
    assert "stopped" in capsys.readouterr().out
    assert main(["broker", "status", *args]) == 3


def test_a_broker_that_dies_at_start_shows_its_log(tmp_path):
    b = LocalBroker(tmp_path, port=free_port())
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("this is not a valid meta.properties\n")
    with pytest.raises(BrokerError, match="exited with code") as err:
        b.start(timeout_s=60)
    assert "log" in str(err.value)


def test_local_broker_keeps_records_with_old_timestamps(admin, broker):
    """Time retention is off: fixtures with 1970 timestamps must not vanish after 30 s."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    a = AdminClient({"bootstrap.servers": broker})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = a.describe_configs([res])[res].result(timeout=30)
    assert configs["log.retention.ms"].value == "-1"
