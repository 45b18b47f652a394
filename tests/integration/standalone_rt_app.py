"""A stateful kspark application for ``spark-submit`` onto a Spark standalone cluster
(tests/integration/test_standalone_cluster.py, the placement tests).

A logged RocksDB count per key (caching off: every update goes out) of ``SRC`` to ``DST``
under exactly_once_v2, in ``MODE`` (default ``real_time``): real-time, run by two stream
threads with epochs of ``EPOCH_MS``, each epoch a new Spark job, whose tasks Spark hands to
the executors in no fixed order; micro-batch, a micro-batch every ``EPOCH_MS``. The
driver writes ``ROUNDS`` rounds of ``PER_ROUND`` records
over ``KEYS`` keys, one round per epoch, waits until the consumer group has committed all
of them, then prints ``done <progress as JSON>`` and exits 0.

Usage (argv)::

    spark-submit --master spark://HOST:PORT ... standalone_rt_app.py \\
        BOOTSTRAP SRC DST APP_ID STATE_DIR ROUNDS PER_ROUND KEYS EPOCH_MS [MODE [HOLD]]

``STATE_DIR`` is meant to be relative: each executor keeps its tasks' stores in its own
working directory, as on separate machines. It prints ``round R processed`` once an epoch's
threads have processed round ``R`` (they run: past the epoch's start), and ``epochs N`` as
epochs (micro-batches) end; ``spark app <id>`` first (the executors' work directories are
named after it).

``HOLD`` (micro-batch mode), ``R:PATH``: after round ``R`` the driver writes nothing until
the query is idle (its last trigger found no new data: every micro-batch with round ``R``
has ended, and none starts while no input arrives), prints ``idle after round R`` and
waits for the file ``PATH``; then, until the driver has lost one of the executors it had
(the test killed one), and prints ``resumed`` before it writes round ``R + 1``. So an
executor killed between those two lines is killed between micro-batches, surely.
"""

from __future__ import annotations

import json
import sys
import time

from kspark import KafkaStreams, Materialized, Serdes, StreamsBuilder
from kspark.state import Stores

S, L = Serdes.String(), Serdes.Long()


def topology(src: str, dst: str):
    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=S).group_by_key()
      .count(Materialized.as_(Stores.persistent_key_value_store("counts"))
             .with_caching_disabled())
      .to_stream().to(dst, key_serde=S, value_serde=L))
    return b.build()


def produce(bootstrap: str, src: str, first: int, n: int, keys: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                  "linger.ms": 5, "partitioner": "murmur2_random"})
    for i in range(first, first + n):
        p.produce(src, key=f"k{i % keys}".encode(), value=str(i).encode(), timestamp=1000 + i)
    assert p.flush(30) == 0


def hold(spark, streams, admin, src: str, gate: str, r: int, deadline: float) -> None:
    """See the module: wait (no input written) until the query is idle, then for ``gate``,
    then until one of the executors of before is gone from the driver's view."""
    import os

    from kspark._spark.located import live_executors

    inputs = [(src, p) for p in range(admin.partition_counts()[src])]
    ends = admin.end_offsets(inputs)

    def done() -> dict:
        """The source's end offsets in the query's last progress: those of its last
        micro-batch that ended (Spark reports a batch's progress once it has run)."""
        out: dict = {}
        for q in spark.streams.active:
            for source in (q.lastProgress or {}).get("sources") or []:
                end = source.get("endOffset") or {}
                out.update((json.loads(end) if isinstance(end, str) else end).get(src, {}))
        return out

    # every micro-batch with input up to the ends has ended; no later one starts while no
    # input arrives: once true, this stays true
    while not all(done().get(str(p), 0) >= ends[(t, p)] for t, p in inputs):
        assert time.monotonic() < deadline, (
            f"the query's micro-batches did not reach {ends} in time: {done()}")
        assert not streams.await_termination(0.2), "the application stopped"
    had = set(live_executors(spark))
    print(f"idle after round {r} (executors {sorted(had)})", flush=True)
    while not os.path.exists(gate):
        assert time.monotonic() < deadline, f"no {gate} in time"
        assert not streams.await_termination(0.2), "the application stopped"
    while had <= set(live_executors(spark)):
        assert time.monotonic() < deadline, f"no executor of {sorted(had)} was lost in time"
        assert not streams.await_termination(0.2), "the application stopped"
    print(f"resumed (executors {sorted(live_executors(spark))})", flush=True)


def main(argv: list[str]) -> int:
    from pyspark.sql import SparkSession

    from kspark._kafka.admin import Admin

    bootstrap, src, dst, app_id, state_dir = argv[:5]
    rounds, per_round, keys, epoch_ms = map(int, argv[5:9])
    mode = argv[9] if len(argv) > 9 else "real_time"
    hold_round, _, hold_file = argv[10].partition(":") if len(argv) > 10 else ("-1", "", "")
    spark = SparkSession.builder.getOrCreate()  # spark-submit's --master and --conf
    print(f"spark app {spark.sparkContext.applicationId}", flush=True)
    config = {"application.id": app_id, "bootstrap.servers": bootstrap,
              "state.dir": state_dir, "processing.guarantee": "exactly_once_v2",
              "statestore.cache.max.bytes": 0, "request.timeout.ms": 20000,
              "execution.mode": mode}
    if mode == "real_time":
        config.update({"real_time.epoch.ms": epoch_ms,
                       "commit.interval.ms": 200, "num.stream.threads": 2})
    else:
        # a lost executor's tasks wait for its replacement however long that takes to start
        # (bounded), so they move once, to it, on a busy machine too
        config.update({"commit.interval.ms": epoch_ms, "placement.replacement.wait.ms": 120_000})
    streams = KafkaStreams(topology(src, dst), config, spark=spark)
    streams.start()
    admin = Admin(bootstrap, 20000)
    deadline = time.monotonic() + 600
    shown = -1
    for r in range(rounds):
        produce(bootstrap, src, r * per_round, per_round, keys)
        while streams.progress()["position"] < (r + 1) * per_round:  # the group committed it
            assert time.monotonic() < deadline, "the round was not processed in time"
            assert not streams.await_termination(0.2), "the application stopped"
        print(f"round {r} processed", flush=True)
        while streams.progress()["batches"] <= r:  # the next round in the next epoch
            assert time.monotonic() < deadline, "epochs did not end in time"
            assert not streams.await_termination(0.2), "the application stopped"
            if (n := streams.progress()["batches"]) != shown:
                shown = n
                print(f"epochs {n}", flush=True)
        if r == int(hold_round):
            hold(spark, streams, admin, src, hold_file, r, deadline)
    inputs = [(src, p) for p in range(admin.partition_counts()[src])]
    ends = admin.end_offsets(inputs)
    while not all(admin.group_offsets(app_id).get(tp, 0) >= ends[tp] for tp in inputs):
        assert time.monotonic() < deadline, "the input was not committed in time"
        assert not streams.await_termination(0.2), "the application stopped"
    streams.close()
    print(f"done {json.dumps(streams.progress())}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
