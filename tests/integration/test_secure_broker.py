"""The secured local broker: TLS from a private CA, SCRAM-SHA-512, ACLs enforced.

One broker for the whole session (the ``secure_broker`` fixture); each test makes its own
topics and users.
"""

from __future__ import annotations

import stat
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kspark._kafka import QuietLogger
from kspark._kafka.security_admin import (
    acl_bindings,
    grant,
    revoke,
    wait_acls_visible,
    wait_user_usable,
)
from kspark._cli.main import main

pytestmark = pytest.mark.integration


def _topic(admin_conf: dict, base: str) -> str:
    name = f"{base}-{uuid.uuid4().hex[:8]}"
    client = AdminClient(admin_conf)  # alive until the future is resolved
    futures = client.create_topics([NewTopic(name, 1, 1)], operation_timeout=30,
                                   request_timeout=30)
    futures[name].result(timeout=30)
    return name


def _client_conf(secure_broker, settings: dict) -> dict:
    return {"bootstrap.servers": secure_broker.bootstrap, "logger": QuietLogger(), **settings}


def _produce(conf: dict, topic: str, value: bytes, timeout_s: float = 30) -> KafkaError | None:
    """Produce one record; the delivery report's error (None when written)."""
    reports: list = []
    p = Producer({**conf, "message.timeout.ms": int(timeout_s * 1000) - 5000})
    p.produce(topic, value=value, on_delivery=lambda err, msg: reports.append(err))
    p.flush(timeout_s)
    assert reports, f"no delivery report within {timeout_s}s"
    return reports[0]


def _first_error(conf: dict, timeout_s: float = 20) -> KafkaError:
    """The first error a client with ``conf`` reports through error_cb, within ``timeout_s``."""
    errors: list[KafkaError] = []
    p = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + timeout_s
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    assert errors, f"no error reported within {timeout_s}s"
    return errors[0]


def test_admin_round_trips_records_over_tls_and_scram(secure_broker):
    admin = _client_conf(secure_broker, secure_broker.admin_conf)
    topic = _topic(admin, "admin-rt")
    assert _produce(admin, topic, b"hello") is None
    c = Consumer({**admin, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got: list = []
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        got = c.consume(1, 1.0)
    c.close()
    assert [m.value() for m in got] == [b"hello"]
    assert got[0].error() is None


def test_a_user_without_acls_is_denied_until_granted(secure_broker):
    admin = _client_conf(secure_broker, secure_broker.admin_conf)
    topic = _topic(admin, "acl")
    user = secure_broker.user()
    conf = _client_conf(secure_broker, user)
    principal = f"User:{user['sasl.username']}"

    err = _produce(conf, topic, b"denied")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err

    granted = grant(admin, principal, "TOPIC", topic, ["WRITE", "DESCRIBE"])
    assert len(granted) == 2
    assert _produce(conf, topic, b"allowed") is None

    revoke(admin, principal, "TOPIC", topic, "WRITE")
    err = _produce(conf, topic, b"denied again")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    # DESCRIBE is still granted; WRITE is gone
    wait_acls_visible(admin, acl_bindings(principal, "TOPIC", topic, "DESCRIBE"), timeout_s=10)
    wait_acls_visible(admin, acl_bindings(principal, "TOPIC", topic, "WRITE"), timeout_s=10,
                      present=False)


def test_a_wrong_password_is_an_authentication_error(secure_broker):
    user = secure_broker.user()
    err = _first_error(_client_conf(secure_broker, {**user, "sasl.password": "wrong"}))
    assert err.code() == KafkaError._AUTHENTICATION, err


def test_a_client_trusting_another_ca_fails_tls_verification(secure_broker):
    conf = _client_conf(secure_broker, {**secure_broker.admin_conf,
                                        "ssl.ca.location": secure_broker.other_ca_file})
    err = _first_error(conf)
    assert err.code() == KafkaError._SSL, err
    assert "certificate verify failed" in err.str(), err


def test_a_plaintext_client_cannot_use_the_sasl_ssl_port(secure_broker):
    conf = {"bootstrap.servers": secure_broker.bootstrap, "logger": QuietLogger()}
    err = _first_error(conf)
    assert err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT), err
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=2)


def test_tls_files_are_private_and_made_once(secure_broker):
    b = secure_broker.broker
    tls = b.tls_dir
    before = {p.name: p.read_bytes() for p in tls.iterdir()}
    b._ensure_tls()  # what a restart does: nothing is made again
    assert {p.name: p.read_bytes() for p in tls.iterdir()} == before
    for secret in ("admin.password", "ca.key", "server.key", "keystore.pem"):
        assert stat.S_IMODE((tls / secret).stat().st_mode) == 0o600, secret
    assert stat.S_IMODE((b.dir / "server.properties").stat().st_mode) == 0o600
    assert b"BEGIN PRIVATE KEY" in before["keystore.pem"]  # PKCS#8, unencrypted
    text = subprocess.run(["openssl", "x509", "-in", str(tls / "server.pem"), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    verify = ["openssl", "verify", "-CAfile"]
    assert subprocess.run(verify + [secure_broker.ca_file, str(tls / "server.pem")],
                          capture_output=True).returncode == 0
    assert subprocess.run(verify + [secure_broker.other_ca_file, str(tls / "server.pem")],
                          capture_output=True).returncode != 0


def test_cli_secure_start_prints_the_ca_and_admin_but_not_the_password(secure_broker, capsys):
    b = secure_broker.broker
    # the broker of this directory runs already: start only reports it
    assert main(["broker", "start", "--secure", "--dir", str(b.dir), "--port", str(b.port)]) == 0
    out = capsys.readouterr().out
    assert f"bootstrap.servers={b.bootstrap}" in out
    assert secure_broker.ca_file in out
    assert "sasl.username=admin" in out and str(b.admin_password_file) in out
    assert b.admin_password not in out


def test_a_restart_reuses_the_certificates_and_keeps_the_users(secure_broker):
    """Last in this file: it restarts the session's secured broker."""
    b = secure_broker.broker
    user = secure_broker.user()
    before = {p.name: p.read_bytes() for p in b.tls_dir.iterdir()}
    assert b.stop()
    assert b.start() == secure_broker.bootstrap  # ready means: the admin logged in over TLS
    assert {p.name: p.read_bytes() for p in b.tls_dir.iterdir()} == before
    wait_user_usable(secure_broker.admin_conf, user["sasl.username"], user["sasl.password"],
                     timeout_s=30)
