"""A single-node KRaft Apache Kafka broker (broker + controller) on loopback, managed by kspark."""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kspark._kafka.jars import kafka_libs, kspark_home
from kspark._kafka.prereqs import java_binary
from kspark._kafka import QuietLogger
from kspark.errors import BrokerError

__all__ = ["LocalBroker", "BrokerStatus", "free_port"]

HOST = "127.0.0.1"


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


ADMIN_USER = "admin"
SCRAM_MECHANISM = "SCRAM-SHA-512"
# The files of a secured broker's <dir>/tls/: made once, kept across restarts.
_CA_KEY, _CA_CERT = "ca.key", "ca.pem"
_SERVER_KEY, _SERVER_CERT, _KEYSTORE = "server.key", "server.pem", "keystore.pem"
_OTHER_CA_KEY, _OTHER_CA_CERT = "other-ca.key", "other-ca.pem"
_ADMIN_PASSWORD = "admin.password"
_TLS_FILES = (_CA_KEY, _CA_CERT, _SERVER_KEY, _SERVER_CERT, _KEYSTORE, _OTHER_CA_KEY,
              _OTHER_CA_CERT)


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
        return self.tls_dir / _CA_CERT

    @property
    def other_ca_file(self) -> Path:
        """The PEM certificate of a second CA, unrelated to the broker (for negative tests)."""
        return self.tls_dir / _OTHER_CA_CERT

    @property
    def admin_user(self) -> str:
        return ADMIN_USER

    @property
    def admin_password_file(self) -> Path:
        return self.tls_dir / _ADMIN_PASSWORD

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
            props.update(self._secure_properties(cport))
        props.update(self.overrides)
        path = self.dir / "server.properties"
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        if self.secure:  # it holds the admin's password (for the inter-broker connections)
            _write_private(path, text)
        else:
            path.write_text(text)
        return path

    def _secure_properties(self, cport: int) -> dict[str, str]:
        """The settings that make the client listener SASL_SSL with SCRAM and enforce ACLs."""
        jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
                f'username="{ADMIN_USER}" password="{self.admin_password}";')
        return {
            "listeners": f"SASL_SSL://{HOST}:{self.port},CONTROLLER://{HOST}:{cport}",
            "advertised.listeners": f"SASL_SSL://{HOST}:{self.port}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.tls_dir / _KEYSTORE),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "ssl.client.auth": "none",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            # User:ANONYMOUS is the broker's own principal on the PLAINTEXT controller
            # listener (registration, heartbeats, forwarded requests need CLUSTER_ACTION).
            "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
        }

    def _ensure_tls(self) -> None:
        """Make the CAs, the server's key and certificate and the admin password, once."""
        formatted = (self.dir / "data" / "meta.properties").exists()
        tls = self.tls_dir
        if formatted and not self.admin_password_file.exists():
            raise BrokerError(
                f"the broker's storage in {self.dir / 'data'} was formatted without security "
                f"(no {self.admin_password_file}), so it has no SCRAM users: start the secured "
                "broker in another data directory (--dir)")
        tls.mkdir(mode=0o700, exist_ok=True)
        if not self.admin_password_file.exists():
            _write_private(self.admin_password_file, secrets.token_urlsafe(24) + "\n")
        if all((tls / name).exists() for name in _TLS_FILES):
            return
        tmp = Path(tempfile.mkdtemp(prefix=".tls-", dir=self.dir))
        try:
            _make_tls(tmp)
            for name in _TLS_FILES:
                os.replace(tmp / name, tls / name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

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


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600 from the start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


_CA_EXTENSIONS = """\
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def _make_tls(out: Path) -> None:
    """A private CA, a server key and certificate signed by it (for 127.0.0.1 and localhost),
    the broker's PEM key store (unencrypted PKCS#8 key + chain) and a second, unrelated CA."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BrokerError("a secured broker needs the openssl command to make its "
                          "certificates: install openssl (for example apt-get install openssl)")
    cnf = out / "openssl.cnf"
    cnf.write_text(_CA_EXTENSIONS)

    def run(*args: str) -> None:
        proc = subprocess.run([openssl, *args], capture_output=True, text=True, timeout=60,
                              cwd=out, env={**os.environ, "OPENSSL_CONF": str(cnf)})
        if proc.returncode != 0:
            raise BrokerError(f"openssl {args[0]} failed while making the broker's "
                              f"certificates in {out}:\n{(proc.stdout + proc.stderr).strip()}")

    def key(name: str) -> None:  # PKCS#8, unencrypted ("BEGIN PRIVATE KEY")
        run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", name)
        os.chmod(out / name, 0o600)

    def serial() -> str:
        return "0x" + secrets.token_hex(16)

    for ca_key, ca_cert, cn in ((_CA_KEY, _CA_CERT, "kspark local CA"),
                                (_OTHER_CA_KEY, _OTHER_CA_CERT, "kspark unrelated CA")):
        key(ca_key)
        run("req", "-new", "-x509", "-config", str(cnf), "-key", ca_key, "-out", ca_cert,
            "-days", "3650", "-sha256", "-subj", f"/CN={cn}", "-extensions", "ca",
            "-set_serial", serial())
    key(_SERVER_KEY)
    run("req", "-new", "-config", str(cnf), "-key", _SERVER_KEY, "-out", "server.csr",
        "-subj", "/CN=localhost")
    run("x509", "-req", "-in", "server.csr", "-CA", _CA_CERT, "-CAkey", _CA_KEY,
        "-set_serial", serial(), "-days", "825", "-sha256", "-extfile", str(cnf),
        "-extensions", "server", "-out", _SERVER_CERT)
    _write_private(out / _KEYSTORE, "".join(
        (out / name).read_text() for name in (_SERVER_KEY, _SERVER_CERT, _CA_CERT)))


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
