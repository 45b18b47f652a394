"""Where every Kafka client kspark uses is constructed: :func:`new_consumer`,
:func:`new_producer` and :func:`new_admin` take a config from
:class:`~kspark._kafka.settings.ClientSettings` and give each client an error callback and a
logger that keep its errors (so the real cause of a later timeout can be named, see
:mod:`kspark._kafka.security_errors`) instead of dropping them.

Setting the environment variable ``KSPARK_CLIENT_AUDIT`` to a file path makes every process
(driver, Spark Python workers, CLI tools) append one JSON line per client it creates: its
kind, purpose, client id, security protocol, SASL mechanism and the NAMES of its settings
(never their values), so a platform team can check which clients an application makes and
that each has its security settings.

Example:
    >>> from kspark._kafka.factory import ClientErrors
    >>> errs = ClientErrors("admin", "check")
    >>> errs.last_security is None
    True
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["new_consumer", "new_producer", "new_admin", "ClientErrors", "errors_of",
           "last_security_error", "SECURITY_CODES"]

log = logging.getLogger("kspark.librdkafka")
AUDIT_ENV = "KSPARK_CLIENT_AUDIT"


def _codes() -> set[int]:
    from confluent_kafka import KafkaError

    names = ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL",
             "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
             "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
             "DELEGATION_TOKEN_AUTHORIZATION_FAILED", "UNSUPPORTED_SASL_MECHANISM",
             "ILLEGAL_SASL_STATE")
    return {getattr(KafkaError, n) for n in names if hasattr(KafkaError, n)}


SECURITY_CODES = _codes()
_SECURITY_WORDS = ("SSL", "SASL", "uthenticat", "uthoriz", "certificate", "handshake")
_LAST: dict[str, Any] = {"security": None}
_LOCK = threading.Lock()


class ClientErrors:
    """The errors and log lines of one client; a security error is also kept per process."""

    def __init__(self, kind: str, purpose: str):
        self.kind, self.purpose = kind, purpose
        self.errors: deque[tuple[float, int, str]] = deque(maxlen=20)
        self.log_lines: deque[str] = deque(maxlen=20)
        self.last_security: tuple[float, int, str] | None = None
        self.chained: Callable[[Any], None] | None = None

    def on_error(self, err: Any) -> None:
        """librdkafka's error_cb: keep it (and pass it on to a callback the caller gave)."""
        entry = (time.monotonic(), err.code(), err.str())
        self.errors.append(entry)
        if err.code() in SECURITY_CODES or any(w in err.str() for w in _SECURITY_WORDS):
            self.last_security = entry
            with _LOCK:
                _LAST["security"] = entry
            log.warning("kafka %s client (%s): %s", self.kind, self.purpose, err.str())
        if self.chained is not None:
            self.chained(err)

    def log(self, level: int, fmt: str, *args: Any) -> None:
        """librdkafka's log lines: kept; security-related ones logged as warnings."""
        line = fmt % args if args else fmt
        self.log_lines.append(line)
        security = any(w in line for w in _SECURITY_WORDS)
        # confluent-kafka passes Python logging levels
        log.log(logging.WARNING if security and level >= logging.WARNING else logging.DEBUG,
                "kafka %s client (%s): %s", self.kind, self.purpose, line)

    def security_since(self, t0: float) -> tuple[int, str] | None:
        """The last security error this client saw after ``t0`` (time.monotonic())."""
        e = self.last_security
        return (e[1], e[2]) if e is not None and e[0] >= t0 else None

    def last(self) -> str | None:
        return self.errors[-1][2] if self.errors else None


_BY_CLIENT: dict[int, ClientErrors] = {}


def errors_of(client: Any) -> ClientErrors | None:
    """The error record of a client made here (None for one made elsewhere)."""
    return _BY_CLIENT.get(id(client))


def last_security_error(since: float = 0.0) -> tuple[int, str] | None:
    """The last security error any client of this process saw after ``since``."""
    e = _LAST["security"]
    return (e[1], e[2]) if e is not None and e[0] >= since else None


def _make(kind: str, cls: Any, conf: Mapping[str, Any], purpose: str) -> Any:
    errors = ClientErrors(kind, purpose)
    full = dict(conf)
    errors.chained = full.pop("error_cb", None)
    full["error_cb"] = errors.on_error
    full.setdefault("logger", errors)
    _audit(kind, purpose, conf)
    client = cls(full)
    _BY_CLIENT[id(client)] = errors
    return client


def _audit(kind: str, purpose: str, conf: Mapping[str, Any]) -> None:
    path = os.environ.get(AUDIT_ENV)
    if not path:
        return
    line = json.dumps({"pid": os.getpid(), "kind": kind, "purpose": purpose,
                       "client.id": conf.get("client.id"),
                       "security.protocol": conf.get("security.protocol", "PLAINTEXT"),
                       "sasl.mechanism": conf.get("sasl.mechanism"),
                       "keys": sorted(k for k in conf if k not in ("logger", "error_cb",
                                                                   "on_delivery"))})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def new_consumer(conf: Mapping[str, Any], purpose: str) -> Any:
    """A confluent_kafka Consumer for ``conf`` (from ClientSettings.conf)."""
    from confluent_kafka import Consumer

    return _make("consumer", Consumer, conf, purpose)


def new_producer(conf: Mapping[str, Any], purpose: str) -> Any:
    """A confluent_kafka Producer for ``conf`` (from ClientSettings.conf)."""
    from confluent_kafka import Producer

    return _make("producer", Producer, conf, purpose)


def new_admin(conf: Mapping[str, Any], purpose: str) -> Any:
    """A confluent_kafka AdminClient for ``conf`` (from ClientSettings.conf)."""
    from confluent_kafka.admin import AdminClient

    return _make("admin", AdminClient, conf, purpose)
