"""The one builder of Kafka client configs (issue 24): top-level security keys reach every
kind of client, per-kind prefixes override, keys kspark owns are refused, secrets come from
references and never show; the state directory is private to its user."""

from __future__ import annotations

import os
import stat

import pytest

from kspark import StreamsConfig
from kspark._engine.state import build
from kspark._kafka.clients import check_client_configs
from kspark._kafka.security_errors import authorization, certificate
from kspark._kafka.settings import ClientSettings
from kspark.errors import ConfigError, StateStoreError

BASE = {"application.id": "app", "bootstrap.servers": "b1:9093"}
SECURE = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
          "sasl.username": "alice", "sasl.password": "pw-123", "ssl.ca.location": "/ca.pem",
          "client.dns.lookup": "use_all_dns_ips", "socket.keepalive.enable": True}


def settings(**extra) -> ClientSettings:
    return ClientSettings.from_config(StreamsConfig({**BASE, **SECURE, **extra}))


@pytest.mark.parametrize("kind", ["consumer", "producer", "admin", "restore.consumer"])
def test_top_level_security_keys_reach_every_kind_of_client(kind):
    conf = settings().conf(kind, "x")
    for key, value in SECURE.items():
        assert conf[key] == value
    assert conf["bootstrap.servers"] == "b1:9093" and conf["client.id"] == "app-x"


def test_per_kind_prefixes_override_and_kspark_keys_win():
    s = settings(**{"consumer.fetch.wait.max.ms": 10, "restore.consumer.fetch.wait.max.ms": 50,
                    "producer.sasl.username": "bob", "admin.socket.timeout.ms": 5000})
    assert s.conf("consumer")["fetch.wait.max.ms"] == 10
    assert s.conf("restore.consumer")["fetch.wait.max.ms"] == 50
    assert s.conf("producer")["sasl.username"] == "bob"
    assert s.conf("consumer")["sasl.username"] == "alice"
    assert s.conf("admin")["socket.timeout.ms"] == 5000
    assert "fetch.wait.max.ms" not in s.conf("admin")
    conf = s.conf("consumer", None, {"group.id": "app"}, {"fetch.wait.max.ms": 500})
    assert conf["group.id"] == "app" and conf["fetch.wait.max.ms"] == 10  # user over default


def test_client_id_is_a_prefix():
    assert settings(**{"client.id": "billing"}).conf("producer", "0_1")["client.id"] == \
        "billing-0_1"


@pytest.mark.parametrize("key,value,why", [
    ("consumer.isolation.level", "read_uncommitted", "read_committed"),
    ("consumer.group.id", "other", "application.id"),
    ("consumer.enable.auto.commit", "true", "commits input offsets itself"),
    ("restore.consumer.isolation.level", "read_uncommitted", "read_committed"),
    ("producer.enable.idempotence", "false", "idempotent"),
    ("producer.acks", "1", "acks=all"),
    ("producer.transactional.id", "mine", "fences"),
])
def test_keys_kspark_owns_are_refused_with_the_reason(key, value, why):
    with pytest.raises(ConfigError) as info:
        StreamsConfig({**BASE, key: value})
    assert key in str(info.value) and why in str(info.value)


def test_keys_kspark_owns_may_repeat_its_own_value():
    StreamsConfig({**BASE, "producer.acks": "all", "consumer.isolation.level": "read_committed",
                   "producer.enable.idempotence": True})


def test_sasl_jaas_config_is_understood():
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="carol" password="p\\"w";')
    conf = ClientSettings.from_config({**BASE, "sasl.jaas.config": jaas}).conf("admin")
    assert conf["sasl.username"] == "carol" and conf["sasl.password"] == 'p\\"w'
    assert "sasl.jaas.config" not in conf
    with pytest.raises(ConfigError, match="PlainLoginModule and ScramLoginModule"):
        ClientSettings.from_config({**BASE, "sasl.jaas.config": "Krb5LoginModule required;"})


def test_secrets_come_from_environment_variables_and_files(tmp_path, monkeypatch):
    monkeypatch.setenv("KSPARK_TEST_PW", "from-env")
    (tmp_path / "pw").write_text("from-file\n")
    (tmp_path / "creds.properties").write_text("password=from-props\nuser=dan\n")
    c = StreamsConfig({**BASE, "sasl.password": "${env:KSPARK_TEST_PW}",
                       "producer.sasl.password": f"${{file:{tmp_path / 'pw'}}}",
                       "admin.sasl.password":
                           f"${{file:{tmp_path / 'creds.properties'}:password}}"})
    assert c["sasl.password"] == "from-env"
    assert c["producer.sasl.password"] == "from-file"
    assert c["admin.sasl.password"] == "from-props"


