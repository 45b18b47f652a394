"""One active instance per ``application.id``, enforced through Kafka (design brief, 8).

A running application's driver is the one member of the consumer group
``<application.id>-kspark-instance`` (the group only marks presence: it reads nothing).
A second start, on any host, finds that member and is refused with an error naming it. A
driver that died without leaving stays a member for ``session.timeout.ms`` (6 s): a start
waits for it to expire (up to 26 s) before refusing, except where the member is an instance
on the same host whose process is alive: that one is refused at once.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException

from kspark._graph.resources import instance_group
from kspark._kafka.factory import new_admin, new_consumer
from kspark._kafka.security_errors import authorization_for, check_client
from kspark._kafka.settings import ClientSettings, as_settings
from kspark.errors import InstanceAlreadyRunningError, KSparkError

__all__ = ["InstanceGuard"]

_HELD: set[str] = set()  # the names of the instances this process runs (acquired, not released)

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms by default


class InstanceGuard:
    """Membership of the instance group while the application runs.

    Example (needs a broker, so not run)::

        guard = InstanceGuard("localhost:9092", "my-app", lock_topic)
        guard.acquire()      # raises InstanceAlreadyRunningError if another instance runs
        ...
        guard.release()
    """

    def __init__(self, where: ClientSettings | str, app_id: str, topic: str,
                 timeout_s: float = 30.0):
        self.settings = as_settings(where)
        self.bootstrap, self.app_id, self.topic = self.settings.bootstrap, app_id, topic
        self.group = instance_group(app_id)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._timeout_s = timeout_s
        self._admin = new_admin(self.settings.conf("admin", "instance-check"), "instance-check")
        self._consumer: Consumer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def members(self) -> list[str]:
        """Client ids (``kspark-instance@<host>:<pid>:<id>``) and hosts of the group's members."""
        try:
            (fut,) = self._admin.describe_consumer_groups(
                [self.group], request_timeout=self._timeout_s).values()
            desc = fut.result(timeout=self._timeout_s)
        except KafkaException as e:
            err = e.args[0]
            denied = authorization_for(self.settings, err.code(), err.str(),
                                       {"GROUP": (self.group, "DESCRIBE", False)})
            if denied is not None:
                raise denied from None
            if err.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                check_client(self.settings, self._admin, time.monotonic() - self._timeout_s)
            return []  # no such group yet
        return [f"{m.client_id} (host {m.host})" for m in desc.members]

    def running_here(self, members: list[str]) -> bool:
        """Whether one of ``members`` is known alive without waiting for its membership to
        expire: an instance this process holds, or one on this host in another live
        process. Not this process's id held by no instance of it: a restarted container
        may reuse a killed driver's host name and process id (pid 1)."""
        here = f"{socket.gethostname()}:"
        for m in members:
            name = m.removeprefix("kspark-instance@").split(" ", 1)[0]  # host:pid:tag
            if not (m.startswith("kspark-instance@") and name.startswith(here)):
                continue
            pid = name[len(here):].split(":", 1)[0]
            if name in _HELD or (pid.isdigit() and int(pid) != os.getpid()
                                 and _process_alive(int(pid))):
                return True
        return False

    def acquire(self) -> None:
        """Join the group, unless another instance is a member: then raise, naming it."""
        deadline = time.monotonic() + (SESSION_TIMEOUT_MS + 20000) / 1000
        others = self.members()
        while others and not self.running_here(others) and time.monotonic() < deadline:
            # a dead driver's membership expires
            time.sleep(0.5)
            others = self.members()
        if others:
            raise self._refusal(others)
        self._consumer = new_consumer(self.settings.conf("consumer", None, {
            "group.id": self.group, "client.id": f"kspark-instance@{self.name}",
            "enable.auto.commit": False, "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 1000}), "instance")
        assigned = threading.Event()
        self._consumer.subscribe([self.topic], on_assign=lambda c, parts: assigned.set())
        started = time.monotonic()
        deadline = started + max(self._timeout_s, 30.0)
        while not assigned.is_set() and time.monotonic() < deadline:
            msg = self._consumer.poll(0.02)  # poll() waits its whole timeout after the assignment
            if msg is not None and msg.error() is not None:
                self._refused(msg.error())
        if not assigned.is_set():
            self.release()
            check_client(self.settings, self._admin, started)
            raise KSparkError(
                f"application {self.app_id!r} could not join its instance group "
                f"{self.group!r} within {max(self._timeout_s, 30.0):g} s: the group coordinator at "
                f"{self.bootstrap} did not answer. Is the cluster healthy?")
        members = self.members()
        if len(members) > 1:  # two instances started at once: neither keeps running
            self.release()
            raise self._refusal([m for m in members if self.name not in m])
        self._thread = threading.Thread(target=self._keep_alive, daemon=True,
                                        name=f"kspark-instance-{self.app_id}")
        self._thread.start()
        _HELD.add(self.name)

    def _refused(self, err: KafkaError) -> None:
        denied = authorization_for(self.settings, err.code(), err.str(), {
            "GROUP": (self.group, "READ", False), "TOPIC": (self.topic, "READ", False)})
        if denied is not None:
            self.release()
            raise denied

    def _keep_alive(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.1)  # release() waits for this poll to return

    def release(self) -> None:
        """Leave the group (at close): another instance may start at once."""
        self._stop.set()
        _HELD.discard(self.name)
        if self._thread is not None:
            self._thread.join(5)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _refusal(self, others: list[str]) -> InstanceAlreadyRunningError:
        return InstanceAlreadyRunningError(
            f"application {self.app_id!r} is already running: {', '.join(others)} is a member of "
            f"consumer group {self.group!r}. Stop that instance first (close() or kill it; a "
            f"killed one is forgotten after {SESSION_TIMEOUT_MS // 1000} s), or give this one "
            "another application.id")


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (it may belong to another user): not a
    killed driver that its parent has not reaped yet (a zombie keeps its process id)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc to ask (not Linux): the signal found it
    return state not in (b"Z", b"X")
