"""Running one system in its own process, and checking what it wrote.

``run`` starts the system's script, samples the RSS of its whole process tree (the JVM and
Spark's Python workers included) every 100 ms, and kills the tree on a timeout.
``read_output`` reads the output topic back; the topics are created with
``message.timestamp.type=LogAppendTime``, so each record carries the broker's append time and
the first and last output times do not depend on when the runner reads them.
``verify`` compares the output with what the generated input must give; ``processed_by``
tells from the output how many input records a system had processed by a given time.
"""

from __future__ import annotations

import bisect
import functools
import json
import subprocess
import threading
import time
from dataclasses import dataclass

import psutil
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, TopicPartition

from kspark._engine.partitioner import default_partition
from workload import KEYS, T0, THRESHOLD, WINDOW_MS, Expected, user_row, window_start


@dataclass
class Process:
    start: float        # epoch seconds, just before the process was started
    end: float          # epoch seconds, when it had exited (or was killed)
    returncode: int | None
    peak_rss: int       # bytes, the whole process tree
    timed_out: bool


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def _kill_tree(proc: psutil.Process) -> None:
    try:
        procs = [*proc.children(recursive=True), proc]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def run(cmd: list[str], log_path: str, timeout_s: float, env: dict | None = None) -> Process:
    """Run ``cmd`` to completion (stdout and stderr to ``log_path``), measuring peak RSS."""
    peak = 0
    with open(log_path, "wb") as log:
        start = time.time()
        popen = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        proc = psutil.Process(popen.pid)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.1):
                peak = max(peak, _tree_rss(proc))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timed_out = False
        try:
            popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc)
            popen.wait()
        end = time.time()
        done.set()
        sampler.join()
    return Process(start, end, popen.returncode, peak, timed_out)


@dataclass
class Output:
    records: list[tuple[int, bytes, bytes]]  # (partition, key, value) in offset order per partition
    first: float | None                      # epoch seconds of the first append
    last: float | None                       # epoch seconds of the last append
    problem: str | None = None
    times: list[float] | None = None         # epoch seconds of each record's append


