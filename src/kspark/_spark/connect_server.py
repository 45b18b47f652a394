"""A local Spark Connect server, started out of process from the installed PySpark
(``sbin/start-connect-server.sh`` in the foreground), for tests and for trying kspark on
Connect without a platform: the demo and the suite start it like the broker.

Its Python workers run this interpreter (``PYSPARK_PYTHON``), where kspark is installed, and
it gets kspark's server-side settings (:data:`SERVER_CONF`). Nothing here imports pyspark:
the client of the server is any Connect session (``SparkSession.builder.remote(url)``).

Example (``start`` runs a JVM, so it is not run as a doctest)::

    with LocalConnectServer("/tmp/connect", master="local[2]") as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()

The URL given a port (nothing is started):

    >>> LocalConnectServer("/tmp/connect", port=15002).url
    'sc://127.0.0.1:15002'
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from kspark.errors import KSparkError
from kspark._local.broker_process import free_port

__all__ = ["LocalConnectServer", "SERVER_CONF"]

# What kspark's own sessions get (see session._DEFAULTS): warm Python workers importing the
# installed pyspark, and no progress bars in the server's log.
SERVER_CONF = {
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "kspark._spark.daemon",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.enabled": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
}


class ConnectServerError(KSparkError):
    """The local Spark Connect server failed to start."""


class LocalConnectServer:
    """A Spark Connect server on loopback, its log and files under ``directory``; ``conf``:
    ``spark.*`` settings over :data:`SERVER_CONF`; ``env``: its environment's variables
    over this process's."""

    def __init__(self, directory: str | Path, port: int | None = None,
                 master: str = "local[2]", conf: dict[str, str] | None = None,
                 env: dict[str, str] | None = None):
        self.directory = Path(directory)
        self.port = port or free_port()
        self.master = master
        self.conf = {**SERVER_CONF, **(conf or {})}
        self.env = dict(env or {})  # the server's environment, over this process's
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        """Where the server's output goes (``spark-daemon.sh`` names it)."""
        found = sorted((self.directory / "logs").glob("*.out"))
        return found[-1] if found else self.directory / "connect-server.log"

    def start(self, timeout_s: float = 120.0) -> LocalConnectServer:
        """Start the server and wait until it serves (``timeout_s``)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        home = _spark_home()
        log4j = Path(__file__).with_name("log4j2.properties")
        args = [str(home / "sbin" / "start-connect-server.sh"), "--master", self.master,
                "--conf", f"spark.connect.grpc.binding.port={self.port}",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                "--conf", f"spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=file:{log4j}"]
        for k, v in self.conf.items():
            args += ["--conf", f"{k}={v}"]
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_NO_DAEMONIZE": "1",
               "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
               "SPARK_LOG_DIR": str(self.directory / "logs"),
               "SPARK_PID_DIR": str(self.directory / "pid"),
               "SPARK_IDENT_STRING": f"kspark-{self.port}", **self.env}
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        with open(self.directory / "connect-server.log", "ab") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)
        self._await_started(timeout_s)
        return self

    def _await_started(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ConnectServerError(
                    f"the Spark Connect server exited with {self.process.returncode} while "
                    f"starting; its log: {self.log_file}\n{self._tail()}")
            if _listening(self.port):
                return
            time.sleep(0.2)
        self.kill()
        raise ConnectServerError(f"the Spark Connect server did not start within {timeout_s:.0f}"
                                 f" s; its log: {self.log_file}\n{self._tail()}")

    def _tail(self, size: int = 4000) -> str:
        try:
            return self.log_file.read_bytes()[-size:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server (SIGTERM to its process group, then SIGKILL)."""
        self._signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL the server and every process it started (its Python workers)."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(30)

    def _signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def __enter__(self) -> LocalConnectServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> Any:
        self.stop()


def _spark_home() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ConnectServerError("pyspark is not installed in this Python: the local Spark "
                                 "Connect server starts from its sbin/start-connect-server.sh")
    return Path(spec.origin).parent


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
