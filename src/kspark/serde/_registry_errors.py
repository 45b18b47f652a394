"""What a Schema Registry serde does when the registry fails: a registry that cannot be
reached (or answers 408, 429 or 5xx) is retried with backoff within ``request.timeout.ms``;
every failure ends as one :class:`~kspark.errors.SerializationError` naming the topic, key
or value, schema id, subject and the registry's URL (never its credentials), which the
task's ``deserialization.exception.handler`` (or ``production.exception.handler``) handles.

Example:
    >>> from kspark.serde._registry_settings import settings_from
    >>> s = settings_from({"schema.registry.url": "http://sr:8081"}, {}, is_key=False)
    >>> e = registry_error(Failure("Serdes.avro()", s, "read", "t", 7, "t-value"),
    ...                    ValueError("bad"))
    >>> str(e)
    "Serdes.avro() cannot read the value of topic 't' (schema id 7, subject 't-value'): the value does not match the schema (ValueError: bad)"
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kspark.errors import KSparkError, SchemaRegistryUnreachableError, SerializationError
from kspark.serde._registry_settings import Settings

__all__ = ["Failure", "UnreachableError", "with_retries", "registry_error"]

log = logging.getLogger("kspark")
_RETRIABLE = (408, 429, 500, 502, 503, 504)


class UnreachableError(Exception):
    """The registry did not answer within ``request.timeout.ms`` (the last error chained)."""

    def __init__(self, tries: int, last: BaseException):
        super().__init__(f"{type(last).__name__}: {last}")
        self.tries = tries


def _transient(e: BaseException) -> bool:
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - confluent-kafka's fallback
        import httpx  # type: ignore[no-redef]
    status = getattr(e, "http_status_code", None)
    if type(e).__name__ == "SchemaRegistryError":
        return status in _RETRIABLE
    return isinstance(e, (httpx.TransportError, ConnectionError, TimeoutError))


def with_retries(settings: Settings, op: Callable[[], Any]) -> Any:
    """``op()``, tried again while the registry cannot be reached: pauses of
    ``retry.backoff.ms`` doubling up to a second, for at most ``request.timeout.ms``; then
    :class:`UnreachableError`. Any other error is raised at once."""
    deadline = time.monotonic() + settings.timeout_ms / 1000
    pause, tries = settings.backoff_ms / 1000, 0
    while True:
        tries += 1
        try:
            return op()
        except Exception as e:  # noqa: BLE001 - sorted into transient or not just below
            if not _transient(e):
                raise
            if time.monotonic() + pause >= deadline:
                raise UnreachableError(tries, e) from e
            if tries == 1:
                log.warning("the schema registry at %s does not answer (%s); retrying for up "
                            "to %d ms (request.timeout.ms)", settings.url,
                            settings.scrub(f"{type(e).__name__}: {e}"), settings.timeout_ms)
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


@dataclass(frozen=True)
class Failure:
    """Where a serde failed: which serde, reading or writing which part of which topic,
    the schema id (None: not known) and the subject."""

    serde: str
    settings: Settings
    op: str  # "read" or "write"
    topic: str
    schema_id: int | str | None
    subject: str

    def head(self) -> str:
        sid = "not known yet" if self.schema_id is None else self.schema_id
        return (f"{self.serde} cannot {self.op} the {self.settings.part} of topic "
                f"{self.topic!r} (schema id {sid}, subject {self.subject!r})")


def registry_error(where: Failure, e: BaseException) -> KSparkError:
    """The SerializationError for ``e``, raised by a registry serializer at ``where``; a
    registry that did not answer is a SchemaRegistryUnreachableError (the record is not
    skipped: the task attempt is replayed)."""
    s = where.settings
    if isinstance(e, UnreachableError):
        return SchemaRegistryUnreachableError(s.scrub(
            f"{where.head()}: the schema registry at {s.url} could not be reached within "
            f"request.timeout.ms={s.timeout_ms} ({e.tries} tries; last: {e}); the task "
            f"retries from its last commit; check that it runs at schema.registry.url"))
    elif type(e).__name__ == "SchemaRegistryError":
        why = _answer(where, getattr(e, "http_status_code", -1), e)
    else:
        why = f"the {s.part} does not match the schema ({type(e).__name__}: {e})"
    return SerializationError(s.scrub(f"{where.head()}: {why}"))


def _answer(where: Failure, status: int, e: BaseException) -> str:
    s, answer = where.settings, f"HTTP {status}: {getattr(e, 'error_message', e)}"
    if status in (401, 403):
        return (f"the schema registry at {s.url} refused kspark's credentials ({answer}); "
                f"check basic.auth.user.info or bearer.auth.*")
    if status == 409:
        return (f"the schema registry at {s.url} refused to register the schema under "
                f"subject {where.subject!r}: it is incompatible with the subject's earlier "
                f"versions ({answer}); make the change compatible (a new field needs a "
                f"default) or change the subject's compatibility level")
    if status == 404 and where.op == "read":
        return (f"schema id {where.schema_id} is not in the schema registry at {s.url} "
                f"({answer}); the record was written against another registry, or its "
                f"schema was deleted")
    if status == 404 and s.use_latest and not s.auto_register:
        return (f"subject {where.subject!r} has no version in the schema registry at {s.url} "
                f"({answer}) and use.latest.version=true; register a schema under it first")
    if status == 404:
        return (f"the schema is not registered under subject {where.subject!r} in the schema "
                f"registry at {s.url} ({answer}) and auto.register.schemas=false; register "
                f"it first, or set auto.register.schemas=true")
    if status == 422:
        return f"the schema registry at {s.url} refused the schema as invalid ({answer})"
    return f"the schema registry at {s.url} answered {answer}"
