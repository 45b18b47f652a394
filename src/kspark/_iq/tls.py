"""TLS for the interactive-query endpoints (``query.endpoint.ssl.*``): the workers' server
context, the querying side's client context, and what a failed handshake tells the user.

The endpoints serve HTTPS when ``query.endpoint.ssl.certfile`` is set (a PEM certificate
chain; its key in ``query.endpoint.ssl.keyfile`` unless the certfile holds it, encrypted or
not: ``query.endpoint.ssl.keyfile.password``). The querying side speaks TLS when the
certfile or ``query.endpoint.ssl.cafile`` is set, and verifies each endpoint's certificate
against the cafile (else the system's CAs) with the host name checked: the certificate must
name the host the endpoint announces (``query.endpoint.host``, or this machine's fully
qualified name when that is ``0.0.0.0``). The token is required as over plain HTTP.

Example:
    >>> server_context({}) is None, client_context({}) is None
    (True, True)
    >>> client_context({CAFILE: "/nowhere/ca.pem"})
    Traceback (most recent call last):
    ...
    kspark.errors.ConfigError: query.endpoint.ssl.cafile: cannot load the CA certificates \
from '/nowhere/ca.pem' (No such file or directory): give a readable PEM file
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from kspark.errors import ConfigError

__all__ = ["CERTFILE", "KEYFILE", "PASSWORD", "CAFILE", "TLS_KEYS", "server_context",
           "client_context", "handshake_failure", "plain_refusal"]

CERTFILE = "query.endpoint.ssl.certfile"
KEYFILE = "query.endpoint.ssl.keyfile"
PASSWORD = "query.endpoint.ssl.keyfile.password"  # a secret: masked wherever config shows
CAFILE = "query.endpoint.ssl.cafile"
TLS_KEYS = (CERTFILE, KEYFILE, PASSWORD)  # what an endpoint serves with


def _why(e: BaseException) -> str:
    """An OSError's reason without its path, an SSLError's text (neither holds the password)."""
    if isinstance(e, OSError) and not isinstance(e, ssl.SSLError) and e.strerror:
        return e.strerror
    return str(e)


def server_context(config: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The endpoints' TLS context (TLS 1.2 or newer), or None when ``CERTFILE`` is not set;
    a ConfigError naming the keys if the certificate or key cannot be loaded."""
    certfile = config.get(CERTFILE)
    if not certfile:
        return None
    keyfile = config.get(KEYFILE) or None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile, password=config.get(PASSWORD) or None)
    except (OSError, ValueError) as e:
        where = repr(certfile) + ("" if keyfile is None else f" and its key from {keyfile!r}")
        raise ConfigError(
            f"{CERTFILE}: the interactive-query endpoint cannot load its certificate chain "
            f"from {where} ({_why(e)}): give PEM files readable on every executor, the key "
            f"in {KEYFILE} unless the certfile holds it, and {PASSWORD} if the key is "
            "encrypted") from None
    return context


def client_context(config: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The querying side's TLS context (certificates verified, host names checked), or None
    when neither ``CERTFILE`` nor ``CAFILE`` is set (plain HTTP)."""
    cafile = config.get(CAFILE) or None
    if cafile is None and not config.get(CERTFILE):
        return None
    try:
        context = ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"{CAFILE}: cannot load the CA certificates from {cafile!r} "
                          f"({_why(e)}): give a readable PEM file") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def handshake_failure(endpoint: str, error: ssl.SSLError) -> str:
    """What a failed TLS handshake with the endpoint at ``endpoint`` means, and what to do.

    >>> handshake_failure("h:1", ssl.SSLError(1, "wrong version number"))[:62]
    'the query endpoint at h:1 did not complete a TLS handshake (wr'
    """
    if isinstance(error, ssl.SSLCertVerificationError):
        return (f"the query endpoint at {endpoint} presented a certificate that was not "
                f"verified ({error.verify_message or error}): set {CAFILE} to the CA that "
                f"signed the endpoints' certificates, and make each certificate name the "
                f"host its endpoint announces ({endpoint.rpartition(':')[0]})")
    why = getattr(error, "reason", None) or error
    return (f"the query endpoint at {endpoint} did not complete a TLS handshake ({why}): "
            f"does it serve HTTPS? Its workers serve HTTPS only "
            f"when {CERTFILE} is set in the application's config; a querying side with "
            f"{CAFILE} or {CERTFILE} set speaks TLS only")


def plain_refusal(endpoint: str) -> str:
    """The answer a TLS endpoint gives a plain-HTTP request.

    >>> plain_refusal("h:1")[:55]
    'the query endpoint at h:1 serves HTTPS only: query it w'
    """
    return (f"the query endpoint at {endpoint} serves HTTPS only: query it with TLS, with "
            f"{CAFILE} (the CA that signed its certificate) set in the querying side's config")
