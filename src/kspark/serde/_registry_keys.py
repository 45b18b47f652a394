"""The application config keys of the Schema Registry serdes, as kspark.config declares
them: ``(name, type, default, doc, validator)`` each (docs/config.md lists them, with
docs/serdes.md). A serde's own config overrides them; secrets (``basic.auth.user.info``,
``bearer.auth.token``, ``bearer.auth.client.secret``, ``schema.registry.ssl.key.password``)
may be ``${env:NAME}`` or ``${file:PATH}`` references, and are never shown.

Example:
    >>> [k[0] for k in registry_config() if k[2] is not None]
    ['auto.register.schemas', 'use.latest.version', 'normalize.schemas', 'key.subject.name.strategy', 'value.subject.name.strategy']
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

from typing import Any

from kspark.serde._registry_settings import flag_problem, strategy_problem

__all__ = ["registry_config"]

_SEE = "See docs/serdes.md."


def _pem(v: Any) -> str | None:
    return None if str(v).upper() == "PEM" else (
        "kspark's registry client reads PEM files only: convert the store to PEM")


_TEXT = {  # the keys taking text, default none
    "schema.registry.url": "Schema Registry URL(s), comma-separated; mock://<scope> is an "
    "in-memory registry per scope and process (for tests).",
    "basic.auth.credentials.source": "URL (credentials in the URL), USER_INFO "
    "(basic.auth.user.info) or SASL_INHERIT (sasl.username and sasl.password); default "
    "USER_INFO when basic.auth.user.info is set, else URL.",
    "basic.auth.user.info": "<user>:<password> for the registry (a secret).",
    "schema.registry.basic.auth.user.info": "The same, under Java's other name.",
    "bearer.auth.credentials.source": "STATIC_TOKEN (bearer.auth.token) or OAUTHBEARER "
    "(a token from bearer.auth.issuer.endpoint.url for bearer.auth.client.id/secret).",
    **dict.fromkeys(("bearer.auth.token", "bearer.auth.logical.cluster",
                     "bearer.auth.identity.pool.id", "bearer.auth.client.id",
                     "bearer.auth.client.secret", "bearer.auth.scope",
                     "bearer.auth.issuer.endpoint.url"), _SEE),
    "schema.registry.ssl.ca.location": "PEM CA file the registry's certificate is checked "
    "with (Java's schema.registry.ssl.truststore.location with type PEM is read the same).",
    "schema.registry.ssl.truststore.location": _SEE,
    "schema.registry.ssl.certificate.location": "PEM client certificate for mutual TLS (Java's "
    "schema.registry.ssl.keystore.location with type PEM is read the same).",
    "schema.registry.ssl.keystore.location": _SEE,
    "schema.registry.ssl.key.location": "PEM private key of that certificate.",
    "schema.registry.ssl.key.password": "Its password (a secret).",
}


def registry_config() -> list[tuple[str, Any, Any, str, Any]]:
    """``(name, type, default, doc, validator)`` of every registry key."""
    keys: list[tuple[str, Any, Any, str, Any]] = [
        (name, str, None, doc, None) for name, doc in _TEXT.items()]
    keys += [(f"schema.registry.ssl.{k}.type", str, None, "PEM only.", _pem)
             for k in ("truststore", "keystore")]
    keys += [
        ("auto.register.schemas", object, True, "Registry serdes register their schema "
         "under its subject when writing.", flag_problem),
        ("use.latest.version", object, False, "Registry serdes read into the subject's latest "
         "schema, and write with it when auto.register.schemas is false.", flag_problem),
        ("normalize.schemas", object, False, "Registry serdes normalize a schema before "
         "registering or looking it up.", flag_problem),
    ]
    keys += [(f"{part}.subject.name.strategy", object, "TopicNameStrategy", f"The subject of "
              f"a {part}'s schema: TopicNameStrategy, RecordNameStrategy or "
              f"TopicRecordNameStrategy (Java's class names too), or a function.",
              strategy_problem) for part in ("key", "value")]
    return keys
