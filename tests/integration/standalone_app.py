"""A kspark application for ``spark-submit`` onto a Spark standalone cluster
(tests/integration/test_standalone_cluster.py).

Two sub-topologies in one application:

- a windowed count: ``group_by_key().windowed_by(TimeWindows.of_size_and_grace(10 s,
  2 s)).count()`` of ``WIN_IN``, each update written to ``WIN_OUT`` as ``<key>@<window
  start>`` -> count (caching off: every update);
- a stream-table join: the stream ``CLICKS`` joined with the table ``USERS``, written to
  ``JOINED`` as ``<click>:<user>``.

Usage (argv)::

    spark-submit --master spark://HOST:PORT ... standalone_app.py \\
        BOOTSTRAP WIN_IN,WIN_OUT,USERS,CLICKS,JOINED APP_ID GUARANTEE STATE_DIR \\
        CHECKPOINT [MAX_OFFSETS_PER_TRIGGER [HOLD_WORK_DIR HOLD_DIR]]

``GUARANTEE`` is ``at_least_once`` or ``exactly_once_v2``, or both comma-separated: then
the driver runs one application per guarantee at once, on the same executors, reading the
same input, with ``application.id`` ``APP_ID-<guarantee>`` and output topics
``WIN_OUT-<guarantee>`` and ``JOINED-<guarantee>``. ``STATE_DIR`` is meant to be relative
(each executor keeps its tasks' stores in its own working directory on its own machine);
each application's Spark checkpoint is ``CHECKPOINT/<application.id>``, an absolute path
on storage every driver start can reach. The applications run as incremental batch runs
(``autostop.at=eol``): they process the input present at their start, and the driver exits
0 once every one finished. It prints ``<application.id> batches N`` as micro-batches
complete and ``<application.id> done {...}`` at the end, then ``<application.id> iq {...}``: its two
stores as interactive queries read them from the executors (``stores_read``).

``HOLD_WORK_DIR HOLD_DIR``: once every application has committed two micro-batches (their
Spark checkpoints' commit logs), the first windowed-count record (of a third or later
micro-batch) that a task processes on an executor whose working directory is under
``HOLD_WORK_DIR`` (a worker's work directory) is held: that task writes
``HOLD_DIR/held`` (JSON: its pid, working directory, record) and waits until
``HOLD_DIR/release`` exists (at most 10 minutes). Every other record passes. So a test sees
a file, not a moment, when that worker runs a task.

The session comes from ``SparkSession.builder.getOrCreate()``, so spark-submit's
``--master`` and ``--conf`` settings hold (``kspark.spark_session()``, or a
``KafkaStreams`` given no session, would set ``spark.master`` to kspark's default
``local[*]``).
"""

from __future__ import annotations

import json
import sys

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder, TimeWindows)

S, L = Serdes.String(), Serdes.Long()
WINDOW_MS, GRACE_MS = 10_000, 2_000


def add_windowed_count(b: StreamsBuilder, src: str, dst: str, hold=None) -> None:
    s = b.stream(src, key_serde=S, value_serde=S)
    if hold is not None:
        s = s.peek(hold)
    (s.group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
      .count(Materialized.as_("win-counts"))
      .to_stream()
      .map(lambda wk, n: (f"{wk.key}@{wk.window.start}", n))
      .to(dst, key_serde=S, value_serde=L))


def add_join(b: StreamsBuilder, users: str, clicks: str, dst: str) -> None:
    table = b.table(users, key_serde=S, value_serde=S,
                    materialized=Materialized.as_("users-table"))
    (b.stream(clicks, key_serde=S, value_serde=S)
      .join(table, lambda click, user: f"{click}:{user}")
      .to(dst, key_serde=S, value_serde=S))


