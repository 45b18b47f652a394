"""Async steps (KIP-311) on Spark and a real broker, calling a real HTTP service on loopback
(started by the test, with latency and injected failures): every record enriched exactly
once (exactly_once_v2, read_committed), in input order per key, failed calls retried."""

from __future__ import annotations

import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from confluent_kafka import Producer

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.processor import RetryPolicy
from tests.conftest import consume_all
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
S, I = Serdes.String(), Serdes.Integer()


class _Service(ThreadingHTTPServer):
    """GET /enrich?v=N answers ``e<N>`` after ``latency_s``; every ``fail_every``-th request
    gets a 500 instead. Requests after the ``hold_after``-th wait (in flight) until
    ``release`` is set (at most 5 minutes)."""

    daemon_threads = True
    # 32 calls in flight connect at once: socketserver's backlog of 5 would drop SYNs, and
    # the client's retransmits (1 s, then 3 s) can pass a call's 5 s timeout on a busy machine
    request_queue_size = 128

    def __init__(self, latency_s: float, fail_every: int, hold_after: int | None = None):
        self.latency_s, self.fail_every, self.hold_after = latency_s, fail_every, hold_after
        self.release = threading.Event()
        self.requests = self.failed = 0
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        srv: _Service = self.server
        with srv.lock:
            srv.requests += 1
            fail = srv.requests % srv.fail_every == 0
            hold = srv.hold_after is not None and srv.requests > srv.hold_after
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        if hold:
            srv.release.wait(300)
        time.sleep(srv.latency_s)
        with srv.lock:
            srv.in_flight -= 1
        try:
            self._answer(fail)
        except ConnectionError:  # a held call's caller was killed meanwhile
            pass

    def _answer(self, fail: bool) -> None:
        srv: _Service = self.server
        if fail:
            with srv.lock:
                srv.failed += 1
            self.send_response(500)
            self.end_headers()
            return
        body = f"e{self.path.split('v=')[1]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


def _enricher(port: int):
    def enrich(v: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/enrich?v={v}", timeout=10) as r:
            return r.read().decode()
    return enrich


def test_enrichment_through_a_slow_failing_http_service_is_exact_and_in_order(
        broker, admin, spark, topic_name, app_config):
    src, out = topic_name("async-in"), topic_name("async-out")
    admin.create_topics({src: 2, out: 2})
    n, keys = 400, 10
    _produce(broker, src, n, keys)
    service = _Service(latency_s=0.02, fail_every=7)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    try:
        b = StreamsBuilder()
        (b.stream(src, key_serde=S, value_serde=I)
          .map_values_async(_enricher(service.server_address[1]), "enrich", max_in_flight=32,
                            retry=RetryPolicy(max_attempts=5, initial_backoff_ms=5,
                                              retry_on=(urllib.error.URLError,)),
                            timeout_ms=5000)
          .to(out, key_serde=S, value_serde=S))
        streams = KafkaStreams(b.build(), app_config(processing_guarantee="exactly_once_v2",
                                                     max_offsets_per_trigger=200), spark=spark)
        streams.start()
        assert streams.await_termination(300)
        metrics = {n.name: m.metric_value() for n, m in streams.metrics().items()
                   if n.tags.get("processor-node-id") == "enrich"}
        streams.close()
    finally:
        service.shutdown()
    records = consume_all(broker, out, n)
    got = [(m.key().decode(), m.value().decode()) for m in records]
    assert sorted(got) == sorted((f"k{v % keys}", f"e{v}") for v in range(n)), "lost or duplicated"
    for k in {k for k, _ in got}:
        values = [int(v[1:]) for kk, v in got if kk == k]
        assert values == sorted(values), f"key {k}: out of input order"
    assert service.failed > 0 and service.requests >= n + service.failed  # failures retried
    assert service.max_in_flight > 2, "the calls did not overlap"
    # committed batches' metrics: a batch replayed after a failure may have called again
    assert metrics["completed-total"] == n and metrics["dead-lettered-total"] == 0, metrics
    assert 1 <= metrics["retried-total"] <= service.failed, (metrics, service.failed)
    assert metrics["in-flight-peak"] > 2 and metrics["latency-avg"] >= 20, metrics


def test_delayed_records_fire_on_spark_after_their_delay_without_new_input(
        broker, admin, spark, topic_name, app_config):
    """KStream.delay on Spark: the input is read in the first micro-batch; the records go on
    in a later one, which the pinned clock starts although no input arrived, unchanged
    (key, value, timestamp, headers), exactly once."""
    src, out = topic_name("delay-in"), topic_name("delay-out")
    admin.create_topics({src: 2, out: 2})
    n, delay_ms = 40, 2_000
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for v in range(n):
        p.produce(src, key=f"k{v % 4}".encode(), value=I.serialize(src, v), timestamp=1_000 + v,
                  headers=[("n", str(v).encode())])
    p.flush(30)
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=I).delay(delay_ms).to(out, key_serde=S, value_serde=I)
    streams = KafkaStreams(b.build(), app_config(processing_guarantee="exactly_once_v2",
                                                 autostop_at="none",
                                                 delayed_records_check_interval_ms=500),
                           spark=spark)
    began = time.monotonic()
    streams.start()
    try:
        records = consume_all(broker, out, n, timeout_s=180, until_quiet=True)
        waited = time.monotonic() - began
    finally:
        streams.close()
    got = sorted((m.key().decode(), I.deserialize(out, m.value()), m.timestamp()[1],
                  dict(m.headers() or [])) for m in records)
    assert got == sorted((f"k{v % 4}", v, 1_000 + v, {"n": str(v).encode()}) for v in range(n))
    assert waited >= delay_ms / 1000, "records went on before their delay"


