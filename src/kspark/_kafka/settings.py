"""The one builder of Kafka client configs (design brief, 10): every client kspark makes —
on the driver, on executors, in the CLI tools — gets its settings from :class:`ClientSettings`.

Kafka Streams' way: the common client settings (``security.protocol``, ``sasl.*``,
``ssl.*``, ``socket.*``, ``client.dns.lookup``, ...) at top level apply to every client;
``consumer.*``, ``producer.*``, ``admin.*`` and ``restore.consumer.*`` override them per
kind; keys kspark's guarantees depend on are refused (:func:`check_owned`), and kspark's own
settings for a client (its group, isolation level, transactional id) always win.

Example:
    >>> s = ClientSettings.from_config({"bootstrap.servers": "b:9093",
    ...     "application.id": "app", "security.protocol": "SASL_SSL",
    ...     "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
    ...     "sasl.password": "s3cret", "consumer.fetch.wait.max.ms": 10})
    >>> conf = s.conf("consumer", "reader", {"group.id": "app"})
    >>> conf["security.protocol"], conf["fetch.wait.max.ms"], conf["client.id"]
    ('SASL_SSL', 10, 'app-reader')
    >>> "s3cret" in repr(s)
    False
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kspark._config_defaults import default_of
from kspark.errors import ConfigError

__all__ = ["ClientSettings", "as_settings", "is_common_key", "is_secret_key", "check_owned",
           "CLIENT_PREFIXES", "principal_of", "redacted"]

# top-level keys that apply to every client (Kafka Streams' common client configs)
_COMMON_PREFIXES = ("security.", "sasl.", "ssl.", "socket.", "reconnect.backoff.",
                    "retry.backoff.")
_COMMON_KEYS = {"client.dns.lookup", "client.id", "enable.ssl.certificate.verification",
                "broker.address.family", "metadata.max.age.ms", "connections.max.idle.ms",
                "topic.metadata.refresh.interval.ms", "client.rack"}
# per-kind prefixes, most general first; a kind reads each of its prefixes in order
CLIENT_PREFIXES = ("consumer.", "producer.", "admin.", "restore.consumer.")
_KINDS = {"consumer": ("consumer.",), "producer": ("producer.",), "admin": ("admin.",),
          "restore.consumer": ("consumer.", "restore.consumer.")}
# librdkafka holds a partition's next fetch back for fetch.queue.backoff.ms (1 s by default)
# once its local queue holds queued.min.messages (100,000): a stream thread that drains that
# in less than a second then waits for its input (W2 in real-time mode spent half its time
# in poll; 4M records: 141,867 -> 285,640 records/s). Java's consumer fetches again as soon
# as its buffer drains. A user's consumer.fetch.queue.backoff.ms wins.
_KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "consumer": {"fetch.queue.backoff.ms": 5}, "restore.consumer": {"fetch.queue.backoff.ms": 5}}

_SECRET_WORDS = ("password", "secret", "jaas", "token", "credential", "user.info")
_SECRET_KEYS = {"ssl.key.pem", "ssl_key", "sasl.oauthbearer.config"}


def is_common_key(key: str) -> bool:
    """True for a top-level key that applies to every client (``security.protocol``, ...)."""
    return key in _COMMON_KEYS or key.startswith(_COMMON_PREFIXES)


def is_secret_key(key: str) -> bool:
    """True for a key whose value must never be shown (passwords, keys, tokens).

    >>> is_secret_key("producer.sasl.password"), is_secret_key("ssl.key.pem")
    (True, True)
    >>> is_secret_key("ssl.ca.location")
    False
    """
    bare = key
    for prefix in CLIENT_PREFIXES:
        if key.startswith(prefix):
            bare = key[len(prefix):]
    return any(w in bare for w in _SECRET_WORDS) or bare in _SECRET_KEYS


def redacted(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` with every secret value replaced by ``'***'``."""
    return {k: "***" if is_secret_key(k) else v for k, v in conf.items()}


# Keys whose value kspark's guarantees depend on: {key: (allowed values, why)}
_OWNED: dict[str, tuple[tuple[str, ...], str]] = {
    "group.id": ((), "kspark's consumers use groups named after application.id (its offsets "
                 "and progress live there); change application.id instead"),
    "isolation.level": (("read_committed",), "kspark reads with read_committed so that "
                        "aborted transactions are never processed"),
    "enable.auto.commit": (("false",), "kspark commits input offsets itself, with the "
                           "output they produced; use commit.interval.ms"),
    "transactional.id": ((), "under exactly_once_v2 each task's producer has the stable id "
                         "<application.id>-<task> that fences its older attempts"),
    "enable.idempotence": (("true",), "kspark's producers are idempotent so that retries "
                           "neither duplicate nor reorder records"),
    "acks": (("all", "-1"), "an idempotent producer needs acks=all, and exactly-once and "
             "progress tracking rely on it"),
}