def read_output(bootstrap: str, topic: str, partitions: int, timeout_s: float = 120) -> Output:
    """Every committed record of ``topic``, read from the start up to each partition's end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{topic}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": "read_committed", "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[tuple[int, bytes, bytes]] = []
    times: list[float] = []
    first = last = None
    problem = None
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while len(at_end) < partitions and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                continue
            kind, ts = m.timestamp()
            if kind != TIMESTAMP_LOG_APPEND_TIME:
                problem = f"output topic {topic} does not carry LogAppendTime timestamps"
            t = ts / 1000
            first = t if first is None else min(first, t)
            last = t if last is None else max(last, t)
            records.append((m.partition(), m.key(), m.value()))
            times.append(t)
    c.close()
    if len(at_end) < partitions:
        problem = f"could not read {topic} to its end within {timeout_s:.0f}s"
    return Output(records, first, last, problem, times)


_STEP = pow(7919, -1, KEYS)  # workload.generate: user = i * 7919 % KEYS


def _count(value: bytes) -> int:
    return int.from_bytes(value, "big") if len(value) == 8 else int(value)


def _window_span(start_ms: int, n: int) -> tuple[int, int]:
    """The input indexes ``[lo, hi)`` whose timestamps fall in the W3 window at ``start_ms``."""
    return max(0, start_ms - T0), min(n, start_ms + WINDOW_MS - T0)


def input_index(workload: str, key: bytes, value: bytes) -> int:
    """The index of the input record an output record reflects: W1's and W4's ``id``; W2's
    key and count (the count-th record of that user); W3's the count-th record of that user
    in that window.

    >>> input_index("w1", b"u-000000", b'{"id": 1000042}')
    42
    >>> i = 123_456
    >>> input_index("w2", f"u-{i * 7919 % KEYS:06d}".encode(), (2).to_bytes(8, "big"))
    123456
    >>> k = f"u-{i * 7919 % KEYS:06d}@{window_start(T0 + i)}".encode()
    >>> input_index("w3", k, (1).to_bytes(8, "big"))
    123456
    """
    if workload in ("w1", "w4"):
        return json.loads(value)["id"] - 1_000_000
    if workload == "w3":
        user, _, start = key.partition(b"@")
        lo = max(0, int(start) - T0)
        idx = int(user[2:]) * _STEP % KEYS
        return lo + (idx - lo) % KEYS + (_count(value) - 1) * KEYS
    return int(key[2:]) * _STEP % KEYS + (_count(value) - 1) * KEYS


def processed_by(workload: str, out: Output, t: float, records: int, partitions: int) -> int:
    """How many input records the system had processed when the output appended by ``t``
    was written (what that output reflects). Records are read in order per input partition,
    not across them: each partition counts its records up to the latest one the output
    reflects (one task may be far ahead of another: the highest index overall would credit
    the slower one with records it has not read).

    >>> out = Output(records=[(0, b"u-000000", b'{"id": 1000003}')], times=[1.0], first=1.0,
    ...              last=1.0)
    >>> p = input_partition(3, 2)
    >>> processed_by("w1", out, 1.0, 8, 2) == sum(input_partition(i, 2) == p for i in range(4))
    True
    """
    times = out.times or [out.last] * len(out.records)
    latest: dict[int, int] = {}  # input partition: the latest input index reflected
    for (_, k, v), at in zip(out.records, times, strict=True):
        if at <= t:
            i = input_index(workload, k, v)
            p = input_partition(i, partitions)
            if i > latest.get(p, -1):
                latest[p] = i
    by_partition = _input_indexes(records, partitions)
    return sum(bisect.bisect_right(by_partition[p], i) for p, i in latest.items())


def input_partition(i: int, partitions: int) -> int:
    """The partition input record ``i`` was written to (its user key, Kafka's murmur2
    partitioner, as the loader's producer writes it)."""
    return _user_partition(i * 7919 % KEYS, partitions)  # workload.generate's user of i


@functools.lru_cache(maxsize=None)
def _user_partition(user: int, partitions: int) -> int:
    return default_partition(f"u-{user:06d}".encode(), partitions)


@functools.lru_cache(maxsize=4)
def _input_indexes(records: int, partitions: int) -> dict[int, list[int]]:
    """Per input partition, the indexes of its input records, ascending."""
    out: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for i in range(records):
        out[input_partition(i, partitions)].append(i)
    return out


def verify(workload: str, out: Output, expected: Expected) -> str | None:
    """None when ``out`` is exactly what the input must give, else what is wrong."""
    if out.problem:
        return out.problem
    if workload == "w1":
        if len(out.records) != expected.w1_out:
            return f"{len(out.records)} output records, expected {expected.w1_out}"
        for _, key, value in out.records:
            rec = json.loads(value)
            if (rec["amount"] <= THRESHOLD or not rec["kind"].isupper()
                    or "amount_cents" not in rec or key.decode() != rec["user"]):
                return f"wrong output record {key!r}: {value[:200]!r}"
        return None
    if workload == "w3":
        return _verify_windows(out, expected.records)
    if workload == "w4":
        return _verify_join(out, expected.records)
    final: dict[bytes, int] = {}
    where: dict[bytes, int] = {}
    for partition, key, value in out.records:
        if where.setdefault(key, partition) != partition:
            return f"key {key!r} written to more than one partition"
        final[key] = _count(value)
    if len(final) != len(expected.counts):
        return f"{len(final)} keys in the output, expected {len(expected.counts)}"
    if sum(final.values()) != expected.records:
        return f"final counts add up to {sum(final.values())}, expected {expected.records}"
    wrong = [k for k, n in expected.counts.items() if final.get(k) != n]
    if wrong:
        k = wrong[0]
        return f"{len(wrong)} keys with a wrong final count, e.g. {k!r}: {final.get(k)} != {expected.counts[k]}"
    return None


def _verify_windows(out: Output, n: int) -> str | None:
    """W3: the last count of every (user, window) is the number of that user's records in
    the window, and there is one for every (user, window) with records (computed from the
    generator's formula, not stored: record i is user ``i * 7919 % KEYS`` at ``T0 + i``)."""
    final: dict[bytes, int] = {}
    for _, key, value in out.records:
        final[key] = _count(value)
    starts = range(window_start(T0), window_start(T0 + n - 1) + 1, WINDOW_MS)
    pairs = sum(min(hi - lo, KEYS) for lo, hi in (_window_span(s, n) for s in starts))
    if len(final) != pairs:
        return f"{len(final)} (user, window) counts in the output, expected {pairs}"
    if sum(final.values()) != n:
        return f"final counts add up to {sum(final.values())}, expected {n}"
    wrong = 0
    example = None
    for key, got in final.items():
        user, _, start = key.partition(b"@")
        lo, hi = _window_span(int(start), n)
        idx = int(user[2:]) * _STEP % KEYS
        first = lo + (idx - lo) % KEYS
        want = 0 if first >= hi else (hi - 1 - first) // KEYS + 1
        if got != want:
            wrong += 1
            example = example or f"{key!r}: {got} != {want}"
    if wrong:
        return f"{wrong} (user, window) pairs with a wrong final count, e.g. {example}"
    return None


def _verify_join(out: Output, n: int) -> str | None:
    """W4: one output per input record (each id once), with its own user's tier and country."""
    if len(out.records) != n:
        return f"{len(out.records)} output records, expected {n}"
    seen = bytearray(n)
    for _, key, value in out.records:
        rec = json.loads(value)
        i = rec["id"] - 1_000_000
        if not 0 <= i < n or seen[i]:
            return f"output record id {rec['id']} unknown or repeated"
        seen[i] = 1
        row = user_row(int(rec["user"][2:]))
        if (key.decode() != rec["user"] or rec["tier"] != row["tier"]
                or rec["country"] != row["country"] or "amount" not in rec):
            return f"wrong output record {key!r}: {value[:200]!r}"
    return None
