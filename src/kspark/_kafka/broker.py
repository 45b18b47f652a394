"""A single-node KRaft Apache Kafka broker (broker + controller) on loopback, managed by kspark."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kspark._kafka import QuietLogger
from kspark._kafka.broker_tls import (
    ADMIN_PASSWORD,
    ADMIN_USER,
    CA_CERT,
    HOST,
    OTHER_CA_CERT,
    SCRAM_MECHANISM,
    ensure_tls,
    secure_properties,
    write_private,
)
from kspark._kafka.jars import kafka_libs, kspark_home
from kspark._kafka.prereqs import java_binary
from kspark.errors import BrokerError

__all__ = ["LocalBroker", "BrokerStatus", "free_port"]


@dataclass(frozen=True)
class BrokerStatus:
    """Whether the broker of a data directory runs, and where."""

    running: bool
    pid: int | None
    bootstrap: str | None
    log_file: Path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def _is_kafka(pid: int) -> bool:
    try:
        return b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class LocalBroker:
    """The broker whose storage, config, pid and log live in ``data_dir``.

    Example (starts a JVM, so not run as a doctest)::

        broker = LocalBroker(port=9092)
        print(broker.start())   # 127.0.0.1:9092
        broker.stop()

    With ``secure=True`` the client listener is SASL_SSL (SCRAM-SHA-512 over TLS from a
    private CA made with ``openssl`` in ``<data_dir>/tls/``), ACLs are enforced
    (StandardAuthorizer, nothing allowed without an ACL) and ``admin`` is the super user,
    whose random password is kept in ``<data_dir>/tls/admin.password``::

        broker = LocalBroker("/tmp/secure-broker", port=9093, secure=True)
        broker.start()
        conf = broker.admin_config()   # librdkafka settings of the super user
        print(broker.ca_file)          # the CA clients must trust (ssl.ca.location)
    """

    def __init__(self, data_dir: Path | str | None = None, port: int = 9092,
                 heap: str = "512m", overrides: dict[str, str] | None = None,
                 secure: bool = False):
        self.dir = Path(data_dir) if data_dir else kspark_home() / "broker"
        self.port = port
        self.heap = heap
        self.overrides = dict(overrides or {})  # broker settings over the defaults below
        self.secure = secure
        self.log_file = self.dir / "broker.log"
        self._pid_file = self.dir / "broker.pid"
        self._port_file = self.dir / "broker.port"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def tls_dir(self) -> Path:
        """Where a secured broker keeps its CA, key, certificates and the admin password."""
        return self.dir / "tls"

    @property
    def ca_file(self) -> Path:
        """The PEM certificate of the CA that signed the broker's certificate."""
        return self.tls_dir / CA_CERT

    @property
    def other_ca_file(self) -> Path:
        """The PEM certificate of a second CA, unrelated to the broker (for negative tests)."""
        return self.tls_dir / OTHER_CA_CERT

    @property
    def admin_user(self) -> str:
        return ADMIN_USER

    @property
    def admin_password_file(self) -> Path:
        return self.tls_dir / ADMIN_PASSWORD

    @property
    def admin_password(self) -> str:
        """The super user's SCRAM password, made at random for this data directory."""
        try:
            return self.admin_password_file.read_text().strip()
        except OSError as e:
            raise BrokerError(f"no admin password in {self.admin_password_file}: start the "
                              "broker with secure=True (kspark broker start --secure) "
                              "first") from e

    def admin_config(self) -> dict[str, str]:
        """The librdkafka settings of the super user ``admin`` (a secured broker only)."""
        if not self.secure:
            raise BrokerError("admin_config() is for a secured broker (secure=True); this "
                              f"one listens PLAINTEXT on {self.bootstrap}")
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanism": SCRAM_MECHANISM, "sasl.username": ADMIN_USER,
                "sasl.password": self.admin_password, "ssl.ca.location": str(self.ca_file)}

    def status(self) -> BrokerStatus:
        pid = self._pid()
        if pid is not None and _is_kafka(pid):
            port = int(self._port_file.read_text()) if self._port_file.exists() else self.port
            return BrokerStatus(True, pid, f"{HOST}:{port}", self.log_file)
        return BrokerStatus(False, None, None, self.log_file)

    def start(self, timeout_s: float = 90.0) -> str:
        """Start the broker (formatting its storage the first time); returns its bootstrap
        address."""
        st = self.status()
        if st.running:
            return st.bootstrap or self.bootstrap
        java = java_binary()
        libs = kafka_libs()
        if _port_taken(self.port):
            raise BrokerError(
                f"port {self.port} on {HOST} is already in use, so the broker cannot listen "
                "there: stop what uses it, or choose another port (kspark broker start --port N)"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.secure:
            self._ensure_tls()
        props = self._write_properties()
        cp = f"{libs}{os.sep}*"
        log4j = resources.files("kspark._kafka").joinpath("log4j2.yaml")
        jvm = [java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC",
               "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
        if not (self.dir / "data" / "meta.properties").exists():
            self._format(jvm, props)
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(jvm + ["kafka.Kafka", str(props)], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self._pid_file.write_text(str(proc.pid))
        self._port_file.write_text(str(self.port))
        self._wait_ready(proc, timeout_s)
        return self.bootstrap

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker cleanly (SIGTERM, then SIGKILL after ``timeout_s``); False if none
        ran."""
        pid = self._pid()
        if pid is None or not _is_kafka(pid):
            self._pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _is_kafka(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.2)
        if _is_kafka(pid):
            os.kill(pid, signal.SIGKILL)
            _reap(pid)
        self._pid_file.unlink(missing_ok=True)
        return True

    def _pid(self) -> int | None:
        try:
            return int(self._pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _controller_port(self) -> int:
        f = self.dir / "controller.port"
        if f.exists():
            return int(f.read_text())
        port = free_port()
        f.write_text(str(port))
        return port

    def _write_properties(self) -> Path:
        cport = self._controller_port()
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{cport}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{cport}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.cleaner.backoff.ms": "1000",
            # A development broker keeps every record: with Kafka's default 7-day retention,
            # records carrying old timestamps (replays, fixtures, the demo's data) would be
            # deleted by the first retention check, 30 s after start.
            "log.retention.ms": "-1",
            # A transaction left open by a killed task is aborted within seconds, not minutes.
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        }
        if self.secure:
            props.update(secure_properties(self.port, cport, self.admin_password, self.tls_dir))
        props.update(self.overrides)
        path = self.dir / "server.properties"
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        if self.secure:  # it holds the admin's password (for the inter-broker connections)
            write_private(path, text)
        else:
            path.write_text(text)
        return path

    def _ensure_tls(self) -> None:
        """Make the CAs, the server's key and certificate and the admin password, once."""
        ensure_tls(self.dir, self.tls_dir)

    def _format(self, jvm: list[str], props: Path) -> None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # "--cluster-id=<id>" in one word: a generated id may start with '-'
        cmd = jvm + ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                     "--config", str(props)]
        if self.secure:  # SCRAM users live in the metadata log: the super user is made here
            cmd += ["--add-scram",
                    f"{SCRAM_MECHANISM}=[name={ADMIN_USER},password={self.admin_password}]"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BrokerError(
                f"formatting the broker's storage in {self.dir / 'data'} failed:\n{tail}")

    def _wait_ready(self, proc: subprocess.Popen, timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        conf = self.admin_config() if self.secure else {"bootstrap.servers": self.bootstrap}
        admin = AdminClient({**conf, "log_level": 0, "logger": QuietLogger()})
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._pid_file.unlink(missing_ok=True)
                raise BrokerError(f"the broker exited with code {proc.returncode} while starting; "
                                  f"the end of its log ({self.log_file}):\n{self._log_tail()}")
            try:
                md = admin.list_topics(timeout=2)
                if md.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet, whatever the client says
                time.sleep(0.5)
        self.stop()
        raise BrokerError(f"the broker did not accept requests on {self.bootstrap} within "
                          f"{timeout_s:.0f}s; the end of its log ({self.log_file}):\n"
                          f"{self._log_tail()}")

    def _log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log written)"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