def test_a_missing_reference_names_the_key_and_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("KSPARK_NO_SUCH", raising=False)
    with pytest.raises(ConfigError, match="'sasl.password' refers to environment variable "
                                          "'KSPARK_NO_SUCH', which is not set"):
        StreamsConfig({**BASE, "sasl.password": "${env:KSPARK_NO_SUCH}"})
    with pytest.raises(ConfigError, match="refers to file .* cannot be read"):
        StreamsConfig({**BASE, "sasl.password": f"${{file:{tmp_path / 'missing'}}}"})


def test_secrets_never_show_in_repr():
    c = StreamsConfig({**BASE, **SECURE, "ssl.key.pem": "-----BEGIN PRIVATE KEY-----xyz",
                       "sasl.oauthbearer.client.secret": "oidc-secret",
                       "producer.ssl.key.password": "key-pass-9", "spark.master": "local[2]",
                       # the Schema Registry serdes' secrets (kspark.serde.registry)
                       "basic.auth.user.info": "sr:sr-pw-1",
                       "schema.registry.basic.auth.user.info": "sr:sr-pw-2",
                       "bearer.auth.token": "sr-token", "bearer.auth.client.secret": "sr-cs",
                       "schema.registry.ssl.key.password": "sr-key-pw"})
    shown = repr(c) + repr(ClientSettings.from_config(c))
    for secret in ("pw-123", "xyz", "oidc-secret", "key-pass-9", "sr-pw-1", "sr-pw-2",
                   "sr-token", "sr-cs", "sr-key-pw"):
        assert secret not in shown
    assert "alice" in shown and "/ca.pem" in shown  # names and paths are no secrets


def test_a_bad_client_setting_fails_at_start_naming_the_kind():
    with pytest.raises(ConfigError, match="kspark's producer clients"):
        check_client_configs(StreamsConfig({**BASE, "producer.no.such.setting": 1}))
    with pytest.raises(ConfigError, match="security.protocol"):
        check_client_configs(StreamsConfig({**BASE, "security.protocol": "CARRIER_PIGEON"}))


def test_authorization_errors_name_the_grant():
    s = settings()
    e = authorization(s, "TRANSACTIONAL_ID", "app-0_1", "WRITE", "Broker: denied")
    assert str(e).startswith("User:alice is not authorized to WRITE transactional id 'app-0_1'")
    assert "--operation Write --transactional-id app --resource-pattern-type prefixed" in str(e)
    assert (e.resource_type, e.resource_name, e.operation) == ("TRANSACTIONAL_ID", "app-0_1",
                                                               "WRITE")
    e = authorization(s, "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE", "denied")
    assert "to IDEMPOTENT_WRITE the cluster" in str(e) and "--cluster" in str(e)
    assert "/ca.pem" in str(certificate(s, "SSL handshake failed: certificate verify failed"))


def test_state_dir_is_private_to_its_user(tmp_path, monkeypatch):
    path = tmp_path / "state"
    build.private_state_dir(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    other = tmp_path / "someone-elses"
    other.mkdir()
    monkeypatch.setattr(os, "getuid", lambda: other.stat().st_uid + 1)
    with pytest.raises(StateStoreError, match="belongs to another user"):
        build.private_state_dir(str(other))


def test_the_default_state_dir_is_per_user():
    import getpass

    assert StreamsConfig(BASE)["state.dir"].endswith(f"kspark-{getpass.getuser()}")


@pytest.mark.parametrize("kind", ["consumer", "restore.consumer"])
def test_a_consumer_fetches_again_as_soon_as_its_queue_drains_unless_the_user_says(kind):
    # librdkafka's default holds a partition's fetch back a whole second once its queue is full
    assert settings().conf(kind)["fetch.queue.backoff.ms"] == 5
    assert settings(**{"consumer.fetch.queue.backoff.ms": 200}).conf(kind)[
        "fetch.queue.backoff.ms"] == 200
    assert "fetch.queue.backoff.ms" not in settings().conf("producer")
