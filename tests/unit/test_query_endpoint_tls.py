"""The interactive-query endpoint over TLS (``query.endpoint.ssl.*``, ``_iq/tls.py``): a
client trusting the CA is answered (the token still required); a wrong CA, a certificate
not naming the endpoint's host, a plain-HTTP client and a TLS client of a plain endpoint
each fail at once with what to do. The certificates are the local broker's (``_local/tls.py``:
a private CA, a server certificate for 127.0.0.1 and localhost, an unrelated CA)."""

import json
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from kspark._iq.client import QueryClient
from kspark._iq.endpoint import QueryEndpoint
from kspark._iq.routes import Route
from kspark._iq.tls import CAFILE, CERTFILE, KEYFILE, PASSWORD, client_context, server_context
from kspark._local.tls import CA_CERT, OTHER_CA_CERT, ensure_tls
from kspark.config import StreamsConfig
from kspark.errors import ConfigError, InvalidStateStoreError



@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """{"ca", "other_ca", "cert", "key"}: PEM files of the local broker's TLS material."""
    data = tmp_path_factory.mktemp("tls-data")
    ensure_tls(data, data / "tls")
    d = data / "tls"
    return {"ca": str(d / CA_CERT), "other_ca": str(d / OTHER_CA_CERT),
            "cert": str(d / "server.pem"), "key": str(d / "server.key")}


def _serving(tls, host="127.0.0.1"):
    return QueryEndpoint(host, lambda body: {"status": "ok", "got": body.get("x")},
                         server_context({CERTFILE: tls["cert"], KEYFILE: tls["key"]}))


def _ask(endpoint, context):
    """The answer of ``endpoint`` to one query through a QueryClient using ``context``."""
    client = QueryClient("unused:9092", "app", None, 1000, context)
    client.routes.max_age_s = float("inf")  # the route below is all it knows
    client.routes._take(Route("0_0", ("s",), endpoint.address, endpoint.token, "active", "h"))
    try:
        return client.ask("s", "0_0", 0, {"store": "s", "x": 7})
    finally:
        client.close()


def test_a_client_trusting_the_ca_is_answered_over_tls(tls):
    with _serving(tls) as ep:
        answer = _ask(ep, client_context({CAFILE: tls["ca"]}))
        assert answer == {"status": "ok", "got": 7}


def test_the_token_is_still_required_over_tls(tls):
    context = ssl.create_default_context(cafile=tls["ca"])
    with _serving(tls) as ep:
        req = urllib.request.Request(f"https://{ep.address}/v1/query", data=b"{}",
                                     method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10, context=context)
        assert e.value.code == 401
        req.add_header("Authorization", "Bearer " + ep.token)
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            assert json.load(r) == {"status": "ok", "got": None}


def test_a_wrong_ca_fails_at_once_naming_the_endpoint_and_the_key_to_set(tls):
    with _serving(tls) as ep:
        with pytest.raises(InvalidStateStoreError) as e:
            _ask(ep, client_context({CAFILE: tls["other_ca"]}))
        message = str(e.value)
        assert ep.address in message and "not verified" in message and CAFILE in message
        # the endpoint goes on serving clients that trust it
        assert _ask(ep, client_context({CAFILE: tls["ca"]}))["got"] == 7


def test_a_certificate_not_naming_the_announced_host_is_refused(tls):
    """The host name is checked: 127.0.0.2 (loopback too) is not in the certificate."""
    with _serving(tls, "127.0.0.2") as ep:
        with pytest.raises(InvalidStateStoreError, match=r"not verified \(IP address mismatch"):
            _ask(ep, client_context({CAFILE: tls["ca"]}))


def test_a_plain_http_client_is_told_the_endpoint_serves_https(tls):
    with _serving(tls) as ep:
        with pytest.raises(InvalidStateStoreError) as e:
            _ask(ep, None)
        message = str(e.value)
        assert f"{ep.address} serves HTTPS only" in message and CAFILE in message


def test_a_tls_client_of_a_plain_endpoint_is_told_to_check_the_workers_config(tls):
    with QueryEndpoint("127.0.0.1", lambda body: {"status": "ok"}) as ep:
        with pytest.raises(InvalidStateStoreError) as e:
            _ask(ep, client_context({CAFILE: tls["ca"]}))
        message = str(e.value)
        assert ep.address in message and "TLS handshake" in message and CERTFILE in message


def test_an_encrypted_key_needs_its_password_which_no_error_shows(tls, tmp_path):
    encrypted = tmp_path / "server-encrypted.key"
    subprocess.run(["openssl", "pkey", "-in", tls["key"], "-aes256", "-passout",
                    "pass:s3cret-pw", "-out", str(encrypted)], check=True, capture_output=True)
    keys = {CERTFILE: tls["cert"], KEYFILE: str(encrypted)}
    with QueryEndpoint("127.0.0.1", lambda body: {"status": "ok", "got": body.get("x")},
                       server_context({**keys, PASSWORD: "s3cret-pw"})) as ep:
        assert _ask(ep, client_context({CAFILE: tls["ca"]}))["got"] == 7
    with pytest.raises(ConfigError, match=f"{CERTFILE}.*{PASSWORD}") as e:
        server_context({**keys, PASSWORD: "wrong-pw"})
    assert "wrong-pw" not in str(e.value)
    with pytest.raises(ConfigError, match="No such file"):
        server_context({CERTFILE: str(tmp_path / "missing.pem")})


def test_the_keys_are_declared_and_the_password_never_shows(tls):
    config = StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1",
                            CERTFILE: tls["cert"], KEYFILE: tls["key"], CAFILE: tls["ca"],
                            PASSWORD: "s3cret-pw"})
    assert config[CAFILE] == tls["ca"]
    assert "s3cret-pw" not in repr(config) and "s3cret-pw" not in str(config)
    assert server_context(config) is not None and client_context(config) is not None
    with pytest.raises(ConfigError, match=CERTFILE):
        StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1", CERTFILE: " "})


def test_a_worker_serves_each_application_as_its_config_says(tls):
    """Applications of one Spark session share worker processes: one that sets the TLS keys
    gets an endpoint of its own, never the plain one another application started."""
    from types import SimpleNamespace

    from kspark._iq.host import QueryHost

    host = QueryHost()
    plain = SimpleNamespace(query_host="127.0.0.1", config={})
    secured = SimpleNamespace(query_host="127.0.0.1",
                              config={CERTFILE: tls["cert"], KEYFILE: tls["key"]})
    endpoints = [host._start(plain), host._start(secured), host._start(secured)]
    try:
        assert endpoints[0].tls is None and endpoints[1].tls is not None
        assert endpoints[1] is endpoints[2] and endpoints[0].address != endpoints[1].address
    finally:
        for ep in endpoints[:2]:
            ep.stop()
