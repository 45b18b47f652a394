"""End-to-end latency of a streaming kspark application at a steady input rate.

A producer writes ``--rate`` records/s for ``--seconds`` into a 2-partition topic, each value
holding its send time (ms); kspark (``autostop.at=none``, trigger = ``commit.interval.ms``)
copies them to an output topic whose timestamps are the broker's append times
(LogAppendTime). Latency = output append time - send time, over the records sent after
``--warmup`` seconds of steady input. Every record must come out once (at-least-once, no
failures, so exactly once here): the run fails otherwise.

    .venv/bin/python benchmarks/latency.py [--rate 5000] [--seconds 20] [--trigger-ms 100 1000]
        [--modes micro_batch real_time] [--guarantee at_least_once|exactly_once_v2]
        [--peers quix spark] [--spark-kafka-version 4.2.0]

``--modes``: kspark's ``execution.mode`` values to run (each with every ``--trigger-ms``,
which in real_time mode is the commit interval). Under exactly_once_v2 the output is read
with read_committed, so a record counts as out when its transaction commits.

``--peers``: the same passthrough, measured the same way in the same run, by Quix Streams
(``peers/systems/quix_latency.py``, in the peers' virtualenv, at its defaults) and native
PySpark (``peers/systems/spark_latency.py``: Spark's own Kafka source and sink, no trigger
set), each in a process of its own, started before the warm-up and stopped after the run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import local_broker, producer, send
from confluent_kafka import Consumer, TopicPartition

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from kspark._kafka.admin import Admin


def steady_input(bootstrap: str, topic: str, rate: int, seconds: float) -> int:
    """Write ``rate`` records/s for ``seconds``, values = send time in ms; returns the count."""
    p = producer(bootstrap, **{"linger.ms": 1})
    n, start = 0, time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(elapsed * rate)
        while n < due:
            send(p, topic, b"k%d" % (n % 1000), b"%d" % int(time.time() * 1000))
            n += 1
        p.poll(0)
        time.sleep(0.001)
    p.flush(60)
    return n


def latencies(bootstrap: str, topic: str, expected: int | list[int], timeout_s: float,
              committed: bool = False) -> list[tuple[int, int]]:
    """(send time, append time - send time) of every output record; waits for ``expected``
    (or, a list, for its first item, once the writer put it there).
    ``committed``: read with read_committed while the output is written, and measure to the
    time a record is read (a transaction's records are visible at its commit)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 5,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    c.assign([TopicPartition(topic, p, 0) for p in range(2)])
    out, deadline = [], time.monotonic() + timeout_s
    def done() -> bool:
        if isinstance(expected, int):
            want = expected
        elif isinstance(expected, list):
            want = expected[0] if expected else None
        else:  # a multiprocessing Value, 0 until the writer is done
            want = expected.value or None
        return want is not None and len(out) >= want

    while not done() and time.monotonic() < deadline:
        # wait for the first record only: consume(n, timeout) waits the whole timeout unless
        # n records arrived, which would count as latency when reading at commit time
        first = c.poll(0.5)
        for m in [] if first is None else [first, *c.consume(9999, 0)]:
            if m.error() is None:
                sent = int(m.value())
                seen = int(time.time() * 1000) if committed else m.timestamp()[1]
                out.append((sent, seen - sent))
    c.close()
    return out


def _read_committed(bootstrap: str, topic: str, want, timeout_s: float, conn) -> None:
    """The exactly-once reader, in a process of its own (see ``run``)."""
    conn.send(latencies(bootstrap, topic, want, timeout_s, committed=True))
    conn.close()


def run(bootstrap: str, spark, work: str, rate: int, seconds: float, warmup: float,
        trigger_ms: int, mode: str = "micro_batch", guarantee: str = "at_least_once",
        session: str = "") -> str:
    """One run; ``session``: a label of the session (``connect``), in topics and summary."""
    tag = f"{mode}{session and '-' + session}"
    src, dst = f"lat-in-{tag}-{trigger_ms}", f"lat-out-{tag}-{trigger_ms}"
    admin = Admin(bootstrap)
    admin.create_topics({src: 2})
    admin.create_topics({dst: 2}, {"message.timestamp.type": "LogAppendTime"})
    raw = Serdes.ByteArray()
    b = StreamsBuilder()
    b.stream(src, key_serde=raw, value_serde=raw).map_values(bytes).to(
        dst, key_serde=raw, value_serde=raw)
    streams = KafkaStreams(b.build(), {
        "application.id": f"lat-{trigger_ms}-{time.time_ns()}", "bootstrap.servers": bootstrap,
        "state.dir": os.path.join(work, f"state-{trigger_ms}"), "autostop.at": "none",
        "commit.interval.ms": trigger_ms, "producer.linger.ms": 5, "execution.mode": mode,
        "processing.guarantee": guarantee}, spark=spark)
    streams.start()
    # the first micro-batch starts Python workers: begin the steady input once it has run
    warm = steady_input(bootstrap, src, 10, 1.0)
    latencies(bootstrap, dst, warm, 120)
    eos = guarantee == "exactly_once_v2"
    if eos:
        # read as the output commits, in a process of its own: a reader thread here would
        # wait for the GIL behind the steady writer, and its delay would count as latency
        ctx = multiprocessing.get_context("spawn")
        want = ctx.Value("i", 0)
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_read_committed, args=(bootstrap, dst, want,
                                                         120 + seconds, child))
        proc.start()
        t0 = time.time() * 1000
        sent = steady_input(bootstrap, src, rate, seconds)
        want.value = warm + sent
        got = parent.recv()
        proc.join(30)
    else:
        t0 = time.time() * 1000
        sent = steady_input(bootstrap, src, rate, seconds)
        got = latencies(bootstrap, dst, warm + sent, 120 + seconds)
    if mode == "real_time":  # the threads' own view: how long their commits take
        m = streams.metrics()
        avg = m.find("commit-latency-avg", "stream-thread-metrics")
        top = m.find("commit-latency-max", "stream-thread-metrics")
        print(mode, guarantee, "commit latency avg/max per thread (ms):", ", ".join(
            f"{a.metric_value():.0f}/{b.metric_value():.0f}" for a, b in zip(avg, top)),
            flush=True)
    streams.close()
    if len(got) != warm + sent:
        raise SystemExit(f"trigger {trigger_ms} ms: {len(got)} records out of {warm + sent}")
    if os.environ.get("LATENCY_TIMELINE"):  # p50 per 2 s of send time, to find stalls
        buckets: dict[int, list[int]] = {}
        for t, lat in got:
            buckets.setdefault(int((t - t0) // 2000), []).append(lat)
        print(mode, " ".join(f"{2 * b}s:{sorted(v)[len(v) // 2]}" for b, v in
                             sorted(buckets.items())), flush=True)
    return _summary(tag, guarantee, str(trigger_ms), rate, seconds, warmup, t0, got)


PEERS = Path(__file__).resolve().parent / "peers"


def run_peer(bootstrap: str, work: str, peer: str, rate: int, seconds: float, warmup: float,
             python: str, env: dict[str, str]) -> str:
    """The passthrough latency of one peer (``quix`` or ``spark``), its own process."""
    src, dst = f"lat-in-{peer}", f"lat-out-{peer}"
    admin = Admin(bootstrap)
    admin.create_topics({src: 2})
    admin.create_topics({dst: 2}, {"message.timestamp.type": "LogAppendTime"})
    rundir = os.path.join(work, f"peer-{peer}")
    os.makedirs(rundir)
    script = PEERS / "systems" / f"{peer}_latency.py"
    with open(os.path.join(rundir, "log.txt"), "w") as log:
        proc = subprocess.Popen([python, str(script), "--bootstrap", bootstrap, "--src", src,
                                 "--dst", dst, "--workdir", rundir], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
    try:
        warm = steady_input(bootstrap, src, 10, 1.0)
        if len(latencies(bootstrap, dst, warm, 180)) < warm or proc.poll() is not None:
            raise SystemExit(f"{peer} did not copy its warm-up records: see "
                             f"{os.path.join(rundir, 'log.txt')}")
        t0 = time.time() * 1000
        sent = steady_input(bootstrap, src, rate, seconds)
        got = latencies(bootstrap, dst, warm + sent, 120 + seconds)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    if len(got) != warm + sent:
        raise SystemExit(f"{peer}: {len(got)} records out of {warm + sent}")
    return _summary(peer, "at_least_once", "default", rate, seconds, warmup, t0, got)


def _summary(name: str, guarantee: str, trigger: str, rate: int, seconds: float,
             warmup: float, t0: float, got: list[tuple[int, int]]) -> str:
    steady = sorted(lat for t, lat in got if t >= t0 + warmup * 1000)
    pct = lambda q: steady[min(len(steady) - 1, int(q * len(steady)))]  # noqa: E731
    return (f"{name:<11} {guarantee:<15} trigger {trigger:>5} ms, {rate} records/s for "
            f"{seconds:.0f} s: latency p50 {pct(0.5)} ms, p90 {pct(0.9)} ms, "
            f"p99 {pct(0.99)} ms, max {steady[-1]} ms "
            f"({len(steady)} records after {warmup:.0f} s of warm-up, all {len(got)} out)")


def prepare_peers(peers: list[str], spark_kafka_version: str) -> tuple[dict, dict]:
    """{peer: python} and the environment they run in (the peers runner's preparation)."""
    sys.path.insert(0, str(PEERS))
    import run as peers_run  # noqa: PLC0415  (benchmarks/peers/run.py; needs psutil)
    skip = peers_run.prepare_peers(peers)
    jars = None
    if "spark" in peers:
        s, jars = peers_run.prepare_spark(spark_kafka_version)
        skip.update(s)
    if skip:
        raise SystemExit("; ".join(f"{p}: {why}" for p, why in skip.items()))
    pythons = {p: str(peers_run.PEERS_PYTHON) if p == "quix" else sys.executable for p in peers}
    return pythons, dict(os.environ, PEERS_SPARK_JARS=jars or "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--trigger-ms", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--modes", nargs="+", default=["real_time", "micro_batch"],
                    choices=["micro_batch", "real_time"])
    ap.add_argument("--guarantee", default="at_least_once",
                    choices=["at_least_once", "exactly_once_v2"])
    ap.add_argument("--peers", nargs="*", default=[], choices=["quix", "spark"])
    ap.add_argument("--connect", action="store_true",
                    help="also run each mode on a local Spark Connect server (local[2]), "
                    "after the classic session, in the same run")
    ap.add_argument("--spark-kafka-version", default="4.2.0",
                    help="spark-sql-kafka-0-10_2.13 for the native Spark peer")
    a = ap.parse_args()
    pythons, env = prepare_peers(a.peers, a.spark_kafka_version) if a.peers else ({}, {})
    with local_broker(["lat-warm"], 2) as (bootstrap, work):
        lines = [run_peer(bootstrap, work, p, a.rate, a.seconds, a.warmup, pythons[p], env)
                 for p in a.peers]
        spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false"})
        lines += [run(bootstrap, spark, work, a.rate, a.seconds, a.warmup, t, m, a.guarantee)
                  for m in a.modes for t in a.trigger_ms]
        spark.stop()
        if a.connect:
            from kspark._spark.connect_server import LocalConnectServer

            with LocalConnectServer(os.path.join(work, "connect")) as server:
                remote = spark_session({"spark.remote": server.url})
                lines += [run(bootstrap, remote, work, a.rate, a.seconds, a.warmup, t, m,
                              a.guarantee, "connect")
                          for m in a.modes for t in a.trigger_ms]
                remote.stop()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
