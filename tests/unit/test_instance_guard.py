"""The one-instance guard's shortcut (``_control/instance_guard.py``): a member that is an instance
this process holds, or one on this host in another live process, is refused at once; any
other waits for its membership to expire (a killed driver's)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from kspark._control import instance_guard as instance
from kspark._control.instance_guard import InstanceGuard


def _guard() -> InstanceGuard:
    return InstanceGuard("127.0.0.1:1", "app", "lock")  # no broker is asked here


def _member(host: str, pid: int, tag: str = "abc123") -> str:
    return f"kspark-instance@{host}:{pid}:{tag} (host /127.0.0.1)"


def test_an_instance_this_process_holds_is_running_here(monkeypatch):
    monkeypatch.setattr(instance, "_HELD", {f"{socket.gethostname()}:{os.getpid()}:held01"})
    assert _guard().running_here([_member(socket.gethostname(), os.getpid(), "held01")])


def test_a_live_instance_in_another_process_on_this_host_is_running_here():
    assert _guard().running_here([_member(socket.gethostname(), os.getppid())])


def test_this_process_id_held_by_no_instance_is_waited_for():
    # a container restarted after a kill: same host name, same process id (pid 1)
    assert not _guard().running_here([_member(socket.gethostname(), os.getpid())])


def test_a_killed_drivers_membership_on_this_host_is_waited_for():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not _guard().running_here([_member(socket.gethostname(), dead.pid)])


def test_a_killed_driver_its_parent_has_not_reaped_is_waited_for():
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # not waited for: a zombie
    try:
        deadline = time.monotonic() + 30
        while _state(zombie.pid) != b"Z":
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
        assert not _guard().running_here([_member(socket.gethostname(), zombie.pid)])
    finally:
        zombie.wait()


def _state(pid: int) -> bytes:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0]


def test_an_instance_on_another_host_is_waited_for():
    assert not _guard().running_here([_member("another-host", os.getpid())])


def test_a_member_that_is_not_an_instance_is_waited_for():
    assert not _guard().running_here(["rdkafka (host /10.0.0.1)"])
