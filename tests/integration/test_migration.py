"""A running Java Kafka Streams 4.1 application taken over in place by its kspark port
(issue 54): the same generated names (the port's ``describe()`` is Java's text), the same
``application.id``, Java's changelogs restored rather than the input recomputed, and no
internal topic Java did not create. The Java application (``java/MigrationApp.java``: an
unnamed count, a windowed count, a key-changing count, a suppressed windowed count's final
results, exactly_once_v2) runs on the project's broker, is stopped mid-stream, and the port
processes the rest: each window still open then is in the suppress buffer's changelog,
which the other side restores (Java's layout) and emits once it closes."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kspark import (Consumed, Grouped, KafkaStreams, Produced, Serdes, StreamsBuilder,
                    Suppressed, TimeWindows)
from kspark._local.prereqs import java_binary
from tests.conformance.reference import compiled
from tests.matrix import MODES, sampled

pytestmark = pytest.mark.integration
S, L = Serdes.String(), Serdes.Long()
HOUR = 3_600_000
SOURCE = Path(__file__).with_name("java") / "MigrationApp.java"


def port(src: str, out: str):
    """The kspark port of MigrationApp.java, written as a Java user writes it."""
    b = StreamsBuilder()
    s = b.stream(src, Consumed.with_(S, S))
    s.group_by_key().count().to_stream().to(f"{out}-counts", Produced.with_(S, L))
    (s.group_by_key().windowed_by(TimeWindows.of_size_and_grace(HOUR, HOUR)).count()
     .to_stream(lambda w, v: f"{w.key}@{w.window.start}")
     .to(f"{out}-windowed", Produced.with_(S, L)))
    (s.group_by(lambda k, v: v, Grouped.with_(S, S)).count().to_stream()
     .to(f"{out}-by-value", Produced.with_(S, L)))
    (s.group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
     .suppress(Suppressed.until_window_closes()).to_stream(lambda w, v: f"{w.key}@{w.window.start}")
     .to(f"{out}-final", Produced.with_(S, L)))
    return b.build()


def _classpath() -> str:
    return compiled(SOURCE)


def _records(start: int, n: int, now: int) -> list[tuple[str, str, int]]:
    return [(f"k{i % 5}", "xyz"[i % 3], now + i) for i in range(start, start + n)]


def _produce(broker: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for k, v, ts in records:
        p.produce(topic, key=k.encode(), value=v.encode(), timestamp=ts)
    assert p.flush(30) == 0


def _read(broker: str, topic: str, expected: int, timeout_s: float = 120,
          more_s: float = 0.0) -> list[tuple[str, int]]:
    """(key, count) of ``topic``'s committed records, once there are ``expected`` of them
    (and any that come within ``more_s`` seconds after)."""
    c = Consumer({"bootstrap.servers": broker, "group.id": f"check-{time.monotonic_ns()}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    out: list[tuple[str, int]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if len(out) >= expected:
                deadline = min(deadline, time.monotonic() + more_s)  # then a little more
                if more_s <= 0:
                    break
                more_s = 0.0
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append((m.key().decode(), L.deserialize(topic, m.value())))
    finally:
        c.close()
    return out


def _per_key(records: list[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for k, n in records:
        out.setdefault(k, []).append(n)
    return out


def _internal(admin, app_id: str) -> set[str]:
    return {t for t in admin.partition_counts() if t.startswith(f"{app_id}-")
            and t.endswith(("-changelog", "-repartition"))}


def _java(broker: str, app_id: str, src: str, out: str, state: Path) -> subprocess.Popen:
    return subprocess.Popen([java_binary(), "-cp", _classpath(), "MigrationApp", broker, app_id,
                             src, out, str(state)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run_java(broker: str, app_id: str, src: str, out: str, state: Path, done: int) -> str:
    """Run the Java application until ``out``-counts holds ``done`` records, then stop it
    (it closes, committing); Java's describe() text."""
    java = _java(broker, app_id, src, out, state)
    try:
        lines = []
        for line in java.stdout:
            lines.append(line)
            if line.startswith("running"):
                break
        text = "".join(lines)
        assert "running" in text, text[-3000:]
        assert len(_read(broker, f"{out}-counts", done)) == done
        java.stdin.write("stop\n")
        java.stdin.flush()
        assert java.wait(120) == 0, java.stdout.read()[-3000:]
    finally:
        if java.poll() is None:
            java.kill()
    return text.split("describe\n", 1)[1].split("end-describe")[0]


