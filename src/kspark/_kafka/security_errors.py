"""Name the real cause of a Kafka failure: authentication, the TLS certificate, or the
missing ACL (resource type, name, operation) with the ``kafka-acls`` command that grants it.

Example:
    >>> from kspark._kafka.settings import ClientSettings
    >>> s = ClientSettings("b:9093", (("sasl.username", "alice"),), (), "app")
    >>> e = authorization(s, "TOPIC", "in", "READ", "Broker: Topic authorization failed")
    >>> print(str(e).split(". Grant")[0])
    User:alice is not authorized to READ topic 'in' (Broker: Topic authorization failed)
    >>> "--operation Read --topic in" in str(e)
    True
"""

from __future__ import annotations

from typing import Any

from kspark._kafka.settings import ClientSettings
from kspark.errors import (AuthenticationError, AuthorizationError, CertificateError,
                           KafkaSecurityError)
from kspark._kafka.factory import errors_of, last_security_error

__all__ = ["authentication", "certificate", "authorization", "classify", "check_client",
           "authorization_for"]

_FLAG = {"TOPIC": "--topic", "GROUP": "--group", "TRANSACTIONAL_ID": "--transactional-id",
         "CLUSTER": "--cluster"}


def authentication(settings: ClientSettings, detail: str) -> AuthenticationError:
    """The brokers refused the client's SASL credentials."""
    c = dict(settings.common)
    mech = c.get("sasl.mechanism", "(sasl.mechanism not set: GSSAPI)")
    user = c.get("sasl.username", "(none)")
    proto = c.get("security.protocol", "PLAINTEXT")
    if str(mech).startswith("SCRAM"):
        todo = (f"Check sasl.username and sasl.password (or sasl.jaas.config) and that the "
                f"user has {mech} credentials on the cluster (kafka-configs --alter "
                f"--entity-type users --entity-name {user} --add-config '{mech}=[password=...]')")
    else:
        todo = ("Check the credentials for this mechanism (sasl.username/sasl.password for "
                "PLAIN, sasl.oauthbearer.* for OAUTHBEARER, sasl.kerberos.* for GSSAPI) and "
                "that the brokers' listener enables it (sasl.enabled.mechanisms)")
    return AuthenticationError(
        f"authentication failed at {settings.bootstrap}: the brokers refused user {user!r} "
        f"(SASL mechanism {mech}, listener security.protocol={proto}): {detail}. {todo}")


def certificate(settings: ClientSettings, detail: str) -> CertificateError:
    """The TLS handshake failed: untrusted or mismatched certificate, or ours refused."""
    c = dict(settings.common)
    ca = c.get("ssl.ca.location") or ("ssl.ca.pem (inline)" if "ssl.ca.pem" in c else
                                      "the system's CA store (ssl.ca.location not set)")
    if "verify failed" in detail or "unable to get" in detail or "self-signed" in detail \
            or "self signed" in detail:
        what = (f"the broker's certificate is not trusted: it is not signed by a CA in {ca}. "
                "Set ssl.ca.location to the file of the CA that signed the brokers' "
                "certificates")
    elif "match" in detail or "hostname" in detail.lower():
        what = ("the broker's certificate does not name the host kspark connected to: use "
                "the host names in the certificate in bootstrap.servers (or, only for "
                "testing, ssl.endpoint.identification.algorithm=none)")
    else:
        what = ("check ssl.ca.location, and ssl.certificate.location/ssl.key.location if the "
                "brokers require client certificates (mTLS)")
    return CertificateError(f"TLS handshake with the brokers at {settings.bootstrap} failed: "
                            f"{detail}; {what}")


def authorization(settings: ClientSettings, resource_type: str, name: str, operation: str,
                  detail: str, prefixed: bool = False) -> AuthorizationError:
    """``principal`` lacks ``operation`` on ``resource_type`` ``name``; a resource named
    after the application (its internal topics, groups, transactional ids) is granted by
    the prefix ``application.id``, as Kafka Streams' ACLs are."""
    principal = settings.principal()
    shown = "the cluster" if resource_type == "CLUSTER" else \
        f"{resource_type.lower().replace('_', ' ')} {name!r}"
    grant = name
    if resource_type != "CLUSTER" and settings.app_id != "kspark" and \
            name.startswith(settings.app_id):
        grant, prefixed = settings.app_id, True
    target = _FLAG[resource_type] + ("" if resource_type == "CLUSTER" else f" {grant}")
    pattern = " --resource-pattern-type prefixed" if prefixed else ""
    op = operation.title().replace("_", "")
    who = principal if principal.startswith("User:") else "<principal>"
    return AuthorizationError(
        f"{principal} is not authorized to {operation} {shown} ({detail}). Grant it: "
        f"kafka-acls --bootstrap-server {settings.bootstrap} --command-config admin.properties "
        f"--add --allow-principal {who} --operation {op} {target}{pattern} "
        "(docs/security.md lists every ACL an application needs)",
        resource_type, name, operation)


def classify(settings: ClientSettings, code: int, detail: str) -> KafkaSecurityError | None:
    """The security error a librdkafka error code and text mean, if any (authentication or
    TLS; authorization needs the resource, see :func:`authorization_for`)."""
    from confluent_kafka import KafkaError

    if code in (KafkaError._AUTHENTICATION, getattr(KafkaError, "SASL_AUTHENTICATION_FAILED", -1),
                getattr(KafkaError, "UNSUPPORTED_SASL_MECHANISM", -1)) \
            and ("SSL" not in detail or "SASL" in detail):
        return authentication(settings, detail)
    if code == KafkaError._SSL or "SSL handshake" in detail or "certificate" in detail:
        return certificate(settings, detail)
    if code in (KafkaError._AUTHENTICATION,):
        return authentication(settings, detail)
    return None


def authorization_for(settings: ClientSettings, code: int, detail: str,
                      resource: dict[str, tuple[str, str, bool]]) -> AuthorizationError | None:
    """An AuthorizationError when ``code`` is an authorization failure: ``resource`` maps a
    resource type ("TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER") to the (name,
    operation, prefixed) the caller was using."""
    from confluent_kafka import KafkaError

    rtype = {KafkaError.TOPIC_AUTHORIZATION_FAILED: "TOPIC",
             KafkaError.GROUP_AUTHORIZATION_FAILED: "GROUP",
             KafkaError.CLUSTER_AUTHORIZATION_FAILED: "CLUSTER",
             KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "TRANSACTIONAL_ID"}.get(code)
    if rtype is None:
        return None
    name, op, prefixed = resource.get(rtype, ("kafka-cluster" if rtype == "CLUSTER" else "?",
                                              "IDEMPOTENT_WRITE" if rtype == "CLUSTER" else
                                              "DESCRIBE", False))
    return authorization(settings, rtype, name, op, detail, prefixed)


def check_client(settings: ClientSettings, client: Any, since: float) -> None:
    """Raise the security error ``client`` (made by kspark._kafka.factory) saw after
    ``since``, if any: called when an operation timed out or failed unexplained."""
    if hasattr(client, "poll") and not hasattr(client, "subscribe"):
        client.poll(0)  # an admin client or producer serves its error callbacks in poll
    errors = errors_of(client)
    seen = errors.security_since(since) if errors is not None else None
    seen = seen or last_security_error(since)
    if seen is not None:
        error = classify(settings, *seen)
        if error is not None:
            raise error
