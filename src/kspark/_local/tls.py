"""What makes a secured :class:`~kspark._local.broker.LocalBroker` secure: a private CA and
the broker's key and certificate (made with ``openssl`` once, kept in ``<data_dir>/tls/``),
the super user's random SCRAM password, and the broker settings of a SASL_SSL listener with
ACLs enforced.

Example:
    >>> props = secure_properties(9093, 9094, "secret", Path("/data/tls"))
    >>> props["listeners"], props["super.users"]
    ('SASL_SSL://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094', 'User:admin;User:ANONYMOUS')
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from kspark.errors import BrokerError

__all__ = ["HOST", "ADMIN_USER", "SCRAM_MECHANISM", "CA_CERT", "OTHER_CA_CERT", "ADMIN_PASSWORD",
           "ensure_tls", "secure_properties", "write_private"]

HOST = "127.0.0.1"
ADMIN_USER = "admin"
SCRAM_MECHANISM = "SCRAM-SHA-512"
# The files of a secured broker's <dir>/tls/: made once, kept across restarts.
_CA_KEY, CA_CERT = "ca.key", "ca.pem"
_SERVER_KEY, _SERVER_CERT, _KEYSTORE = "server.key", "server.pem", "keystore.pem"
_OTHER_CA_KEY, OTHER_CA_CERT = "other-ca.key", "other-ca.pem"
ADMIN_PASSWORD = "admin.password"
_TLS_FILES = (_CA_KEY, CA_CERT, _SERVER_KEY, _SERVER_CERT, _KEYSTORE, _OTHER_CA_KEY,
              OTHER_CA_CERT)


def secure_properties(port: int, cport: int, admin_password: str,
                      tls_dir: Path) -> dict[str, str]:
    """The settings that make the client listener SASL_SSL with SCRAM and enforce ACLs."""
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{ADMIN_USER}" password="{admin_password}";')
    return {
        "listeners": f"SASL_SSL://{HOST}:{port},CONTROLLER://{HOST}:{cport}",
        "advertised.listeners": f"SASL_SSL://{HOST}:{port}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls_dir / _KEYSTORE),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls_dir / CA_CERT),
        "ssl.client.auth": "none",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        # User:ANONYMOUS is the broker's own principal on the PLAINTEXT controller
        # listener (registration, heartbeats, forwarded requests need CLUSTER_ACTION).
        "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
    }


def ensure_tls(data_dir: Path, tls_dir: Path) -> None:
    """Make the CAs, the server's key and certificate and the admin password in ``tls_dir``,
    once (refused for storage in ``data_dir`` formatted without security)."""
    formatted = (data_dir / "data" / "meta.properties").exists()
    password_file = tls_dir / ADMIN_PASSWORD
    if formatted and not password_file.exists():
        raise BrokerError(
            f"the broker's storage in {data_dir / 'data'} was formatted without security "
            f"(no {password_file}), so it has no SCRAM users: start the secured "
            "broker in another data directory (--dir)")
    tls_dir.mkdir(mode=0o700, exist_ok=True)
    if not password_file.exists():
        write_private(password_file, secrets.token_urlsafe(24) + "\n")
    if all((tls_dir / name).exists() for name in _TLS_FILES):
        return
    tmp = Path(tempfile.mkdtemp(prefix=".tls-", dir=data_dir))
    try:
        _make_tls(tmp)
        for name in _TLS_FILES:
            os.replace(tmp / name, tls_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_private(path: Path, text: str) -> None:
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

    for ca_key, ca_cert, cn in ((_CA_KEY, CA_CERT, "kspark local CA"),
                                (_OTHER_CA_KEY, OTHER_CA_CERT, "kspark unrelated CA")):
        key(ca_key)
        run("req", "-new", "-x509", "-config", str(cnf), "-key", ca_key, "-out", ca_cert,
            "-days", "3650", "-sha256", "-subj", f"/CN={cn}", "-extensions", "ca",
            "-set_serial", serial())
    key(_SERVER_KEY)
    run("req", "-new", "-config", str(cnf), "-key", _SERVER_KEY, "-out", "server.csr",
        "-subj", "/CN=localhost")
    run("x509", "-req", "-in", "server.csr", "-CA", CA_CERT, "-CAkey", _CA_KEY,
        "-set_serial", serial(), "-days", "825", "-sha256", "-extfile", str(cnf),
        "-extensions", "server", "-out", _SERVER_CERT)
    write_private(out / _KEYSTORE, "".join(
        (out / name).read_text() for name in (_SERVER_KEY, _SERVER_CERT, CA_CERT)))
