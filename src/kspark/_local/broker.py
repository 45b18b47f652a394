"""A single-node KRaft Apache Kafka broker (broker + controller) on loopback, managed by kspark.

The same class runs each node of :class:`~kspark._local.cluster.LocalCluster`.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kspark._kafka import QuietLogger
from kspark._local.tls import (
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
from kspark._local.broker_process import free_port, is_kafka, port_taken, wait_gone
from kspark._local.jars import kafka_libs, kspark_home
from kspark._local.prereqs import java_binary
from kspark.errors import BrokerError

__all__ = ["LocalBroker", "BrokerStatus", "free_port", "new_cluster_id"]


@dataclass(frozen=True)
class BrokerStatus:
    """Whether the broker of a data directory runs, and where."""

    running: bool
    pid: int | None
    bootstrap: str | None
    log_file: Path


class LocalBroker:
    """The broker whose storage, config, pid and log live in ``data_dir``.

    Example (starts a JVM, so not run as a doctest)::

        broker = LocalBroker(port=9092)
        print(broker.start())   # 127.0.0.1:9092
        broker.stop()

    ``node_id``, ``quorum`` (``controller.quorum.voters``, which names this node's controller
    port) and ``cluster_id`` make it one node of a multi-node cluster
    (:class:`~kspark._local.cluster.LocalCluster`); left out, the broker is its own
    one-voter quorum with a random cluster id, formatted on its first start.

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
                 secure: bool = False, node_id: int = 1, quorum: str | None = None,
                 cluster_id: str | None = None):
        self.dir = Path(data_dir) if data_dir else kspark_home() / "broker"
        self.node_id, self.quorum, self.cluster_id = node_id, quorum, cluster_id
        self.port = port
        self.heap = heap
        self.overrides = dict(overrides or {})  # broker settings over the defaults below
        self.secure = secure
        self.log_file = self.dir / "broker.log"
        self._pid_file = self.dir / "broker.pid"
        self._port_file = self.dir / "broker.port"
        self._proc: subprocess.Popen | None = None

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
        if pid is not None and is_kafka(pid):
            port = int(self._port_file.read_text()) if self._port_file.exists() else self.port
            return BrokerStatus(True, pid, f"{HOST}:{port}", self.log_file)
        return BrokerStatus(False, None, None, self.log_file)

    def start(self, timeout_s: float = 90.0, wait: bool = True) -> str:
        """Start the broker (formatting its storage the first time); returns its bootstrap
        address. ``wait=False`` returns once the process runs: :meth:`wait_ready` waits."""
        st = self.status()
        if st.running:
            return st.bootstrap or self.bootstrap
        java = java_binary()
        libs = kafka_libs()
        if port_taken(self.port):
            raise BrokerError(
                f"port {self.port} on {HOST} is already in use, so the broker cannot listen "
                "there: stop what uses it, or choose another port (kspark broker start --port N)"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.secure:
            self._ensure_tls()
        props = self._write_properties()
        cp = f"{libs}{os.sep}*"
        log4j = resources.files("kspark._local").joinpath("log4j2.yaml")
        jvm = [java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC",
               "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
        if not (self.dir / "data" / "meta.properties").exists():
            self._format(jvm, props)
        with open(self.log_file, "ab") as log:
            self._proc = subprocess.Popen(jvm + ["kafka.Kafka", str(props)], stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        self._pid_file.write_text(str(self._proc.pid))
        self._port_file.write_text(str(self.port))
        if wait:
            self.wait_ready(timeout_s)
        return self.bootstrap

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the broker cleanly (SIGTERM, then SIGKILL after ``timeout_s``); False if none
        ran."""
        return self._end(signal.SIGTERM, timeout_s)

    def kill(self) -> bool:
        """SIGKILL the broker (a crash: no clean shutdown) and wait until its process is gone;
        False if none ran. :meth:`start` brings it back on the same directory and port."""
        return self._end(signal.SIGKILL, 10.0)

    def _end(self, sig: int, timeout_s: float) -> bool:
        pid = self._pid()
        ran = pid is not None and is_kafka(pid)
        if pid is not None and ran:
            os.kill(pid, sig)
            if not wait_gone(pid, timeout_s):
                os.kill(pid, signal.SIGKILL)
                if not wait_gone(pid, 10.0):
                    raise BrokerError(f"broker process {pid} ({self.dir}) still runs after "
                                      "SIGKILL")
        if self._proc is not None:
            self._proc.poll()  # reaped above: the Popen learns it exited
        self._pid_file.unlink(missing_ok=True)
        self._proc = None
        return ran

    def _pid(self) -> int | None:
        try:
            return int(self._pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _controller_port(self) -> int:
        if self.quorum:  # this node's entry of controller.quorum.voters: "<id>@<host>:<port>"
            voters = dict(v.split("@", 1) for v in self.quorum.split(","))
            return int(voters[str(self.node_id)].rsplit(":", 1)[1])
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
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.quorum or f"{self.node_id}@{HOST}:{cport}",
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
        cluster_id = self.cluster_id or new_cluster_id()
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

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Wait until the broker answers and its metadata lists it among the live brokers
        (registered with the controller quorum and unfenced)."""
        from confluent_kafka.admin import AdminClient

        conf = self.admin_config() if self.secure else {"bootstrap.servers": self.bootstrap}
        admin = AdminClient({**conf, "log_level": 0, "logger": QuietLogger()})
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self._exit_code()
            if code is not None:
                self._pid_file.unlink(missing_ok=True)
                raise BrokerError(f"the broker exited with code {code} while starting; "
                                  f"the end of its log ({self.log_file}):\n{self._log_tail()}")
            try:
                md = admin.list_topics(timeout=2)
                if self.node_id in md.brokers:
                    return
                time.sleep(0.2)
            except Exception:  # noqa: BLE001 - not up yet, whatever the client says
                time.sleep(0.5)
        self.stop()
        raise BrokerError(f"the broker did not accept requests on {self.bootstrap} (as broker "
                          f"{self.node_id} of its cluster) within {timeout_s:.0f}s; the end "
                          f"of its log ({self.log_file}):\n{self._log_tail()}")

    def _exit_code(self) -> int | str | None:
        """The exit code of the broker process once it exited; None while it runs."""
        if self._proc is not None:
            return self._proc.poll()
        pid = self._pid()
        return None if pid is not None and is_kafka(pid) else "unknown"

    def _log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log written)"


def new_cluster_id() -> str:
    """A random KRaft cluster id (the base64 of a UUID, as ``kafka-storage random-uuid``)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
