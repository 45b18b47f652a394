"""The settings of a Schema Registry serde: Kafka Streams' names (``schema.registry.url``,
``basic.auth.user.info``, ``value.subject.name.strategy``...) read from the serde's own
config over the application's, turned into confluent-kafka's ``SchemaRegistryClient``
config and serializer options; and the one client per registry config in a process.

Example:
    >>> s = settings_from({"schema.registry.url": "https://ann:pw@sr:8081"}, {}, is_key=False)
    >>> s.url, s.subject_of("orders", "shop.Order"), s.auto_register
    ('https://sr:8081', 'orders-value', True)
    >>> "pw" in repr(s)
    False
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kspark._config_defaults import default_of
from kspark._config_text import resolve_reference
from kspark.errors import ConfigError

__all__ = ["REGISTRY_KEYS", "SERDE_KEYS", "Settings", "settings_from", "client_for",
           "flag_problem", "strategy_problem", "shown_url"]

# The application config keys the registry serdes read (declared in kspark/config.py).
_CLIENT_KEYS = (
    "schema.registry.url", "basic.auth.credentials.source", "basic.auth.user.info",
    "schema.registry.basic.auth.user.info", "bearer.auth.credentials.source",
    "bearer.auth.token", "bearer.auth.logical.cluster", "bearer.auth.identity.pool.id",
    "bearer.auth.client.id", "bearer.auth.client.secret", "bearer.auth.scope",
    "bearer.auth.issuer.endpoint.url", "schema.registry.ssl.ca.location",
    "schema.registry.ssl.certificate.location", "schema.registry.ssl.key.location",
    "schema.registry.ssl.key.password", "schema.registry.ssl.truststore.location",
    "schema.registry.ssl.truststore.type", "schema.registry.ssl.keystore.location",
    "schema.registry.ssl.keystore.type")
_SERIALIZER_KEYS = ("auto.register.schemas", "use.latest.version", "normalize.schemas",
                    "key.subject.name.strategy", "value.subject.name.strategy")
REGISTRY_KEYS = _CLIENT_KEYS + _SERIALIZER_KEYS
# read from the application config too: the bound on retries and, for SASL_INHERIT, the login
_ALSO_READ = ("request.timeout.ms", "retry.backoff.ms", "sasl.username", "sasl.password")
# what a serde's own config takes: the keys above, and a strategy for whichever part it is
SERDE_KEYS = REGISTRY_KEYS + ("subject.name.strategy", "request.timeout.ms", "retry.backoff.ms")
_SECRETS = ("basic.auth.user.info", "schema.registry.basic.auth.user.info", "bearer.auth.token",
            "bearer.auth.client.secret", "schema.registry.ssl.key.password", "sasl.password")
_BEARER = ("bearer.auth.token", "bearer.auth.logical.cluster", "bearer.auth.identity.pool.id",
           "bearer.auth.client.id", "bearer.auth.client.secret", "bearer.auth.scope",
           "bearer.auth.issuer.endpoint.url")
# Kafka Streams' key -> confluent-kafka's SchemaRegistryClient key
_SSL = {"schema.registry.ssl.ca.location": "ssl.ca.location",
        "schema.registry.ssl.truststore.location": "ssl.ca.location",
        "schema.registry.ssl.certificate.location": "ssl.certificate.location",
        "schema.registry.ssl.keystore.location": "ssl.certificate.location",
        "schema.registry.ssl.key.location": "ssl.key.location",
        "schema.registry.ssl.key.password": "ssl.key.password"}
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_JAVA_PACKAGE = "io.confluent.kafka.serializers.subject."


def flag_problem(value: Any) -> str | None:
    """Why ``value`` is no boolean setting (``True``/``False`` or ``"true"``/``"false"``)."""
    ok = isinstance(value, bool) or str(value).strip().lower() in ("true", "false")
    return None if ok else "must be true or false"


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


def strategy_problem(value: Any) -> str | None:
    """Why ``value`` is no subject name strategy: one of Java's three (short or
    fully-qualified name), or a function ``(SerializationContext, record_name) -> subject``."""
    if callable(value) or _short(value) in _STRATEGIES:
        return None
    return f"must be one of {', '.join(_STRATEGIES)} (or {_JAVA_PACKAGE}<name>), or a function"


def _short(value: Any) -> str:
    return str(value).strip().removeprefix(_JAVA_PACKAGE)


def shown_url(url: str) -> str:
    """The registry URL(s) without credentials, to name in messages.

    >>> shown_url("https://ann:secret@sr1:8081, http://sr2")
    'https://sr1:8081,http://sr2'
    """
    shown = []
    for one in str(url).split(","):
        parts = urlsplit(one.strip())
        host = parts.netloc.rsplit("@", 1)[-1]
        shown.append(urlunsplit(parts._replace(netloc=host)))
    return ",".join(shown)


@dataclass(frozen=True)
class Settings:
    """One serde's resolved settings (hashable: the key of the per-process caches)."""

    client: tuple[tuple[str, Any], ...] = field(repr=False)
    url: str
    is_key: bool
    auto_register: bool
    use_latest: bool
    normalize: bool
    strategy: Any  # a Java strategy's short name, or the user's function
    timeout_ms: int
    backoff_ms: int
    secrets: tuple[str, ...] = field(repr=False)

    @property
    def part(self) -> str:
        return "key" if self.is_key else "value"

    def strategy_function(self) -> Callable[..., Any]:
        """confluent-kafka's function for the strategy (the user's, as given)."""
        if callable(self.strategy):
            return self.strategy
        from confluent_kafka import schema_registry as sr

        return {"TopicNameStrategy": sr.topic_subject_name_strategy,
                "RecordNameStrategy": sr.record_subject_name_strategy,
                "TopicRecordNameStrategy": sr.topic_record_subject_name_strategy}[self.strategy]

    def subject_of(self, topic: str, record_name: str | None) -> str:
        """The subject a record of ``topic`` goes under, as words where it is not known."""
        if self.strategy == "TopicNameStrategy":
            return f"{topic}-{self.part}"
        name = record_name or "<the writer's record name>"
        if self.strategy == "RecordNameStrategy":
            return name
        if self.strategy == "TopicRecordNameStrategy":
            return f"{topic}-{name}"
        return f"<{getattr(self.strategy, '__name__', 'the subject name strategy')}'s subject>"

    def scrub(self, text: str) -> str:
        """``text`` with every secret of these settings replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def settings_from(own: Mapping[str, Any], app: Mapping[str, Any], is_key: bool) -> Settings:
    """The settings of a serde whose own config is ``own`` (over ``app``, the application
    config) for keys (``is_key``) or values; a ConfigError names a missing or bad key."""
    merged = {k: app[k] for k in REGISTRY_KEYS + _ALSO_READ if app.get(k) is not None}
    merged.update({k: v for k, v in own.items() if v is not None})
    url = merged.get("schema.registry.url")
    if not url or not str(url).strip():
        raise ConfigError("a Schema Registry serde needs schema.registry.url: set it in the "
                          "application config or in the serde's config")
    for key in ("auto.register.schemas", "use.latest.version", "normalize.schemas"):
        if key in merged and flag_problem(merged[key]):
            raise ConfigError(f"invalid value {merged[key]!r} for {key!r}: must be true or false")
    part = "key" if is_key else "value"
    strategy = merged.get("subject.name.strategy", merged.get(f"{part}.subject.name.strategy",
                                                               "TopicNameStrategy"))
    if strategy_problem(strategy):
        raise ConfigError(f"invalid subject name strategy {strategy!r} for the {part}s: "
                          f"{strategy_problem(strategy)}")
    timeout = int(merged.get("request.timeout.ms", default_of("request.timeout.ms")))
    return Settings(
        client=tuple(sorted(_client_conf(merged, str(url).strip(), timeout).items())),
        url=shown_url(url), is_key=is_key,
        auto_register=_flag(merged.get("auto.register.schemas", True)),
        use_latest=_flag(merged.get("use.latest.version", False)),
        normalize=_flag(merged.get("normalize.schemas", False)),
        strategy=strategy if callable(strategy) else _short(strategy), timeout_ms=timeout,
        backoff_ms=int(merged.get("retry.backoff.ms", default_of("retry.backoff.ms"))),
        secrets=tuple(str(merged[k]) for k in _SECRETS if merged.get(k)) + _url_secrets(url))


def _url_secrets(url: str) -> tuple[str, ...]:
    return tuple(p.password for one in str(url).split(",")
                 if (p := urlsplit(one.strip())).password)


def _client_conf(merged: Mapping[str, Any], url: str, timeout_ms: int) -> dict[str, Any]:
    """confluent-kafka's SchemaRegistryClient config: kspark retries itself (max.retries 0),
    each request bounded by request.timeout.ms."""
    conf: dict[str, Any] = {"url": url, "max.retries": 0, "timeout": timeout_ms / 1000}
    conf.update(_basic_auth(merged))
    source = merged.get("bearer.auth.credentials.source")
    if source:
        if source not in ("STATIC_TOKEN", "OAUTHBEARER"):
            raise ConfigError(f"bearer.auth.credentials.source {source!r}: kspark's registry "
                              "client takes STATIC_TOKEN or OAUTHBEARER")
        conf["bearer.auth.credentials.source"] = source
        conf.update({k: str(merged[k]) for k in _BEARER if merged.get(k)})
    for kind in ("truststore", "keystore"):
        store_type = merged.get(f"schema.registry.ssl.{kind}.type")
        if store_type and str(store_type).upper() != "PEM":
            raise ConfigError(f"schema.registry.ssl.{kind}.type {store_type!r}: kspark's "
                              "registry client (Python) reads PEM files only; convert the "
                              "store to PEM (openssl pkcs12 -nodes) and set the type to PEM")
    for key, theirs in _SSL.items():
        if merged.get(key):
            conf[theirs] = str(merged[key])
    return conf


def _basic_auth(merged: Mapping[str, Any]) -> dict[str, str]:
    info = merged.get("basic.auth.user.info") or merged.get(
        "schema.registry.basic.auth.user.info")
    source = str(merged.get("basic.auth.credentials.source") or
                 ("USER_INFO" if info else "URL")).upper()
    if source == "URL":
        return {}
    if source == "SASL_INHERIT":
        user, password = merged.get("sasl.username"), merged.get("sasl.password")
        if not user or not password:
            raise ConfigError("basic.auth.credentials.source=SASL_INHERIT takes the login "
                              "from sasl.username and sasl.password: set both")
        return {"basic.auth.user.info": f"{user}:{password}"}
    if source != "USER_INFO":
        raise ConfigError(f"basic.auth.credentials.source {source!r}: use URL, USER_INFO or "
                          "SASL_INHERIT")
    if not info or ":" not in str(info):
        raise ConfigError("basic.auth.credentials.source=USER_INFO needs basic.auth.user.info "
                          "as <user>:<password>")
    return {"basic.auth.user.info": str(info)}


def own_config(config: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    """A serde's own ``config``, checked (known keys, hashable values) and with ``${env:}``
    and ``${file:}`` references read."""
    out: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if key not in SERDE_KEYS:
            raise ConfigError(f"{what} does not take config key {key!r}; it takes "
                              f"{', '.join(SERDE_KEYS)}")
        try:
            hash(value)
        except TypeError:
            raise ConfigError(f"config key {key!r} of {what} takes a str, int, bool or "
                              f"function, got {type(value).__name__}") from None
        out[key] = resolve_reference(key, value)
    return out


_CLIENTS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def client_for(settings: Settings) -> Any:
    """The process's one confluent-kafka ``SchemaRegistryClient`` for ``settings``' client
    config (``mock://<scope>`` URLs: one in-memory registry per scope and process)."""
    with _LOCK:
        client = _CLIENTS.get(settings.client)
        if client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            try:
                client = SchemaRegistryClient.new_client(dict(settings.client))
            except (ValueError, TypeError, OSError) as e:
                raise ConfigError(f"cannot make a Schema Registry client for {settings.url}: "
                                  f"{settings.scrub(str(e))}") from None
            _CLIENTS[settings.client] = client
        return client