# micro_batch in the full matrix (the suite's time: 40 s; its driver SIGKILL runs in
# test_exactly_once.py)
@sampled_modes("real_time")
def test_a_driver_killed_with_calls_in_flight_and_records_delayed_loses_and_duplicates_nothing(
        execution_mode, broker, admin, spark, topic_name, tmp_path):
    """exactly_once_v2: the app (an async step calling a slow HTTP service, then a delay) is
    SIGKILLed, driver and workers, while calls are in flight and records wait in the delay
    store; started again, it writes every record exactly once, in input order per key. The
    same 300 records in both modes (micro_batch: 100 per micro-batch; real_time: the
    threads read them all at once, and commit every 100 ms). real_time is sampled: the
    killed run is a process of its own, the run after it is started in this process, on
    the tests' Spark session (a Spark start fewer: the suite's time budget)."""
    from kspark import KafkaStreams
    from tests.integration import async_app, soak

    src, out = topic_name("async-kill-in"), topic_name("async-kill-out")
    admin.create_topics({src: 2, out: 2})
    n, keys = 300, 10
    _produce(broker, src, n, keys)
    # past the first 150 calls (micro_batch: past the first micro-batch of 100 records),
    # calls stay in flight until the kill
    service = _Service(latency_s=0.15, fail_every=10**9, hold_after=150)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    app_id, port = topic_name("async-kill-app"), service.server_address[1]
    cmd = [sys.executable, "-m", "tests.integration.async_app", broker, src, out, app_id,
           str(tmp_path / "state"), str(port), "--mode", execution_mode]
    try:
        app = soak.start_app(cmd)
        try:
            # a held call: once made, it stays in flight (a lasting state, not a moment)
            _wait_for(lambda: service.requests > 150 and service.in_flight > 0, 240,
                      "calls in flight after the first 150")
            in_flight_at_kill = service.in_flight
            _kill_tree(app.pid)
        finally:
            _kill_tree(app.pid)
            service.release.set()  # the held calls end (their callers are gone)
        written_before = len(_committed(broker, out))
        assert written_before < n, "the first run finished before it was killed"
        if execution_mode == "micro_batch":
            app = soak.start_app(cmd)
            try:
                records = consume_all(broker, out, n, timeout_s=300, until_quiet=True)
            finally:
                _kill_tree(app.pid)
        else:
            streams = KafkaStreams(async_app.topology(src, out, port, 800), async_app.config(
                broker, app_id, str(tmp_path / "state"), execution_mode), spark=spark)
            streams.start()
            try:
                records = consume_all(broker, out, n, timeout_s=300, until_quiet=True)
            finally:
                streams.close()
    finally:
        service.shutdown()
    got = [(m.key().decode(), m.value().decode()) for m in records]
    assert sorted(got) == sorted((f"k{v % keys}", f"e{v}") for v in range(n)), "lost or duplicated"
    for k in {k for k, _ in got}:
        values = [int(v[1:]) for kk, v in got if kk == k]
        assert values == sorted(values), f"key {k}: out of input order"
    assert in_flight_at_kill > 0


def _produce(bootstrap: str, topic: str, n: int, keys: int) -> None:
    """Values 0..n-1 under keys ``k<v % keys>`` (idempotent: the checks compare order)."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for v in range(n):
        p.produce(topic, key=f"k{v % keys}".encode(), value=I.serialize(topic, v))
    assert p.flush(30) == 0


def _committed(bootstrap: str, topic: str) -> list:
    from tests.integration.soak import read_all

    return read_all(bootstrap, topic)


def _wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (the JVM and Python workers)."""
    import signal

    from tests.integration.soak import descendants

    for victim in [pid, *descendants(pid)]:
        try:
            os.kill(victim, signal.SIGKILL)
        except OSError:
            pass