def check_owned(config: Mapping[str, Any]) -> None:
    """Refuse client keys that would weaken kspark's guarantees, naming the key and why.

    >>> check_owned({"consumer.isolation.level": "read_uncommitted"})
    Traceback (most recent call last):
    ...
    kspark.errors.ConfigError: config key 'consumer.isolation.level' cannot be set to 'read_uncommitted': kspark reads with read_committed so that aborted transactions are never processed; remove the key
    """  # noqa: E501 - a doctest's expected output is one line
    for key, value in config.items():
        for prefix in CLIENT_PREFIXES:
            if not key.startswith(prefix):
                continue
            owned = _OWNED.get(key[len(prefix):])
            if owned is None:
                continue
            allowed, why = owned
            if str(value).lower() not in allowed:
                raise ConfigError(f"config key {key!r} cannot be set to {value!r}: {why}; "
                                  "remove the key")


_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _from_jaas(jaas: str) -> dict[str, str]:
    """Kafka's ``sasl.jaas.config`` for PLAIN and SCRAM as librdkafka's username/password."""
    if "PlainLoginModule" not in jaas and "ScramLoginModule" not in jaas:
        raise ConfigError("sasl.jaas.config: kspark's clients (librdkafka) understand "
                          "PlainLoginModule and ScramLoginModule; for OAUTHBEARER set "
                          "sasl.oauthbearer.* keys, for GSSAPI sasl.kerberos.* keys")
    found = dict(_JAAS.findall(jaas))
    if "username" not in found or "password" not in found:
        raise ConfigError("sasl.jaas.config must give username=\"...\" and password=\"...\"")
    return {"sasl.username": found["username"], "sasl.password": found["password"]}


def _pairs(conf: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(conf.items()))


@dataclass(frozen=True)
class ClientSettings:
    """Plain, picklable data (it travels to executors in the task's closure): the bootstrap
    servers, the common settings, the per-kind overrides and the client.id prefix."""

    bootstrap: str
    common: tuple[tuple[str, Any], ...] = ()
    kinds: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    client_id_prefix: str = "kspark"
    app_id: str = "kspark"
    task_timeout_ms: int = 300_000  # how long a stalled client call is retried (retry.Stall)
    retry_backoff_ms: int = 100

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ClientSettings":
        """The settings of an application's config (a StreamsConfig or a plain mapping)."""
        check_owned(config)
        common: dict[str, Any] = {}
        for key, value in config.items():
            if is_common_key(key) and key != "client.id":
                common[key] = value
        if "sasl.jaas.config" in common:
            common.update(_from_jaas(str(common.pop("sasl.jaas.config"))))
        if "sasl.mechanisms" in common and "sasl.mechanism" not in common:
            common["sasl.mechanism"] = common.pop("sasl.mechanisms")
        kinds = []
        for prefix in CLIENT_PREFIXES:
            keys = {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}
            if "sasl.jaas.config" in keys:
                keys.update(_from_jaas(str(keys.pop("sasl.jaas.config"))))
            kinds.append((prefix[:-1], _pairs(keys)))
        app_id = str(config.get("application.id") or "kspark")
        prefix = config.get("client.id") or app_id
        bounds = [int(config.get(k, default_of(k)))
                  for k in ("task.timeout.ms", "retry.backoff.ms")]
        return cls(str(config["bootstrap.servers"]), _pairs(common), tuple(kinds), str(prefix),
                   app_id, *bounds)

    def conf(self, kind: str, purpose: str | None = None,
             owned: Mapping[str, Any] | None = None,
             defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The librdkafka config of one client: kspark's ``defaults``, the common settings,
        the kind's overrides, then ``owned`` (kspark's own keys for this client, which
        always win)."""
        if kind not in _KINDS:
            raise ValueError(f"unknown client kind {kind!r}")
        by_prefix = dict(self.kinds)
        out: dict[str, Any] = {**_KIND_DEFAULTS.get(kind, {}), **(defaults or {})}
        out["bootstrap.servers"] = self.bootstrap
        if purpose:
            out["client.id"] = f"{self.client_id_prefix}-{purpose}"
        out.update(self.common)
        for prefix in _KINDS[kind]:
            out.update(by_prefix.get(prefix[:-1], ()))
        out.update(owned or {})
        return out

    def principal(self) -> str:
        """The principal the clients authenticate as, as ACLs name it (best effort)."""
        return principal_of(dict(self.common))

    def __repr__(self) -> str:
        return (f"ClientSettings(bootstrap={self.bootstrap!r}, "
                f"common={redacted(dict(self.common))!r}, client_id_prefix="
                f"{self.client_id_prefix!r})")


def principal_of(conf: Mapping[str, Any]) -> str:
    """``User:<name>`` for SASL PLAIN/SCRAM users, else a description of what ACLs match."""
    user = conf.get("sasl.username")
    if user:
        return f"User:{user}"
    proto = str(conf.get("security.protocol", "PLAINTEXT")).upper()
    if proto == "SSL":
        return "the principal of the client certificate (User:<its distinguished name>)"
    if "sasl.oauthbearer.client.id" in conf:
        return f"the OAuth principal of client {conf['sasl.oauthbearer.client.id']!r}"
    return "User:ANONYMOUS" if proto == "PLAINTEXT" else "this application's principal"


def as_settings(where: "ClientSettings | str | Mapping[str, Any]") -> ClientSettings:
    """Settings from settings, a bare bootstrap address (an unsecured cluster), or a config."""
    if isinstance(where, ClientSettings):
        return where
    if isinstance(where, str):
        return ClientSettings(where)
    return ClientSettings.from_config(where)
