"""The consumer-group half of :class:`~kspark._kafka.admin.Admin`: read, commit and delete
a group's offsets, list its members and remove them (``kspark reset`` and the tests use
them).

confluent-kafka has no RemoveMembersFromConsumerGroup (Java's Admin API): :func:`leave_request`
writes the LeaveGroup request (v3, KIP-345: members named by id) that Java's admin sends for
it, and :meth:`GroupAdmin.remove_group_members` sends it to the group coordinator, over
PLAINTEXT only.

Example:
    >>> req = leave_request("app", [GroupMember("m-1", "c", "/10.0.0.1", None)], 7)
    >>> req[:8].hex(), req[-11:].hex()  # api key 13 v3, id 7; 1 member "m-1", no instance id
    ('000d000300000007', '0000000100036d2d31ffff')
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kspark._kafka.retry import Stall, transient
from kspark.errors import KSparkError

__all__ = ["GroupAdmin", "GroupMember", "leave_request"]

_LEAVE_GROUP, _LEAVE_GROUP_VERSION = 13, 3  # api key and version (non-flexible, header v1)
_CLIENT_ID = "kspark-reset-force"


@dataclass(frozen=True)
class GroupMember:
    """One member of a consumer group, as DescribeGroups tells it."""

    member_id: str
    client_id: str
    host: str
    instance_id: str | None

    def __str__(self) -> str:
        return f"{self.client_id} (host {self.host}, member id {self.member_id})"


def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def leave_request(group: str, members: list[GroupMember], correlation_id: int) -> bytes:
    """A LeaveGroup v3 request (header and body, without the size prefix) removing
    ``members`` from ``group``."""
    head = struct.pack(">hhi", _LEAVE_GROUP, _LEAVE_GROUP_VERSION, correlation_id)
    body = _string(group) + struct.pack(">i", len(members))
    for m in members:
        body += _string(m.member_id) + _string(m.instance_id)
    return head + _string(_CLIENT_ID) + body


def _leave_response(data: bytes) -> tuple[int, dict[str, int]]:
    """(the request's error code, {member id: its error code}) of a LeaveGroup v3 answer."""
    _, _, error, n = struct.unpack_from(">iihi", data)
    pos, members = 14, {}
    for _ in range(n):
        (size,) = struct.unpack_from(">h", data, pos)
        member_id = data[pos + 2:pos + 2 + size].decode()
        pos += 2 + size
        (size,) = struct.unpack_from(">h", data, pos)
        pos += 2 + max(size, 0)
        (members[member_id],) = struct.unpack_from(">h", data, pos)
        pos += 2
    return error, members


class GroupAdmin:
    """Mixed into Admin, whose client (``_admin``), timeout, ``_denied``, ``_stall`` and
    ``renew`` it uses."""

    _admin: Any
    timeout_s: float
    _denied: Callable[[int, str, str, str, str], None]
    _stall: Callable[[str, float | None], Stall]
    renew: Callable[[], None]
    settings: Any

    def group_members(self, group: str) -> tuple[list[GroupMember], tuple[str, int] | None]:
        """The members of consumer group ``group`` and its coordinator (host, port)
        (``[], None``: no such group)."""
        (fut,) = self._admin.describe_consumer_groups(
            [group], request_timeout=self.timeout_s).values()
        try:
            desc = fut.result(timeout=self.timeout_s + 1)
        except KafkaException as e:
            self._denied(e.args[0].code(), e.args[0].str(), "GROUP", group, "DESCRIBE")
            if e.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                return [], None
            raise KSparkError(f"could not describe consumer group {group!r}: "
                              f"{e.args[0].str()}") from None
        members = [GroupMember(m.member_id, m.client_id, m.host, m.group_instance_id)
                   for m in desc.members]
        coordinator = desc.coordinator
        return members, (coordinator.host, coordinator.port) if coordinator else None

    def remove_group_members(self, group: str, members: list[GroupMember]) -> None:
        """Remove ``members`` from ``group`` at once, as Java's
        ``removeMembersFromConsumerGroup`` (a live member joins again at its next poll)."""
        _, coordinator = self.group_members(group)
        protocol = self.settings.conf("admin").get("security.protocol", "PLAINTEXT")
        if str(protocol).upper() != "PLAINTEXT":
            raise KSparkError(
                f"--force cannot remove the members of consumer group {group!r} over "
                f"security.protocol={protocol} (kspark sends LeaveGroup over PLAINTEXT only): "
                "wait for their session timeout to expire them, or remove them with Kafka's "
                "kafka-streams-application-reset --force, then reset again")
        if coordinator is None or not members:
            return
        request = leave_request(group, members, 1)
        with socket.create_connection(coordinator, timeout=self.timeout_s) as conn:
            conn.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", _read(conn, 4))
            error, by_member = _leave_response(_read(conn, size))
        failed = {m: e for m, e in by_member.items() if e not in (0, KafkaError.UNKNOWN_MEMBER_ID)}
        if error or failed:
            code = error or next(iter(failed.values()))
            self._denied(code, KafkaError(code).str(), "GROUP", group, "READ")
            raise KSparkError(f"could not remove the members of consumer group {group!r}: "
                              f"{KafkaError(code).str()} ({', '.join(failed) or 'the group'})")

    def group_offsets(self, group: str,
                      patience_s: float | None = None) -> dict[tuple[str, int], int]:
        """The offsets consumer group ``group`` committed ({} if it has none). While the
        group coordinator moves or a broker restarts, asks again for ``patience_s``
        (default ``task.timeout.ms``): an unanswered request is never read as "no offsets"."""
        from concurrent.futures import TimeoutError as FutureTimeout

        from confluent_kafka import ConsumerGroupTopicPartitions

        stall: Stall | None = None
        while True:
            try:
                (fut,) = self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s).values()
                res = fut.result(timeout=self.timeout_s + 1)
                return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions
                        if tp.offset >= 0}
            except KafkaException as e:  # no such group yet: no offsets; refused: say so
                err = e.args[0]
                self._denied(err.code(), err.str(), "GROUP", group, "DESCRIBE")
                if not transient(err):
                    return {}
                failed: Any = err
            except FutureTimeout:
                failed = KafkaError(KafkaError._TIMED_OUT, "no answer")
            if failed.code() == KafkaError._TIMED_OUT:
                self.renew()
            stall = stall or self._stall(f"reading consumer group {group!r}'s offsets",
                                         patience_s)
            stall.wait(failed)

    def delete_group(self, group: str) -> None:
        """Delete an empty consumer group and its committed offsets."""
        (fut,) = self._admin.delete_consumer_groups(
            [group], request_timeout=self.timeout_s).values()
        try:
            fut.result(timeout=self.timeout_s)
        except KafkaException as e:
            self._denied(e.args[0].code(), e.args[0].str(), "GROUP", group, "DELETE")
            raise KSparkError(
                f"could not delete consumer group {group!r}: {e.args[0].str()}") from None

    def commit_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``{(topic, partition): offset}`` for ``group`` (which must have no members)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        parts = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        futures = self._admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, parts)], request_timeout=self.timeout_s)
        for fut in futures.values():
            try:
                fut.result(timeout=self.timeout_s)
            except KafkaException as e:
                self._denied(e.args[0].code(), e.args[0].str(), "GROUP", group, "READ")
                raise KSparkError(f"could not commit offsets for consumer group {group!r}: "
                                  f"{e.args[0].str()}") from None



def _read(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise KSparkError("the group coordinator closed the connection before answering "
                              "LeaveGroup")
        buf += chunk
    return buf
