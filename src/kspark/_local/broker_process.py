"""The operating-system side of a local broker: loopback ports and the broker's process.

Example:
    >>> from kspark._local.broker_process import free_port, port_taken
    >>> port_taken(free_port())
    False
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from kspark._local.tls import HOST

__all__ = ["free_port", "port_taken", "is_kafka", "wait_gone"]


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_taken(port: int) -> bool:
    """Whether something listens on ``port`` of loopback. With SO_REUSEADDR, as the broker
    binds: connections of a killed broker left in TIME_WAIT do not count."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def is_kafka(pid: int) -> bool:
    """Whether process ``pid`` runs a Kafka server (an exited one has no command line)."""
    try:
        return b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until process ``pid`` exited (reaping it if it is ours); False if it still runs."""
    deadline = time.monotonic() + timeout_s
    while is_kafka(pid):
        if time.monotonic() > deadline:
            return False
        _reap(pid)
        time.sleep(0.05)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
