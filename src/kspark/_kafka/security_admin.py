"""SCRAM users and ACLs on a secured cluster, through confluent-kafka's AdminClient.

Every function takes the librdkafka settings of a user allowed to manage the cluster (for a
broker started by kspark with ``secure=True``: ``LocalBroker.admin_config()``) and waits, for
a bounded time, until what it changed is in effect: a new user can log in, an ACL is listed
by the broker that enforces it. Nothing here sleeps blindly.

Example (needs a secured broker, so not run as a doctest)::

    from kspark._kafka.security_admin import create_scram_user, grant

    admin = broker.admin_config()
    create_scram_user(admin, "alice", "alice-secret")
    grant(admin, "User:alice", "TOPIC", "orders", ["WRITE", "DESCRIBE"])
    grant(admin, "User:alice", "GROUP", "orders-app", "READ", pattern="PREFIXED")
    grant(admin, "User:alice", "CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kspark._kafka import QuietLogger
from kspark.errors import KSparkError

__all__ = [
    "CLUSTER_NAME",
    "SCRAM_ITERATIONS",
    "create_scram_user",
    "user_config",
    "wait_user_usable",
    "grant",
    "revoke",
    "acl_bindings",
    "wait_acls_visible",
    "application_acls",
]

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
SCRAM_ITERATIONS = 8192

# librdkafka calls Kafka's CLUSTER resource type (4 in the protocol) BROKER.
_RESOURCE_TYPES = {"TOPIC": ResourceType.TOPIC, "GROUP": ResourceType.GROUP,
                   "TRANSACTIONAL_ID": ResourceType.TRANSACTIONAL_ID,
                   "CLUSTER": ResourceType.BROKER}
_PATTERNS = {"LITERAL": ResourcePatternType.LITERAL, "PREFIXED": ResourcePatternType.PREFIXED}
# A client's own settings that say who it is: replaced, not inherited, by user_config().
_IDENTITY_KEYS = ("sasl.username", "sasl.password")


def _client(conf: Mapping[str, Any]) -> AdminClient:
    return AdminClient({"logger": QuietLogger(), **conf})


def user_config(admin_conf: Mapping[str, Any], name: str, password: str) -> dict[str, Any]:
    """``admin_conf`` with the SCRAM identity of ``name`` instead of the admin's.

    >>> user_config({"bootstrap.servers": "b:9093", "sasl.username": "admin",
    ...              "sasl.password": "x"}, "alice", "s3cret")["sasl.username"]
    'alice'
    """
    conf = {k: v for k, v in admin_conf.items() if k not in _IDENTITY_KEYS}
    conf.update({"sasl.username": name, "sasl.password": password})
    return conf


def create_scram_user(admin_conf: Mapping[str, Any], name: str, password: str, *,
                      iterations: int = SCRAM_ITERATIONS, timeout_s: float = 30.0,
                      wait: bool = True) -> None:
    """Create (or change the password of) the SCRAM-SHA-512 user ``name``.

    With ``wait`` (the default) it returns once ``name`` can log in to the broker of
    ``admin_conf`` (see :func:`wait_user_usable`).

    Example (needs a secured broker)::

        create_scram_user(broker.admin_config(), "alice", "alice-secret")
    """
    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations),
        password.encode())
    client = _client(admin_conf)  # kept alive until the futures are resolved
    futures = client.alter_user_scram_credentials([upsert], request_timeout=timeout_s)
    try:
        for f in futures.values():
            f.result(timeout=timeout_s)
    except KafkaException as e:
        raise KSparkError(f"creating the SCRAM-SHA-512 user {name!r} failed: "
                          f"{e.args[0].str() if e.args else e}") from e
    if wait:
        wait_user_usable(admin_conf, name, password, timeout_s=timeout_s)


def wait_user_usable(admin_conf: Mapping[str, Any], name: str, password: str, *,
                     timeout_s: float = 30.0) -> None:
    """Return once ``name`` / ``password`` authenticates: a metadata request as that user
    succeeds (it needs no ACL). TimeoutError after ``timeout_s`` seconds.

    Example (needs a secured broker)::

        wait_user_usable(broker.admin_config(), "alice", "alice-secret", timeout_s=10)
    """
    conf = user_config(admin_conf, name, password)
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"the SCRAM user {name!r} could not log in to "
                               f"{admin_conf.get('bootstrap.servers')} within {timeout_s:.0f}s "
                               f"(last error: {last})")
        errors: list[KafkaError] = []
        # A fresh client each try: one that failed to authenticate backs off its reconnects.
        client = _client({**conf, "error_cb": errors.append})
        try:
            client.list_topics(timeout=min(remaining, 5.0))
            return
        except KafkaException as e:
            last = errors[-1] if errors else e
        # Poll again soon, bounded by the deadline (authentication failures return at once).
        time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))


def acl_bindings(principal: str, resource_type: str, name: str | None,
                 operation: str | Iterable[str], pattern: str = "LITERAL",
                 host: str = "*") -> list[AclBinding]:
    """The ALLOW bindings of ``principal`` for each ``operation`` on one resource.

    >>> b = acl_bindings("alice", "TOPIC", "orders", ["WRITE", "DESCRIBE"])
    >>> [(x.principal, x.name, x.operation.name) for x in b]
    [('User:alice', 'orders', 'WRITE'), ('User:alice', 'orders', 'DESCRIBE')]
    >>> acl_bindings("User:bob", "CLUSTER", None, "IDEMPOTENT_WRITE")[0].name
    'kafka-cluster'
    """
    rtype = resource_type.upper()
    if rtype not in _RESOURCE_TYPES:
        raise ValueError(f"resource_type {resource_type!r}: expected one of "
                         f"{', '.join(_RESOURCE_TYPES)}")
    if rtype == "CLUSTER":
        if name not in (None, CLUSTER_NAME):
            raise ValueError(f"the CLUSTER resource is named {CLUSTER_NAME!r}, not {name!r}")
        name = CLUSTER_NAME
    elif not name:
        raise ValueError(f"a {rtype} ACL needs a resource name")
    ptype = pattern.upper()
    if ptype not in _PATTERNS:
        raise ValueError(f"pattern {pattern!r}: expected LITERAL or PREFIXED")
    ops = [operation] if isinstance(operation, str) else list(operation)
    try:
        acl_ops = [AclOperation[op.upper()] for op in ops]
    except KeyError as e:
        raise ValueError(f"unknown ACL operation {e.args[0]!r}: expected one of "
                         f"{', '.join(o.name for o in AclOperation if o.value > 1)}") from None
    if not acl_ops:
        raise ValueError("no ACL operation given")
    principal = principal if ":" in principal else f"User:{principal}"
    return [AclBinding(_RESOURCE_TYPES[rtype], name, _PATTERNS[ptype], principal, host, op,
                       AclPermissionType.ALLOW) for op in acl_ops]


def _as_filter(b: AclBinding) -> AclBindingFilter:
    return AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host,
                            b.operation, b.permission_type)


def grant(admin_conf: Mapping[str, Any], principal: str, resource_type: str,
          name: str | None, operation: str | Iterable[str], pattern: str = "LITERAL", *,
          host: str = "*", timeout_s: float = 30.0, wait: bool = True) -> list[AclBinding]:
    """Allow ``principal`` (``"User:alice"``, or just ``"alice"``) ``operation`` (one name or
    several: READ, WRITE, DESCRIBE, CREATE, DELETE, ALTER, IDEMPOTENT_WRITE, ALL, ...) on the
    resource ``resource_type`` (TOPIC, GROUP, TRANSACTIONAL_ID or CLUSTER, whose name is
    ``kafka-cluster``) named ``name``, matched LITERAL or PREFIXED, from ``host``.

    With ``wait`` (the default) it returns once the broker lists the new ACLs.

    Example (needs a secured broker)::

        grant(admin, "User:alice", "TOPIC", "orders", ["WRITE", "DESCRIBE"])
        grant(admin, "User:alice", "TRANSACTIONAL_ID", "orders-app", "WRITE",
              pattern="PREFIXED")
    """
    bindings = acl_bindings(principal, resource_type, name, operation, pattern, host)
    client = _client(admin_conf)  # kept alive until the futures are resolved
    futures = client.create_acls(bindings, request_timeout=timeout_s)
    try:
        for f in futures.values():
            f.result(timeout=timeout_s)
    except KafkaException as e:
        raise KSparkError(f"granting {_describe(bindings)} failed: "
                          f"{e.args[0].str() if e.args else e}") from e
    if wait:
        wait_acls_visible(admin_conf, bindings, timeout_s=timeout_s)
    return bindings


def revoke(admin_conf: Mapping[str, Any], principal: str, resource_type: str,
           name: str | None, operation: str | Iterable[str], pattern: str = "LITERAL", *,
           host: str = "*", timeout_s: float = 30.0, wait: bool = True) -> list[AclBinding]:
    """Delete the ALLOW ACLs :func:`grant` made with the same arguments; returns the ACLs the
    broker deleted. With ``wait`` it returns once the broker no longer lists them.

    Example (needs a secured broker)::

        revoke(admin, "User:alice", "TOPIC", "orders", "WRITE")
    """
    bindings = acl_bindings(principal, resource_type, name, operation, pattern, host)
    client = _client(admin_conf)  # kept alive until the futures are resolved
    futures = client.delete_acls([_as_filter(b) for b in bindings], request_timeout=timeout_s)
    deleted: list[AclBinding] = []
    try:
        for f in futures.values():
            deleted.extend(f.result(timeout=timeout_s))
    except KafkaException as e:
        raise KSparkError(f"revoking {_describe(bindings)} failed: "
                          f"{e.args[0].str() if e.args else e}") from e
    if wait:
        wait_acls_visible(admin_conf, bindings, timeout_s=timeout_s, present=False)
    return deleted


def wait_acls_visible(admin_conf: Mapping[str, Any], bindings: Iterable[AclBinding], *,
                      timeout_s: float = 30.0, present: bool = True) -> None:
    """Return once the broker of ``admin_conf`` lists every one of ``bindings`` (or, with
    ``present=False``, none of them). TimeoutError after ``timeout_s`` seconds.

    On a single broker the ACLs it lists are the ACLs it enforces.

    Example (needs a secured broker)::

        wait_acls_visible(admin, acl_bindings("alice", "TOPIC", "orders", "WRITE"))
    """
    wanted = list(bindings)
    client = _client(admin_conf)
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        pending = []
        for b in wanted:
            try:
                listed = client.describe_acls(_as_filter(b), request_timeout=max(remaining, 1)
                                              ).result(timeout=max(remaining, 1))
            except KafkaException:
                listed = None  # unknown yet: ask again
            if listed is None or (b in listed) != present:
                pending.append(b)
        if not pending:
            return
        if time.monotonic() >= deadline:
            state = "listed" if present else "gone"
            raise TimeoutError(f"{_describe(pending)} not {state} on "
                               f"{admin_conf.get('bootstrap.servers')} within {timeout_s:.0f}s")
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))


def _describe(bindings: list[AclBinding]) -> str:
    b = bindings[0]
    ops = ",".join(x.operation.name for x in bindings)
    rtype = "CLUSTER" if b.restype == ResourceType.BROKER else b.restype.name
    return (f"{ops} on {rtype} {b.name!r} ({b.resource_pattern_type.name}) to {b.principal} "
            f"from host {b.host!r}")


def application_acls(app_id: str, inputs: Iterable[str], outputs: Iterable[str]
                     ) -> list[tuple[str, str, str, str]]:
    """Kafka Streams' ACL set for one application, as ``(resource type, name, operation,
    pattern)``: all an application needs, under either processing guarantee.

    >>> for acl in application_acls("app", ["in"], ["out"])[:3]: print(acl)
    ('TOPIC', 'in', 'READ', 'LITERAL')
    ('TOPIC', 'in', 'DESCRIBE', 'LITERAL')
    ('TOPIC', 'out', 'WRITE', 'LITERAL')
    """
    acls = []
    for topic in inputs:
        acls += [("TOPIC", topic, op, "LITERAL") for op in ("READ", "DESCRIBE")]
    for topic in outputs:
        acls += [("TOPIC", topic, op, "LITERAL") for op in ("WRITE", "DESCRIBE")]
    acls += [("TOPIC", app_id, op, "PREFIXED")
             for op in ("CREATE", "READ", "WRITE", "DESCRIBE", "DELETE")]
    acls += [("GROUP", app_id, op, "PREFIXED") for op in ("READ", "DESCRIBE")]
    acls += [("TRANSACTIONAL_ID", app_id, op, "PREFIXED") for op in ("WRITE", "DESCRIBE")]
    acls.append(("CLUSTER", CLUSTER_NAME, "IDEMPOTENT_WRITE", "LITERAL"))
    return acls
