"""A real Spark standalone cluster for tests: one master and worker daemons, each worker
with its own work directory (as if on its own machine), all bound to 127.0.0.1.

Started with Spark's own launcher classes shipped in the pyspark package::

    java -cp "<pyspark>/jars/*" org.apache.spark.deploy.master.Master --host 127.0.0.1 ...
    java -cp "<pyspark>/jars/*" org.apache.spark.deploy.worker.Worker spark://127.0.0.1:P ...

Each daemon runs in its own process group (``start_new_session``); a worker starts its
executors as child processes (``ExecutorRunner``: ``java ... CoarseGrainedExecutorBackend``
with the working directory ``<work-dir>/<app-id>/<executor-id>``), and an executor forks
its Python workers, so :meth:`StandaloneCluster.kill_worker` SIGKILLs the whole group and
every descendant: the worker, its executors and their Python processes, as when a machine
is lost. :meth:`StandaloneCluster.submit` runs an application with pyspark's
``bin/spark-submit``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyspark

from kspark._local.broker import free_port
from tests.integration.soak import descendants

HOST = "127.0.0.1"
SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOG4J = Path(__file__).resolve().parents[2] / "src" / "kspark" / "_spark" / "log4j2.properties"


def _scala_version() -> str:
    """``2.13`` from pyspark's ``jars/scala-library-2.13.x.jar``."""
    for jar in (SPARK_HOME / "jars").glob("scala-library-*.jar"):
        return ".".join(jar.stem.rsplit("-", 1)[1].split(".")[:2])
    return "2.13"