def _run_port(spark, cfg: dict, src: str, out: str) -> None:
    streams = KafkaStreams(port(src, out), cfg, spark=spark)  # a state dir of its own
    streams.start()
    assert streams.await_termination(240)
    streams.close()


def _assert_each_record_counted_once(broker: str, out: str, every: list, start: int) -> None:
    """Every output exact, and ``out``-counts continuous per key: the second application
    went on from the first's state (restored from its changelogs), counting each record
    once."""
    counts = _per_key(_read(broker, f"{out}-counts", len(every)))
    for k in {k for k, _, _ in every}:
        assert counts[k] == list(range(1, sum(1 for r in every if r[0] == k) + 1)), k
    by_value = _per_key(_read(broker, f"{out}-by-value", len(every)))
    assert {v: ns[-1] for v, ns in by_value.items()} == {
        v: sum(1 for r in every if r[1] == v) for v in "xyz"}
    windowed = _per_key(_read(broker, f"{out}-windowed", len(every)))
    assert {k: ns[-1] for k, ns in windowed.items()} == {
        f"{k}@{start}": sum(1 for r in every if r[0] == k) for k in {r[0] for r in every}}
    # final results, each once, as one Java run emits them: the 10 ms windows that stream
    # time closed (each key's last record is 45..49 ms in, so [0, 40) closed); [20, 30) was
    # open when the first application stopped and has no later record: only its restored
    # buffer entry can emit it
    final = _read(broker, f"{out}-final", 20, more_s=0.5)
    assert sorted(final) == sorted((f"k{i}@{start + w}", 2) for i in range(5)
                                   for w in (0, 10, 20, 30))


# both directions in both modes in the full matrix (about 12 s each); make test runs each
# direction once, in one mode each


@pytest.mark.timeout(600)
@pytest.mark.parametrize("direction, execution_mode", sampled(
    [(d, m) for d in ("java_to_kspark", "kspark_to_java") for m in MODES],
    keep=[("java_to_kspark", "micro_batch"), ("kspark_to_java", "real_time")]))
def test_an_application_is_taken_over_in_place_and_its_state_restored(
        direction, execution_mode, broker, admin, spark, topic_name, app_config, tmp_path):
    """The first application processes the first records and stops; the second (the other
    language) takes the same application.id and processes the rest."""
    src, out = topic_name("mig-in"), topic_name("mig-out")
    admin.create_topics({src: 2, **{f"{out}-{s}": 2 for s in ("counts", "windowed", "by-value",
                                                            "final")}})
    cfg = app_config(execution_mode=execution_mode, processing_guarantee="exactly_once_v2",
                     autostop_at="eol", statestore_cache_max_bytes=0)
    app_id, start = cfg["application.id"], int(time.time() * 1000) // HOUR * HOUR
    first, rest = _records(0, 30, start), _records(30, 20, start)
    _produce(broker, src, first)
    if direction == "java_to_kspark":
        described = _run_java(broker, app_id, src, out, tmp_path / "java", len(first))
        assert str(port(src, out).describe()) == described, "the port has Java's names"
        before = _internal(admin, app_id)
        _produce(broker, src, rest)
        _run_port(spark, cfg, src, out)
        assert _internal(admin, app_id) == before, "the port created no internal topic"
    else:
        _run_port(spark, cfg, src, out)
        before = _internal(admin, app_id)
        _produce(broker, src, rest)
        _run_java(broker, app_id, src, out, tmp_path / "java", len(first) + len(rest))
        if execution_mode == "real_time":  # micro-batch mode's repartitions are Spark exchanges
            assert _internal(admin, app_id) == before, "Java created no internal topic"
    _assert_each_record_counted_once(broker, out, first + rest, start)
