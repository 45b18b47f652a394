"""What the test applications run as scripts share (``eos_app``, ``async_app``,
``cluster_app``, ``global_app``, ``iq_cluster_app``, ``connect_conformance``,
``connect_sinks``): the SparkSession, the keys every config sets, starting, the ``batches N``
lines the tests that kill processes watch, the hold-file handshake and the end.

The spark-submitted apps (``standalone_app``, ``standalone_rt_app``) do not use it: they run
as files, without the repository on the path, and their executors get their code pickled
by value from ``__main__``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from kspark import KafkaStreams, spark_session

HOLD_S = 600  # the longest a held task waits for its release


def arguments(*positional: str, mode_help: str) -> argparse.ArgumentParser:
    """A parser of the ``positional`` arguments (strings) and ``--mode`` (the
    ``execution.mode``, ``micro_batch`` by default); the app adds its own options."""
    ap = argparse.ArgumentParser()
    for name in positional:
        ap.add_argument(name)
    ap.add_argument("--mode", default="micro_batch", choices=("micro_batch", "real_time"),
                    help=mode_help)
    return ap


def local_session(master: str = "local[2]", shuffle_partitions: int | None = None):
    """A classic session on ``master`` (``local[N]``, ``local-cluster[...]``): no UI, a
    failed task tried up to 8 times (an executor a test kills takes its tasks with it)."""
    conf = {"spark.master": master, "spark.ui.enabled": "false", "spark.task.maxFailures": "8"}
    if shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    return spark_session(conf)


def connect_session(url: str):
    """A Spark Connect client of the server at ``url``."""
    return spark_session({"spark.remote": url})


def base_config(bootstrap: str, app_id: str, state_dir: str, mode: str,
                guarantee: str) -> dict[str, Any]:
    """The keys every test application sets; each adds its own."""
    return {"application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
            "execution.mode": mode, "processing.guarantee": guarantee}


def start(streams: KafkaStreams) -> None:
    """Start the application and print ``started`` (a test waits for it)."""
    streams.start()
    print("started", flush=True)


def run_printing_batches(streams: KafkaStreams) -> None:
    """Wait for a started application, printing ``batches N`` as micro-batches complete
    (what the tests that kill processes watch), then close it."""
    shown = -1
    while not streams.await_termination(0.2):
        n = streams.progress()["batches"]
        if n != shown:
            shown = n
            print(f"batches {n}", flush=True)
    print(f"done {streams.progress()}", flush=True)
    streams.close()


def print_client_jvm() -> None:
    """``client jvm: none`` when this process started no JVM (a Spark Connect client)."""
    from pyspark import SparkContext

    print(f"client jvm: {'none' if SparkContext._jvm is None else 'started'}", flush=True)


def end(spark) -> int:
    """Stop the session; the script's exit code (0)."""
    spark.stop()
    return 0


def hold_once(hold_dir: str, what: dict[str, Any]) -> None:
    """The first caller of all processes writes ``hold_dir/held`` (JSON: ``what``) and waits
    until ``hold_dir/release`` exists (at most ``HOLD_S``); any later caller returns at once.
    So a test sees a file, not a moment, when a task is at a given point."""
    marker = os.path.join(hold_dir, "held")
    if os.path.exists(marker):
        return
    tmp = f"{marker}.{os.getpid()}.{time.monotonic_ns()}"
    with open(tmp, "w") as f:
        json.dump(what, f)
    try:
        os.link(tmp, marker)  # atomic, and only one caller's: the others pass
    except FileExistsError:
        return
    finally:
        os.unlink(tmp)
    deadline = time.monotonic() + HOLD_S
    while not os.path.exists(os.path.join(hold_dir, "release")) and time.monotonic() < deadline:
        time.sleep(0.1)