def _env() -> dict[str, str]:
    """The daemons' environment: loopback only, pyspark's jars as SPARK_HOME (the worker
    builds its executors' class path from it) and SPARK_SCALA_VERSION, which Spark's
    launcher scripts export (load-spark-env.sh) and a worker started without them needs to
    build an executor's command ("Cannot find any build directories" otherwise)."""
    env = dict(os.environ)
    env.update({"SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": HOST,
                "SPARK_SCALA_VERSION": _scala_version()})
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    return env


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).resolve()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """Running (not a zombie waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _kill_alive(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` that is still alive (one that exits meanwhile is fine)."""
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each) under ``root``."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.port = free_port()
        self.webui_port = free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen | None] = [None] * workers
        self.work_dirs = [self.root / f"worker-{i}" / "work" for i in range(workers)]
        self.worker_ports = [0] * workers
        self.killed: list[int] = []  # the pids kill_worker() SIGKILLed

    # -- lifecycle ------------------------------------------------------------------------
    def _launch(self, name: str, cls: str, args: list[str]) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "wb")
        try:
            return subprocess.Popen(
                ["java", "-Xmx256m", f"-Dlog4j2.configurationFile=file:{LOG4J}",
                 "-cp", f"{SPARK_HOME}/jars/*", cls, *args],
                cwd=self.root, env=_env(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()

    def start(self, timeout_s: float = 90) -> "StandaloneCluster":
        """Start the master and the workers; return once the master lists them ALIVE."""
        self.master = self._launch("master", "org.apache.spark.deploy.master.Master",
                                   ["--host", HOST, "--port", str(self.port),
                                    "--webui-port", str(self.webui_port)])
        for i in range(self.n_workers):
            self.start_worker(i)
        self.wait_alive(self.n_workers, timeout_s)
        return self

    def start_worker(self, i: int) -> None:
        """Start worker ``i`` (again, after kill_worker), with its own work directory."""
        self.work_dirs[i].mkdir(parents=True, exist_ok=True)
        self.worker_ports[i] = free_port()
        self.workers[i] = self._launch(
            f"worker-{i}", "org.apache.spark.deploy.worker.Worker",
            [self.url, "--host", HOST, "--port", str(self.worker_ports[i]),
             "--cores", str(self.cores), "--memory", self.memory,
             "--work-dir", str(self.work_dirs[i]), "--webui-port", str(free_port())])

    def revive(self, timeout_s: float = 90) -> None:
        """Start again every worker that is not running (one kill_worker() ended) and wait
        until the master lists them all ALIVE."""
        for i, w in enumerate(self.workers):
            if w is None or w.poll() is not None:
                self.start_worker(i)
        self.wait_alive(self.n_workers, timeout_s)

    def state(self) -> dict:
        """The master's JSON status (``/json/`` on its web UI port)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.webui_port}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> list[dict]:
        """The workers the master lists ALIVE that are this cluster's running ones (a
        killed worker's entry is not counted even before the master drops it)."""
        live = {self.worker_ports[i] for i, w in enumerate(self.workers)
                if w is not None and w.poll() is None}
        try:
            workers = self.state().get("workers", [])
        except OSError:
            return []
        return [w for w in workers if w.get("state") == "ALIVE" and w.get("port") in live]

    def wait_alive(self, n: int, timeout_s: float = 90) -> None:
        """Bounded wait until the master reports at least ``n`` ALIVE workers."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.alive_workers()) >= n:
                return
            for name, p in [("master", self.master)] + [
                    (f"worker-{i}", w) for i, w in enumerate(self.workers)]:
                if p is not None and p.poll() is not None and p.pid not in self.killed:
                    raise RuntimeError(f"the {name} exited ({p.returncode}):\n" + self.log(name))
            time.sleep(0.5)
        raise TimeoutError(f"the master does not list {n} ALIVE workers after {timeout_s} s: "
                           f"{self.alive_workers()}\n" + self.log("master"))

    def log(self, name: str, tail: int = 4000) -> str:
        try:
            return (self.root / f"{name}.log").read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    # -- processes ------------------------------------------------------------------------
    def executors(self, i: int) -> list[int]:
        """The executor JVMs worker ``i`` started (its child processes)."""
        w = self.workers[i]
        if w is None:
            return []
        return [p for p in descendants(w.pid)
                if "CoarseGrainedExecutorBackend" in _cmdline(p) and _alive(p)]

    def executor_dirs(self, i: int, app: str | None = None) -> list[Path]:
        """Worker ``i``'s executor working directories, ``<work-dir>/<app-id>/<executor-id>``
        (``app``: only those of that Spark application id)."""
        return sorted(p for p in self.work_dirs[i].glob(f"{app or '*'}/*") if p.is_dir())

    def running_tasks(self, i: int, app: str | None = None) -> list[str]:
        """The Spark tasks worker ``i``'s executors (``app``: only that Spark application's)
        are running now, from their logs (``stderr`` in the executor's directory: "Running
        task 3.0 in stage 5.0 (TID 41)" without its "Finished task"): ``["3.0 in stage
        5.0", ...]``. Each executor's log is matched on its own (task ids are per
        application), and an executor that no longer runs runs nothing: a task it was
        running when it was killed, or when its application ended, never logs its end."""
        live = {_cwd(p) for p in self.executors(i)}
        out: list[str] = []
        for d in self.executor_dirs(i, app):
            if d.resolve() not in live:
                continue
            try:
                text = (d / "stderr").read_text(errors="replace")
            except OSError:
                continue
            running: dict[str, str] = {}
            for line in text.splitlines():
                if "Running task " in line and "(TID " in line:
                    what = line.split("Running task ", 1)[1]
                    running[what.rsplit("(TID ", 1)[1].rstrip(")")] = what.split(" (TID")[0]
                elif ("Finished task " in line or "Exception in task " in line) and "(TID " in line:
                    running.pop(line.rsplit("(TID ", 1)[1].split(")")[0], None)
            out += running.values()
        return sorted(out)

    def kill_worker(self, i: int, timeout_s: float = 20) -> list[int]:
        """SIGKILL worker ``i``, its executors and their Python workers (its process group
        and every descendant, collected before the kill: orphans are re-parented). Returns
        the pids killed, once none of them runs any more."""
        w = self.workers[i]
        if w is None:
            return []
        return self._kill(sorted({w.pid, *descendants(w.pid), *_group(w.pid)}), timeout_s,
                          reap=w)

    def kill_executors(self, i: int, timeout_s: float = 20) -> list[int]:
        """SIGKILL worker ``i``'s executors and their Python workers, not the worker: it
        starts a new executor (a new id and working directory: empty local state). Returns
        the pids killed, once none of them runs any more."""
        return self._kill(sorted({q for p in self.executors(i) for q in (p, *descendants(p))}),
                          timeout_s)

    def _kill(self, pids: list[int], timeout_s: float, reap: Any = None) -> list[int]:
        """SIGKILL ``pids`` (``reap``: our child among them, waited for); ``pids`` once none
        of them runs any more."""
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if reap is not None:
            reap.wait(timeout_s)
        deadline = time.monotonic() + timeout_s
        while any(_alive(p) for p in pids):
            if time.monotonic() > deadline:
                raise TimeoutError(f"still running after SIGKILL: "
                                   f"{[p for p in pids if _alive(p)]}")
            time.sleep(0.1)
        self.killed.extend(pids)
        return pids

    def stop(self, timeout_s: float = 20) -> None:
        """Stop every worker (and its executors) and the master: SIGTERM to each process
        group, SIGKILL to what is left after ``timeout_s``."""
        procs = [w for w in self.workers if w is not None] + (
            [self.master] if self.master is not None else [])
        groups = {p.pid: sorted({p.pid, *descendants(p.pid), *_group(p.pid)}) for p in procs}
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for pids in groups.values():
            _kill_alive(pids)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.master, self.workers = None, [None] * self.n_workers

    # -- applications ---------------------------------------------------------------------
    def submit(self, script: Path | str, args: list[str], conf: dict[str, str] | None = None,
               cwd: Path | None = None, log: Path | None = None,
               python: str = sys.executable) -> subprocess.Popen:
        """``spark-submit --master spark://...`` of a Python ``script`` (client mode: the
        driver runs here, in ``cwd``); its output goes to ``log``. The executors run
        ``python`` (``spark.pyspark.python``), which must have kspark installed."""
        cwd = Path(cwd or self.root)
        cwd.mkdir(parents=True, exist_ok=True)
        settings = {"spark.pyspark.python": python, "spark.pyspark.driver.python": python,
                    "spark.driver.host": HOST, "spark.driver.bindAddress": HOST,
                    **(conf or {})}
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.url,
               "--driver-java-options", f"-Dlog4j2.configurationFile=file:{LOG4J}"]
        for k, v in settings.items():
            cmd += ["--conf", f"{k}={v}"]
        cmd += [str(script), *args]
        out = open(log or (cwd / "driver.log"), "wb")
        try:
            return subprocess.Popen(cmd, cwd=cwd, env=_env(), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            out.close()


def stop_process_group(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    """End a process started with ``start_new_session`` and everything it started (a
    spark-submit: the launcher JVM and its Python driver): SIGTERM, then SIGKILL."""
    pids = sorted({proc.pid, *descendants(proc.pid), *_group(proc.pid)})
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
    _kill_alive(pids)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass
