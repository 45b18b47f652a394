"""Benchmark: enrich each record through a slow service (KIP-311). A local HTTP service
answers every request after ``--latency-ms`` (50); kspark calls it per record with the
synchronous ``map_values`` and with ``map_values_async`` at several ``max_in_flight``, on
``--partitions`` (2) partitions, so 2 tasks, in one Spark session against one local broker.

The step's rate is measured at the service: requests over the time from the first to the
last (Spark's start-up and the end of the run left out). The bound is ``tasks ×
max_in_flight / latency``; the last column is the rate as a share of it. The whole run's
time (from ``start()``, incl. query start) is shown too, and how busy the machine's CPUs
were while the calls ran (first to last request). Every output is counted. Not a
test: run it on purpose:

    .venv/bin/python benchmarks/async_enrich.py [--latency-ms 50] [--partitions 2]
        [--in-flight 1,16,64,256] [--seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
import urllib.request

import psutil
from _common import local_broker, produce, timed_run

from kspark import Serdes, StreamsBuilder, spark_session


class Service:
    """An asyncio HTTP/1.0 server on loopback: ``GET /?v=N`` answers ``eN`` after the
    latency; it notes when each request arrived."""

    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.arrivals: list[float] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=4096))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        self.arrivals.append(time.monotonic())
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        await asyncio.sleep(self.latency_s)
        body = b"e" + line.split(b"v=", 1)[1].split(b" ", 1)[0]
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    def rate(self) -> tuple[float, float, float]:
        """Requests per second between the first and the last arrival, and that window's
        start and end; then forget them."""
        a, self.arrivals = self.arrivals, []
        if len(a) < 2 or a[-1] <= a[0]:
            return 0.0, 0.0, 0.0
        return (len(a) - 1) / (a[-1] - a[0]), a[0], a[-1]


class CpuSampler:
    """The machine's CPU use, sampled every 0.1 s with its time (psutil)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        psutil.cpu_percent(None)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(0.1)
            self.samples.append((time.monotonic(), psutil.cpu_percent(None)))

    def busy(self, start: float, end: float) -> float:
        """The mean CPU use (0..1) between ``start`` and ``end``."""
        inside = [pct for t, pct in self.samples if start <= t <= end]
        return sum(inside) / len(inside) / 100 if inside else 0.0


def async_client(port: int):
    async def enrich(v: str) -> str:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /?v={v} HTTP/1.0\r\n\r\n".encode())
        response = await reader.read()
        writer.close()
        return response.split(b"\r\n\r\n", 1)[1].decode()
    return enrich


def sync_client(port: int):
    def enrich(v: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?v={v}", timeout=30) as r:
            return r.read().decode()
    return enrich


def run(bootstrap: str, spark, work: str, src: str, out: str, port: int, n: int,
        in_flight: int | None) -> float:
    S = Serdes.String()
    b = StreamsBuilder()
    s = b.stream(src, key_serde=S, value_serde=S)
    s = (s.map_values(sync_client(port)) if in_flight is None else
         s.map_values_async(async_client(port), max_in_flight=in_flight))
    s.to(out, key_serde=S, value_serde=S)
    return timed_run(b.build(), {
        "application.id": f"bench-async-{time.time_ns()}", "bootstrap.servers": bootstrap,
        "state.dir": os.path.join(work, "state"), "execution.mode": "micro_batch", "max.offsets.per.trigger": n}, spark)


def count(bootstrap: str, topic: str, partitions: int) -> int:
    from kspark._kafka.admin import Admin

    return sum(Admin(bootstrap).end_offsets([(topic, p) for p in range(partitions)]).values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency-ms", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--in-flight", default="1,16,64,256")
    ap.add_argument("--seconds", type=float, default=4.0,
                    help="records per case: the bound's rate for this long (400 to 40,000)")
    a = ap.parse_args()
    latency = a.latency_ms / 1000
    cases: list[int | None] = [None] + [int(x) for x in a.in_flight.split(",")]
    topics = [t for i in range(len(cases)) for t in (f"bench-in-{i}", f"bench-out-{i}")]
    service = Service(latency)
    cpu_sampler = CpuSampler()
    ok = True
    with local_broker(topics, a.partitions) as (bootstrap, work):
        spark = spark_session({"spark.master": f"local[{a.partitions}]",
                               "spark.ui.enabled": "false"})
        print(f"{a.partitions} tasks, a {a.latency_ms} ms service; rate measured at the service")
        print(f"{'step':<28}{'records':>9}{'whole run':>11}{'rate/s':>10}{'bound/s':>10}"
              f"{'of bound':>10}{'CPU busy':>10}")
        for i, mif in enumerate(cases):
            bound = a.partitions * (1 if mif is None else mif) / latency
            n = int(min(40_000, max(400, bound * a.seconds)))
            produce(bootstrap, f"bench-in-{i}", ((b"k%d" % j, b"%d" % j) for j in range(n)))
            service.rate()
            whole = run(bootstrap, spark, work, f"bench-in-{i}", f"bench-out-{i}", service.port,
                        n, mif)
            rate, first, last = service.rate()
            cpu = cpu_sampler.busy(first, last)
            got = count(bootstrap, f"bench-out-{i}", a.partitions)
            ok &= got == n
            name = "map_values (sync)" if mif is None else f"map_values_async({mif})"
            print(f"{name:<28}{n:>9,}{whole:>10.1f}s{rate:>10,.0f}{bound:>10,.0f}"
                  f"{rate / bound:>10.0%}{cpu:>10.0%}" + ("" if got == n else f"  OUTPUT {got:,} != {n:,}"),
                  flush=True)
        spark.stop()
    print("outputs verified: every record enriched once" if ok else "OUTPUT MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
