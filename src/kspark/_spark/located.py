"""Run a DataFrame's partitions on chosen executors: kspark's placement shim.

PySpark's Python data sources give their partitions no preferred location, and a shuffle's
reduce partitions prefer wherever most of their input was written, so without help a
task lands on any executor and, on a cluster whose executors have their own disks,
restores its state there. :func:`located` wraps a DataFrame's partitions, one to one, in
``kspark.placement.LocatedRDD`` (``jvm/LocatedRDD.java``), whose partition ``i`` prefers
the executors named for it; with ``spark.locality.wait.process`` long (see
:func:`load`), Spark runs it there whenever that executor is alive.

The class is compiled once per Spark version with the JDK's ``javac`` into kspark's cache
(``$KSPARK_HOME``, else ``~/.cache/kspark``), added to the driver's class loader and shipped
to the executors with ``addJar``.

Example (needs Spark, so not run)::

    load(spark)
    ids = live_executors(spark)             # {"0": "executor_host-a_0", "1": ...}
    df = located(spark, df, [[ids["0"]], [ids["1"]]])  # partition 0 on "0", 1 on "1"
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import DataFrame, SparkSession

from kspark._local.jars import kspark_home
from kspark.errors import PrerequisiteError

__all__ = ["load", "located", "located_rdd", "Rows", "live_executors", "executor_slots",
           "ran_on", "placement_jar", "LOCALITY_WAIT", "LOCATED_CLASS", "tagged_tasks"]

log = logging.getLogger("kspark")

LOCATED_CLASS = "kspark.placement.LocatedRDD"
# How long a task waits for its executor while that executor is busy before Spark runs it
# elsewhere (Spark's default, 3 s, moves any task that waits behind a longer one)
LOCALITY_WAIT = ("spark.locality.wait.process", "30s")


def placement_jar(home: Path | None = None) -> Path:
    """The shim's jar for this Spark version, compiled with ``javac`` the first time into a
    directory only this user can write (:func:`private_dir`), and loaded only while its
    SHA-256 matches the one recorded when it was compiled (else it is compiled again)."""
    source = resources.files("kspark._spark").joinpath("jvm/LocatedRDD.java").read_text()
    tag = hashlib.sha256(f"{pyspark.__version__}\n{source}".encode()).hexdigest()[:12]
    jar = private_dir((home or kspark_home()) / "jvm") / f"kspark-placement-{tag}.jar"
    recorded = jar.with_suffix(".jar.sha256")
    if jar.exists() and recorded.exists() and recorded.read_text().strip() == _sha256(jar):
        return jar
    if jar.exists():
        log.warning("kspark's placement shim %s does not match its recorded SHA-256: "
                    "compiling it again", jar)
    _compile(source, jar)
    recorded.write_text(_sha256(jar) + "\n")
    return jar


def private_dir(path: Path) -> Path:
    """``path``, created if missing, owned by this user and writable by no one else (a jar
    there is loaded into the driver and the executors): else a PrerequisiteError saying what
    to do."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PrerequisiteError(
            f"{path} holds code kspark loads into Spark, but it is not owned by this user or "
            f"others can write to it (mode {oct(st.st_mode & 0o777)}): run "
            f"'chmod go-w {path}' (and chown it to this user), or point KSPARK_HOME elsewhere")
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compile(source: str, jar: Path) -> None:
    """Compile the shim's ``source`` with ``javac`` into ``jar`` (atomically)."""
    javac = _javac()
    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        src = Path(tmp, "LocatedRDD.java")
        src.write_text(source)
        out = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-cp", f"{jars}{os.sep}*", "-d",
             str(Path(tmp, "classes")), str(src)], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise PrerequisiteError(f"compiling kspark's placement shim with {javac} failed: "
                                    f"{(out.stderr or out.stdout).strip()[:2000]}")
        partial = Path(tmp, "shim.jar")
        with zipfile.ZipFile(partial, "w") as z:
            for f in sorted(Path(tmp, "classes").rglob("*.class")):
                z.write(f, f.relative_to(Path(tmp, "classes")).as_posix())
        os.replace(partial, jar)  # atomic: a concurrent run sees no half-written jar


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    found = Path(home, "bin", "javac") if home else None
    javac = str(found) if found and found.exists() else shutil.which("javac")
    if javac is None:
        raise PrerequisiteError(
            "kspark places each task on the executor holding its state with a small JVM "
            "class it compiles once, and no javac was found (JAVA_HOME or PATH). Install a "
            "JDK 17 (for example 'apt-get install openjdk-17-jdk-headless') and retry")
    return javac


