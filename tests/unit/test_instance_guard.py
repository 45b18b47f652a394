"""The one-instance guard's shortcut (``_kafka/instance.py``): a member that is an instance
this process holds, or one on this host in another live process, is refused at once; any
other waits for its membership to expire (a killed driver's)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from kspark._kafka import instance
from kspark._kafka.instance import InstanceGuard


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


def test_an_instance_on_another_host_is_waited_for():
    assert not _guard().running_here([_member("another-host", os.getpid())])


def test_a_member_that_is_not_an_instance_is_waited_for():
    assert not _guard().running_here(["rdkafka (host /10.0.0.1)"])
