"""The exactly-once test application, run as a script (a driver process a test can kill).

Modelled on Kafka's EOS system test: from ``SRC`` (keys ``k<n>``, Long values) it echoes
every record to ``SRC-echo`` and, after a repartition (``group_by``), keeps per key the
count, sum, min and max of the values (a RocksDB store, caching off), emitted to
``SRC-agg`` as JSON on every update; ``--counts``: a cached ``count()`` too, to ``SRC-count``.

``python -m tests.integration.eos_app BOOTSTRAP SRC APP_ID STATE_DIR [options]``; prints
``started`` and then ``batches N`` as micro-batches complete; exits 0 when the input present
at start is consumed (``autostop.at=eol``; ``--mode real_time``: once the consumer group
has committed it, then it closes the application).

``--hold-after-commit DIR``: the first task to commit a batch >= 1 writes ``DIR/held``
(JSON: task, batch) right after its commit and waits until ``DIR/release`` exists (at most
10 minutes): a test sees a file, not a moment, when a task has committed a batch that Spark
has not (the batch cannot end while that task waits).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException

from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder
from kspark.errors import KSparkError
from kspark.state import Stores
from tests.integration.app_base import (arguments, base_config, connect_session, end, hold_once,
                                        local_session, print_client_jvm, run_printing_batches,
                                        start)

S, L, J = Serdes.String(), Serdes.Long(), Serdes.Json()


def _fold(slow_ms: float):
    def add(key, value, agg):
        if slow_ms:
            time.sleep(slow_ms / 1000)
        return {"count": agg["count"] + 1, "sum": agg["sum"] + value,
                "min": value if agg["min"] is None else min(agg["min"], value),
                "max": value if agg["max"] is None else max(agg["max"], value)}
    return add


def topology(src: str, slow_ms: float = 0.0, delta: str | None = None, counts: bool = False):
    """``counts``: also a cached ``count()`` per key after a repartition of its own, emitted
    to ``SRC-count`` (its tasks count a batch at a time: the batch path)."""
    b = StreamsBuilder()
    s = b.stream(src, key_serde=S, value_serde=L)
    s.to(f"{src}-echo", key_serde=S, value_serde=L)
    if delta is not None:  # the echo in a Delta table too (KStream.to_spark)
        s.to_spark("delta", path=delta, name="echo-delta")
    aggs = Materialized.as_(Stores.persistent_key_value_store("aggs")).with_value_serde(J)
    (s.group_by(lambda k, v: k, key_serde=S, value_serde=L)
      .aggregate(lambda: {"count": 0, "sum": 0, "min": None, "max": None}, _fold(slow_ms),
                 aggs.with_caching_disabled())
      .to_stream().to(f"{src}-agg", key_serde=S, value_serde=J))
    if counts:
        (s.group_by(lambda k, v: k, key_serde=S, value_serde=L)
          .count(Materialized.as_("counts").with_caching_enabled())
          .to_stream().to(f"{src}-count", key_serde=S, value_serde=L))
    return b.build()


def config(bootstrap: str, app_id: str, state_dir: str, guarantee: str,
           max_offsets: int, mode: str = "micro_batch") -> dict:
    cfg = base_config(bootstrap, app_id, state_dir, mode, guarantee) | {
        "autostop.at": "eol", "statestore.cache.max.bytes": 0,
        "max.offsets.per.trigger": max_offsets, "request.timeout.ms": 20000,
        "placement.replacement.wait.ms": 2000}  # exactness is checked here, not placement
    if mode == "real_time":  # runs until closed; at_least_once commits every second
        del cfg["max.offsets.per.trigger"], cfg["placement.replacement.wait.ms"]
        cfg["autostop.at"] = "none"
        if guarantee == "at_least_once":
            cfg["commit.interval.ms"] = 1000
    return cfg


@dataclass(frozen=True)
class HoldAfterCommit:
    """An ``after_commit`` task hook: see ``--hold-after-commit`` in the module."""

    hold_dir: str
    first_batch: int = 1

    def __call__(self, task_id: str, batch: tuple[str, int] | None, attempt: int) -> None:
        if batch is None or batch[1] < self.first_batch:
            return
        hold_once(self.hold_dir, {"task": task_id, "batch": batch[1], "pid": os.getpid()})


def main(argv: list[str]) -> int:
    ap = arguments("bootstrap", "src", "app_id", "state_dir",
                   mode_help="execution.mode; real_time runs until the input present at start "
                   "is committed, then closes")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--guarantee", default="exactly_once_v2")
    ap.add_argument("--max-offsets", type=int, default=2000)
    ap.add_argument("--slow-ms", type=float, default=0.0)
    ap.add_argument("--checkpoint", default=None, help="checkpoint.location (default: under "
                    "state.dir)")
    ap.add_argument("--standbys", type=int, default=0,
                    help="num.standby.replicas")
    ap.add_argument("--rack-tags", default=None, help="rack.aware.assignment.tags")
    ap.add_argument("--task-timeout-ms", type=int, default=None,
                    help="task.timeout.ms: how long a broker outage is ridden through")
    ap.add_argument("--fail-after-commit", default=None,
                    help="'<task id>:<batch id>': that task's first attempt fails after its commit")
    ap.add_argument("--hold-after-commit", default=None, metavar="DIR",
                    help="the first task to commit a batch >= 1 then waits for DIR/release")
    ap.add_argument("--delta", default=None, metavar="PATH",
                    help="also write the echo to the Delta table at PATH (a batch run in "
                    "both modes: the sink drains before the run ends)")
    ap.add_argument("--counts", action="store_true",
                    help="also a cached count() per key, to SRC-count (the batch path)")
    ap.add_argument("--remote", default=None, metavar="URL",
                    help="run on this Spark Connect server (spark.remote; --master is the "
                    "server's)")
    a = ap.parse_args(argv)
    spark = (connect_session(a.remote) if a.remote
             else local_session(a.master, shuffle_partitions=2))
    if a.fail_after_commit and a.hold_after_commit:
        ap.error("--fail-after-commit and --hold-after-commit exclude each other")
    if a.fail_after_commit or a.hold_after_commit:
        from kspark._host.hooks import FailAfterCommit, TaskHooks, install_task_hooks
        # by its importable name, not __main__'s, for the workers
        from tests.integration.eos_app import HoldAfterCommit

        install_task_hooks(TaskHooks(after_commit=FailAfterCommit(
            tuple(a.fail_after_commit.split(","))) if a.fail_after_commit
            else HoldAfterCommit(a.hold_after_commit)))
    cfg = config(a.bootstrap, a.app_id, a.state_dir, a.guarantee, a.max_offsets, a.mode)
    if a.task_timeout_ms is not None:
        cfg["task.timeout.ms"] = a.task_timeout_ms
    if a.counts:  # the record cache on (the aggregate's store is uncached all the same)
        del cfg["statestore.cache.max.bytes"]
    if a.standbys:
        cfg["num.standby.replicas"] = a.standbys
        # the harness waits for the first round of copies (micro_batch) and reads where the
        # lost tasks went
        logging.getLogger("kspark").addHandler(logging.StreamHandler(sys.stdout))
        logging.getLogger("kspark").setLevel(logging.INFO)
    if a.rack_tags:
        cfg["rack.aware.assignment.tags"] = a.rack_tags
    if a.checkpoint and a.mode == "micro_batch":
        cfg["checkpoint.location"] = a.checkpoint
    if a.delta and a.mode == "real_time":  # a batch run: the Delta sink drains before its end
        cfg["autostop.at"] = "eol"
    streams = KafkaStreams(topology(a.src, a.slow_ms, a.delta, a.counts), cfg, spark=spark)
    if a.mode == "real_time" and not a.delta:
        run_until_consumed(streams, a.bootstrap, a.app_id, a.src)
    else:
        start(streams)
        run_printing_batches(streams)
    if a.remote:  # a Spark Connect client starts no JVM of its own
        print_client_jvm()
    return end(spark)


def run_until_consumed(streams: KafkaStreams, bootstrap: str, app_id: str, src: str) -> None:
    """Real-time mode: start, print ``batches N`` as the group's committed position moves,
    and close once it has committed the input present at start and every repartition record
    written for it (the input's ends first, so the repartition ends are final).

    The group's offsets are read as the application's own threads read them (a consumer's
    committed offsets, a second at most per look while a broker restarts: the
    application's own bounds decide then, not this loop)."""
    from kspark._kafka.admin import Admin
    from kspark._kafka.clients import committed_offsets

    admin = Admin(bootstrap, 20000)
    inputs = [(src, p) for p in range(admin.partition_counts()[src])]
    ends = admin.end_offsets(inputs)
    start(streams)
    shown, position, rep = 0, None, None

    def committed(tps):
        return committed_offsets(bootstrap, app_id, tps, timeout_s=5, stable=False,
                                 patience_s=1.0)

    while not streams.await_termination(0.2):
        try:
            done = committed(inputs)
            now = sum(done.get(tp, 0) for tp in inputs)
            if position is not None and now > position:
                shown += 1
                print(f"batches {shown}", flush=True)
            position = now
            if not all(done.get(tp, 0) >= ends[tp] for tp in inputs):
                continue
            if rep is None:
                counts = admin.partition_counts()
                rep = [(t, p) for t in counts if t.startswith(f"{app_id}-")
                       and t.endswith("-repartition") for p in range(counts[t])]
            rep_ends = admin.end_offsets(rep, patience_s=1.0)
            done = committed(rep)
            if all(done.get(tp, 0) >= rep_ends[tp] for tp in rep):
                break
        except (KSparkError, KafkaException):
            continue
    print(f"done {streams.progress()}", flush=True)
    streams.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