def load(spark: SparkSession, long_wait: bool = True) -> bool:
    """Make the shim usable in ``spark`` (once per Spark application): on the driver's class
    loader, shipped to executors, and (``long_wait``) ``spark.locality.wait.process`` long
    unless it or ``spark.locality.wait`` is set.
    False when it cannot be built (no ``javac``), with a warning unless the master is
    local: tasks then run wherever Spark puts them (correct, but they restore more)."""
    sc = spark.sparkContext
    jvm: Any = sc._jvm  # noqa: SLF001 - the gateway is PySpark's way into the JVM
    conf = sc._jsc.sc().conf()  # noqa: SLF001 - the live SparkConf, read by each task set
    key, value = LOCALITY_WAIT
    if long_wait and not conf.contains(key) and not conf.contains("spark.locality.wait"):
        conf.set(key, value)
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if _loadable(jvm, loader):
        return True
    try:
        jar = placement_jar()
    except PrerequisiteError as e:  # local mode has one executor: nothing to place
        master = str(sc.master)
        local = master.startswith("local") and not master.startswith("local-cluster")
        (log.debug if local else log.warning)("tasks are not placed where their state is: %s",
                                              e)
        return False
    loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
    sc._jsc.addJar(str(jar))  # noqa: SLF001
    return _loadable(jvm, loader)


