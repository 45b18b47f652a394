"""Clear errors when Java, Kafka's jars or the broker's port are not there."""

import re
import socket

import pytest

from kspark._local import download, jars, prereqs
from kspark._local.broker import LocalBroker
from kspark._cli.main import main
from kspark.errors import BrokerError, PrerequisiteError


def test_missing_java_says_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PrerequisiteError, match="Java 17"):
        prereqs.java_binary()


def test_the_jars_need_no_maven_and_an_unreachable_repository_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/nonexistent")  # no mvn, no java: downloading needs neither
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connections are refused
    monkeypatch.setenv(download.REPOSITORY_ENV, f"http://127.0.0.1:{port}/maven2")
    monkeypatch.setattr(download, "RETRY_DELAYS_S", ())
    first = re.escape(str(jars.BROKER_JARS[0]))
    with pytest.raises(PrerequisiteError, match=rf"(?s){first}: .*127\.0\.0\.1:{port}/maven2/"
                       r".*KSPARK_MAVEN_REPOSITORY"):
        jars.kafka_libs(home=tmp_path, quiet=True)
    assert list((tmp_path / f"kafka-{jars.KAFKA_VERSION}").iterdir()) == []  # nothing half-done


def test_taken_port_is_named(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(BrokerError, match=f"port {port}"):
            LocalBroker(tmp_path, port=port).start()


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["broker", "start", "--port", str(port), "--dir", str(tmp_path)]) == 2
    assert f"port {port}" in capsys.readouterr().err


def test_status_of_a_stopped_broker(tmp_path, capsys):
    assert main(["broker", "status", "--dir", str(tmp_path)]) == 3
    assert "not running" in capsys.readouterr().out


def test_cluster_ids_starting_with_a_dash_are_passed_safely(tmp_path, monkeypatch):
    """base64 ids may start with '-': the format call must not read them as an option."""
    import subprocess as sp

    from kspark._local import broker as broker_mod

    seen = {}

    def fake_run(cmd, **kwargs):
        seen["cmd"] = cmd
        return sp.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(broker_mod.subprocess, "run", fake_run)
    monkeypatch.setattr(broker_mod.base64, "urlsafe_b64encode", lambda b: b"-abc==")
    LocalBroker(tmp_path)._format(["java"], tmp_path / "server.properties")
    assert "--cluster-id=-abc" in seen["cmd"]