def holding(work_dir: str, hold_dir: str, commit_logs: list[str], first: int = 150):
    """The ``peek`` action of the module's HOLD (``first``: the lowest record index, ``v<i>``,
    that may be held: 75 per partition and micro-batch, so a third or later one's)."""
    import json
    import os
    import time

    marker, release = os.path.join(hold_dir, "held"), os.path.join(hold_dir, "release")
    ready = []  # every application committed two micro-batches (once true, stays true)

    def hold(key, value) -> None:
        if int(value[1:]) < first or os.path.exists(marker):
            return
        here = os.getcwd()
        if not here.startswith(work_dir.rstrip("/") + "/"):
            return
        if not ready:
            if not all(os.path.isdir(c) and sum(n.isdigit() for n in os.listdir(c)) >= 2
                       for c in commit_logs):
                return
            ready.append(True)
        tmp = f"{marker}.{os.getpid()}.{time.monotonic_ns()}"
        with open(tmp, "w") as f:
            json.dump({"pid": os.getpid(), "cwd": here, "key": key, "value": value}, f)
        try:
            os.link(tmp, marker)  # atomic, and only one task's: the others pass
        except FileExistsError:
            return
        finally:
            os.unlink(tmp)
        deadline = time.monotonic() + 600
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.1)

    return hold


def topology(win_in: str, win_out: str, users: str, clicks: str, joined: str, hold=None):
    b = StreamsBuilder()
    add_windowed_count(b, win_in, win_out, hold)
    add_join(b, users, clicks, joined)
    return b.build()


def config(bootstrap: str, app_id: str, guarantee: str, state_dir: str, checkpoint: str,
           max_offsets: int) -> dict:
    return {"application.id": app_id, "bootstrap.servers": bootstrap,
            "execution.mode": "micro_batch",
            "processing.guarantee": guarantee, "state.dir": state_dir,
            "checkpoint.location": checkpoint, "autostop.at": "eol",
            "statestore.cache.max.bytes": 0, "max.offsets.per.trigger": max_offsets,
            "request.timeout.ms": 20000,
            # the killed worker is not replaced: its tasks go to the other one at once
            "placement.replacement.wait.ms": 0}


def stores_read(streams: KafkaStreams) -> dict:
    """The application's two stores read from the executors holding them (interactive
    queries, after the run): the users table, and every window's count."""
    kv, window = QueryableStoreTypes.key_value_store(), QueryableStoreTypes.window_store()
    users = streams.store(StoreQueryParameters.from_name_and_type("users-table", kv))
    counts = streams.store(StoreQueryParameters.from_name_and_type("win-counts", window))
    return {"users": {e.key: e.value for e in users.all()},
            "windows": {f"{e.key.key}@{e.key.window.start}": e.value for e in counts.all()}}


def main(argv: list[str]) -> int:
    import os
    import time

    from pyspark.sql import SparkSession

    bootstrap, topics, app_id, guarantees, state_dir, checkpoint = argv[:6]
    max_offsets = int(argv[6]) if len(argv) > 6 else 300
    hold_args = argv[7:9]
    win_in, win_out, users, clicks, joined = topics.split(",")
    spark = SparkSession.builder.getOrCreate()  # spark-submit's --master and --conf
    print(f"master {spark.sparkContext.master} at {time.time():.1f}", flush=True)
    apps = {}
    several = "," in guarantees
    names = [f"{app_id}-{g}" if several else app_id for g in guarantees.split(",")]
    hold = holding(*hold_args, [os.path.join(checkpoint, n, "commits") for n in names]
                   ) if len(hold_args) == 2 else None
    for g in guarantees.split(","):
        suffix = f"-{g}" if several else ""
        app = f"{app_id}{suffix}"
        streams = KafkaStreams(
            topology(win_in, f"{win_out}{suffix}", users, clicks, f"{joined}{suffix}", hold),
            config(bootstrap, app, g, state_dir, os.path.join(checkpoint, app), max_offsets),
            spark=spark)
        streams.start()
        print(f"{app} started at {time.time():.1f}", flush=True)
        apps[app] = streams
    shown = {app: -1 for app in apps}
    running = dict(apps)
    while running:
        for app, streams in list(running.items()):
            if streams.await_termination(0.2):
                print(f"{app} done {streams.progress()} finished={streams.batch_finished()}",
                      flush=True)
                del running[app]
            elif (n := streams.progress()["batches"]) != shown[app]:
                shown[app] = n
                print(f"{app} batches {n} at {time.time():.1f}", flush=True)
    finished = all(s.batch_finished() for s in apps.values())
    for app, streams in apps.items():
        print(f"{app} iq {json.dumps(stores_read(streams))}", flush=True)
    for streams in apps.values():
        streams.close()
    spark.stop()
    return 0 if finished else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