def _loadable(jvm: Any, loader: Any) -> bool:
    try:
        jvm.java.lang.Class.forName(LOCATED_CLASS, True, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError (ClassNotFoundException)
        return False


def live_executors(spark: SparkSession) -> dict[str, str]:
    """Executor id -> its location string (``executor_<host>_<id>``), of the executors alive
    now; in local mode the one executor, ``driver``."""
    listed = spark.sparkContext._jsc.sc().statusStore().executorList(True)  # noqa: SLF001
    out: dict[str, str] = {}
    for i in range(listed.size()):
        e = listed.apply(i)
        out[e.id()] = f"executor_{e.hostPort().rsplit(':', 1)[0]}_{e.id()}"
    if len(out) > 1:
        out.pop("driver", None)  # the driver runs no task beside executors
    return out


@dataclass(frozen=True)
class Rows:
    """A planned DataFrame's JVM rows (``RDD[InternalRow]``) and schema, to slice and place
    more than once (see :func:`located`) without planning it again."""

    rdd: Any
    schema: Any
    partitions: int

    @classmethod
    def of(cls, df: DataFrame) -> Rows:
        """``df`` planned once. With adaptive execution, the shuffles it reads run now."""
        rdd = df._jdf.queryExecution().toRdd()  # noqa: SLF001 - its JVM rows, not Python's
        return cls(rdd, df._jdf.schema(), rdd.getNumPartitions())  # noqa: SLF001


def located(spark: SparkSession, rows: DataFrame | Rows, locations: list[list[str]] | None,
            parents: list[int] | None = None) -> DataFrame:
    """A DataFrame of ``rows``' partitions ``parents`` (default: all, in order), its
    partition ``i`` preferring the executors ``locations[i]`` (location strings from
    :func:`live_executors`; None: no preference of its own)."""
    if isinstance(rows, DataFrame):
        rows = Rows.of(rows)
    parents = list(range(rows.partitions)) if parents is None else parents
    if locations is not None and len(locations) != len(parents):
        raise RuntimeError(f"placing {len(locations)} tasks on {len(parents)} partitions")
    if parents and max(parents) >= rows.partitions:
        raise RuntimeError(f"partition {max(parents)} asked of {rows.partitions} partitions")
    sc = spark.sparkContext
    gateway: Any = sc._gateway  # noqa: SLF001
    jvm: Any = sc._jvm  # noqa: SLF001
    indices = gateway.new_array(jvm.int, len(parents))
    for i, p in enumerate(parents):
        indices[i] = p
    here = locations or []
    array = gateway.new_array(jvm.java.lang.String, len(here), max(map(len, here), default=0))
    for i, names in enumerate(here):
        for j, name in enumerate(names):
            array[i][j] = name
    wrapped = jvm.kspark.placement.LocatedRDD(rows.rdd, indices, array)
    jdf = spark._jsparkSession.internalCreateDataFrame(wrapped, rows.schema, False)  # noqa: SLF001
    return DataFrame(jdf, spark)


def executor_slots(spark: SparkSession) -> dict[str, tuple[str, int]]:
    """Executor id -> (its location string, its task slots), of the executors alive now
    (see :func:`live_executors`)."""
    listed = spark.sparkContext._jsc.sc().statusStore().executorList(True)  # noqa: SLF001
    cpus = int(spark.sparkContext.getConf().get("spark.task.cpus", "1"))
    out: dict[str, tuple[str, int]] = {}
    for i in range(listed.size()):
        e = listed.apply(i)
        out[e.id()] = (f"executor_{e.hostPort().rsplit(':', 1)[0]}_{e.id()}",
                       max(1, int(e.totalCores()) // cpus))
    if len(out) > 1:
        out.pop("driver", None)
    return out


def ran_on(spark: SparkSession, group: str) -> str | None:
    """The executor of the latest attempt of the one task of job group ``group`` (a
    real-time stream thread's job), whatever its status (running, succeeded, or failed
    with its executor), in Spark's status store, which takes in task events shortly after
    they happen; None when not known (yet)."""
    sc = spark.sparkContext
    tracker, store = sc.statusTracker(), sc._jsc.sc().statusStore()  # noqa: SLF001
    latest: tuple[int, str] | None = None
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else []:
            stage_info = tracker.getStageInfo(stage)
            if stage_info is None:
                continue
            tasks = store.taskList(stage, stage_info.currentAttemptId, 100)
            for i in range(tasks.size()):
                t = tasks.apply(i)
                at = int(t.launchTime().getTime())
                if latest is None or at >= latest[0]:
                    latest = (at, str(t.executorId()))
    return None if latest is None else latest[1]


def located_rdd(rdd: Any, locations: list[list[str]]) -> Any:
    """A Python RDD of ``rdd``'s partitions, partition ``i`` preferring the executors
    ``locations[i]`` (the shim, as :func:`located` does for a DataFrame)."""
    from pyspark.rdd import RDD

    sc = rdd.context
    gateway: Any = sc._gateway  # noqa: SLF001
    jvm: Any = sc._jvm  # noqa: SLF001
    n = rdd.getNumPartitions()
    indices = gateway.new_array(jvm.int, n)
    for i in range(n):
        indices[i] = i
    array = gateway.new_array(jvm.java.lang.String, n, max(map(len, locations), default=0))
    for i, names in enumerate(locations):
        for j, name in enumerate(names):
            array[i][j] = name
    wrapped = jvm.kspark.placement.LocatedRDD(rdd._jrdd.rdd(), indices, array)  # noqa: SLF001
    return RDD(wrapped.toJavaRDD(), sc, rdd._jrdd_deserializer)  # noqa: SLF001


def tagged_tasks(spark: SparkSession, tag: str) -> tuple[int, int, set[int]]:
    """Of the jobs tagged ``tag`` (``SparkContext.addJobTag``): how many there are (0: not
    submitted yet), how many of their tasks run now, and the partitions of their final
    stage whose task succeeded, as Spark's status store has them (it takes in task events
    shortly after they happen)."""
    sc = spark.sparkContext
    jtracker = sc._jsc.sc().statusTracker()  # noqa: SLF001 - the JVM's (by tag)
    tracker, store = sc.statusTracker(), sc._jsc.sc().statusStore()  # noqa: SLF001
    jobs = list(jtracker.getJobIdsForTag(tag))
    running, succeeded = 0, set()
    for job in jobs:
        info = tracker.getJobInfo(job)
        stages = list(info.stageIds) if info is not None else []
        for stage in stages:
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None:
                running += stage_info.numActiveTasks
        final = tracker.getStageInfo(max(stages)) if stages else None
        if final is None:
            continue
        tasks = store.taskList(final.stageId, final.currentAttemptId, 1 << 20)
        for i in range(tasks.size()):
            t = tasks.apply(i)
            if t.status() == "SUCCESS":
                succeeded.add(int(t.index()))
    return len(jobs), running, succeeded
