"""A local Schema Registry: Apicurio Registry 3.0.9 (Apache-2.0), which serves Confluent's
Schema Registry API under ``/apis/ccompat/v7``, with in-memory storage, on loopback.

Its runnable distribution (a Quarkus application) is downloaded from Maven Central once
into ``kspark_home()``, as the broker's jars are (:mod:`kspark._local.jars`).

Example (``start`` runs a JVM, so it is not run as a doctest)::

    with LocalRegistry() as registry:     # a free port; BACKWARD compatibility, as Confluent's
        client = SchemaRegistryClient({"url": registry.url})

The URL of a registry given a port (nothing is started):

    >>> LocalRegistry("/tmp/kspark-registry", port=8081).url
    'http://127.0.0.1:8081/apis/ccompat/v7'
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kspark._local.broker_process import free_port, port_taken
from kspark._local.download import Artifact, download, print_progress, repository
from kspark._local.tls import HOST
from kspark._local.jars import kspark_home
from kspark._local.prereqs import java_binary
from kspark.errors import KSparkError, PrerequisiteError

__all__ = ["APICURIO_VERSION", "LocalRegistry", "RegistryError", "RegistryStatus",
           "is_registry", "registry_dist"]

APICURIO_VERSION = "3.0.9"
_ARTIFACT = Artifact.parse(f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all")
_JAR = f"apicurio-registry-app-{APICURIO_VERSION}-runner.jar"
CCOMPAT_PATH = "/apis/ccompat/v7"
COMPATIBILITY = "BACKWARD"  # Confluent Schema Registry's default; Apicurio's own is NONE
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_PORT_IN_USE = "seems to be in use by another process"  # Quarkus's words when it cannot bind


class RegistryError(KSparkError):
    """The local Schema Registry managed by ``kspark registry`` failed to start or stop."""


def registry_dist(home: Path | None = None, quiet: bool = False) -> Path:
    """The directory of Apicurio Registry's distribution (its runner jar and ``lib/``),
    downloaded and extracted the first time."""
    dist = (home or kspark_home()) / f"apicurio-registry-{APICURIO_VERSION}"
    if (dist / ".complete").exists():
        return dist
    repo = repository()
    if not quiet:
        print(f"kspark: fetching Apicurio Registry {APICURIO_VERSION} from {repo} into {dist} "
              "(once)...", flush=True)
    dist.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="apicurio-", dir=dist.parent))
    try:
        download_dir = tmp / ".download"
        download_dir.mkdir()
        archive = download(_ARTIFACT, download_dir, repo, None if quiet else print_progress)
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4+: no links or paths outside
                tar.extractall(tmp, filter="data")
            else:
                tar.extractall(tmp)
        shutil.rmtree(download_dir)
        if not (tmp / _JAR).exists():
            raise PrerequisiteError(f"{archive.name} holds no {_JAR}: not the runnable "
                                    f"distribution of Apicurio Registry {APICURIO_VERSION}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / ".complete").touch()
    shutil.rmtree(dist, ignore_errors=True)
    tmp.rename(dist)
    return dist


@dataclass(frozen=True)
class RegistryStatus:
    """Whether the registry of a work directory runs, and where."""

    running: bool
    pid: int | None
    url: str | None
    log_file: Path


class LocalRegistry:
    """The Schema Registry whose pid, port and log live in ``work_dir`` (default
    ``$KSPARK_HOME/registry``); its schemas live in memory and go with the process.

    ``port=None`` takes a free port on 127.0.0.1 at :meth:`start`. :attr:`url` is the base
    URL of Confluent's API, as ``SchemaRegistryClient({"url": ...})`` takes it. The global
    compatibility level is set to BACKWARD at start (Confluent's default).
    """

    def __init__(self, work_dir: Path | str | None = None, port: int | None = None,
                 heap: str = "512m"):
        self.dir = Path(work_dir) if work_dir else kspark_home() / "registry"
        self.port = port
        self.heap = heap
        self.log_file = self.dir / "registry.log"
        self._pid_file = self.dir / "registry.pid"
        self._port_file = self.dir / "registry.port"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        port = self.port if self.port is not None else self._recorded_port()
        if port is None:
            raise RegistryError(f"the registry of {self.dir} has no port yet: start it first")
        return f"http://{HOST}:{port}{CCOMPAT_PATH}"

    def __enter__(self) -> LocalRegistry:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def status(self) -> RegistryStatus:
        pid = self._pid()
        port = self._recorded_port()
        if pid is not None and is_registry(pid) and port is not None:
            return RegistryStatus(True, pid, f"http://{HOST}:{port}{CCOMPAT_PATH}",
                                  self.log_file)
        return RegistryStatus(False, None, None, self.log_file)

    def start(self, timeout_s: float = 60.0) -> str:
        """Start the registry (fetching it the first time), wait until it answers and set
        the global compatibility to BACKWARD; returns :attr:`url`. A running one is kept."""
        st = self.status()
        if st.running and st.url:
            self.port = self._recorded_port()
            return st.url
        java = java_binary()
        dist = registry_dist()
        if self.port is not None and port_taken(self.port):
            raise RegistryError(f"port {self.port} on {HOST} is already in use, so the registry "
                                "cannot listen there: stop what uses it, or choose another "
                                "port (kspark registry start --port N, or --port 0 for a free "
                                "one)")
        self.dir.mkdir(parents=True, exist_ok=True)
        fixed = self.port is not None
        for attempt in range(1 if fixed else 3):
            port = self.port if self.port is not None else free_port()
            self._launch(java, dist, port)
            try:
                self._wait_ready(port, timeout_s)
                break
            except RegistryError:
                # another process took the free port between our look and the JVM's bind
                if fixed or attempt == 2 or _PORT_IN_USE not in self._log_tail(10):
                    raise
        self.port = port
        try:
            self._set_compatibility(COMPATIBILITY)
        except BaseException:
            self.stop()  # a registry that refused its settings is not left running
            raise
        return self.url

    def stop(self, timeout_s: float = 15.0) -> bool:
        """Stop the registry (SIGTERM, then SIGKILL after ``timeout_s``); False if none ran."""
        pid = self._pid()
        ran = pid is not None and is_registry(pid)
        if pid is not None and ran:
            _signal(pid, signal.SIGTERM)
            if not _wait_gone(pid, timeout_s):
                _signal(pid, signal.SIGKILL)
                if not _wait_gone(pid, 10.0):
                    raise RegistryError(f"registry process {pid} ({self.dir}) still runs after "
                                        "SIGKILL")
        if self._proc is not None:
            self._proc.poll()
            self._proc = None
        self._pid_file.unlink(missing_ok=True)
        return ran

    def _launch(self, java: str, dist: Path, port: int) -> None:
        cmd = [java, f"-Xmx{self.heap}", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               f"-Dquarkus.http.host={HOST}", f"-Dquarkus.http.port={port}",
               "-Dapicurio.storage.kind=sql", "-Dapicurio.storage.sql.kind=h2",  # in memory
               "-jar", str(dist / _JAR)]
        with open(self.log_file, "ab") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=self.dir,
                                          start_new_session=True)
        self._pid_file.write_text(str(self._proc.pid))
        self._port_file.write_text(str(port))

    def _wait_ready(self, port: int, timeout_s: float) -> None:
        subjects = f"http://{HOST}:{port}{CCOMPAT_PATH}/subjects"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self._proc.poll() if self._proc is not None else None
            if code is not None:
                self._pid_file.unlink(missing_ok=True)
                self._proc = None
                raise RegistryError(f"the registry exited with code {code} while starting on "
                                    f"port {port}; the end of its log ({self.log_file}):\n"
                                    f"{self._log_tail()}")
            try:
                with urllib.request.urlopen(subjects, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (OSError, ValueError):  # refused, reset, 503 while starting: not up yet
                pass
            time.sleep(0.2)
        self.stop()
        raise RegistryError(f"the registry did not answer GET {subjects} within "
                            f"{timeout_s:.0f}s; the end of its log ({self.log_file}):\n"
                            f"{self._log_tail()}")

    def _set_compatibility(self, level: str) -> None:
        answer = self._request("PUT", "/config", {"compatibility": level})
        if answer.get("compatibilityLevel") != level:
            raise RegistryError(f"the registry at {self.url} did not take the global "
                                f"compatibility {level}: it answered {answer}")

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": _CONTENT_TYPE})
        try:
            with urllib.request.urlopen(req, timeout=10) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            raise RegistryError(f"{method} {self.url + path} failed with HTTP {e.code}: "
                                f"{e.read().decode(errors='replace')}") from None

    def _pid(self) -> int | None:
        try:
            return int(self._pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _recorded_port(self) -> int | None:
        try:
            return int(self._port_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log written)"


def is_registry(pid: int) -> bool:
    """Whether process ``pid`` runs Apicurio Registry (an exited one has no command line)."""
    try:
        return b"apicurio-registry-app" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until process ``pid`` exited (reaping it if it is ours); False if it still runs."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not is_registry(pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
