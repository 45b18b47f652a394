"""Benchmark: W1 (filter + map) over Schema Registry Avro records against the same W1 over JSON.

The records are the peers' W1 input (``peers/workload.py``: six fields, keyed by one of
100,000 users): once as JSON text (``Serdes.Json()`` in and out) and once written with
confluent-kafka's ``AvroSerializer`` against a real registry that this script starts
(``LocalRegistry``: Apicurio Registry, Confluent's API), read with ``Serdes.avro()`` (the
writer's schema) and written with ``Serdes.avro(OUT_SCHEMA)``. One broker, one warm Spark
session, micro-batch mode with ``autostop.at=eol``; the two formats alternate, after a
10,000-record warm-up query of each. Per run: input records/s from ``start()`` until the
application stopped (whole run) and from the first output record's append to the last
(after start-up; output topics use LogAppendTime), the output checked record by record,
and the registry's HTTP requests during the run (the serdes talk to it through a counting
proxy in this process). Then, in this process: each serde's own cost per record (and
fastavro's alone, on the same bytes), and W1 through the TopologyTestDriver in each format
(the same engine without Spark). If Avro's whole-run rate is below ``--goal`` times JSON's
(or with ``--profile``), a cProfile of the Avro serde on 100,000 records. Not a test: run it
on purpose:

    .venv/bin/python benchmarks/registry_serdes.py [--records 200000] [--repeat 2]
        [--partitions 2] [--mode micro_batch] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import http.server
import io
import json
import os
import pstats
import re
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from _common import local_broker, produce
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from kspark._kafka.admin import Admin
from kspark._local.broker import free_port
from kspark._local.registry import LocalRegistry

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from workload import THRESHOLD, Expected, generate  # noqa: E402

EVENT_FIELDS = [{"name": "id", "type": "long"}, {"name": "user", "type": "string"},
                {"name": "amount", "type": "double"}, {"name": "kind", "type": "string"},
                {"name": "ts", "type": "long"}, {"name": "region", "type": "string"}]
IN_SCHEMA = json.dumps({"type": "record", "name": "Event", "namespace": "bench",
                        "fields": EVENT_FIELDS})
OUT_SCHEMA = json.dumps({"type": "record", "name": "EnrichedEvent", "namespace": "bench",
                         "fields": [*EVENT_FIELDS, {"name": "amount_cents", "type": "long"}]})
FORMATS = ("json", "avro")


# W1 as peers/workload.py's passes() and enrich(), on decoded records; defined here so that
# Spark's Python workers get them by value (workload.py is not importable there)
def keep(key, rec: dict) -> bool:
    return rec["amount"] > THRESHOLD


def enrich(rec: dict) -> dict:
    return {**rec, "kind": rec["kind"].upper(), "amount_cents": round(rec["amount"] * 100)}


def serdes(fmt: str):
    """(input value serde, output value serde) of a format."""
    if fmt == "json":
        return Serdes.Json(), Serdes.Json()
    return Serdes.avro(), Serdes.avro(OUT_SCHEMA)


# -- the registry, behind a proxy that counts requests

class CountingProxy:
    """Forwards HTTP requests to the registry and counts them by method and path (subject
    names and ids replaced), so every process's serdes are counted, Spark's workers too."""

    def __init__(self, target_url: str):
        m = re.match(r"http://([^:/]+):(\d+)(/.*)?$", target_url)
        assert m, target_url
        host, port, self.path = m[1], int(m[2]), m[3] or ""
        self.counts: Counter[str] = Counter()
        lock = threading.Lock()
        counts = self.counts

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                shape = re.sub(r"/subjects/[^/?]+", "/subjects/{subject}", self.path)
                shape = re.sub(r"/\d+", "/{n}", shape.split("?")[0])
                with lock:
                    counts[f"{self.command} {shape.removeprefix(outer.path)}"] += 1
                conn = http.client.HTTPConnection(host, port, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("host", "connection", "content-length")}
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _forward  # noqa: N815 (http.server's names)

            def log_message(self, *args) -> None:
                pass

        outer = self
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def snapshot(self) -> Counter[str]:
        return Counter(self.counts)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- input, one run, and reading the output back

def load_input(bootstrap: str, registry_url: str, n: int, topics: dict[str, str],
               expected: Expected | None = None) -> None:
    """The same ``n`` records into ``topics["json"]`` as JSON and ``topics["avro"]`` as
    Avro, with confluent-kafka's AvroSerializer (registering IN_SCHEMA)."""
    records = [(k, json.loads(v)) for k, v in generate(n, expected or Expected())]
    produce(bootstrap, topics["json"], ((k, json.dumps(r).encode()) for k, r in records))
    ser = AvroSerializer(SchemaRegistryClient({"url": registry_url}), IN_SCHEMA)
    ctx = SerializationContext(topics["avro"], MessageField.VALUE)
    produce(bootstrap, topics["avro"], ((k, ser(r, ctx)) for k, r in records))


def run_once(fmt: str, src: str, dst: str, spark, bootstrap: str, registry_url: str,
             work: str, mode: str) -> tuple[float, float]:
    """Run W1 in format ``fmt`` from ``src`` to ``dst``: (epoch seconds just before
    ``start()``, seconds from ``start()`` until it stopped)."""
    in_serde, out_serde = serdes(fmt)
    b = StreamsBuilder()
    (b.stream(src, key_serde=Serdes.ByteArray(), value_serde=in_serde)
      .filter(keep).map_values(enrich)
      .to(dst, key_serde=Serdes.ByteArray(), value_serde=out_serde))
    streams = KafkaStreams(b.build(), {
        "application.id": f"bench-registry-{dst}-{time.time_ns()}",
        "bootstrap.servers": bootstrap, "schema.registry.url": registry_url,
        "state.dir": os.path.join(work, dst), "execution.mode": mode, "autostop.at": "eol",
        "max.offsets.per.trigger": 500_000, "producer.linger.ms": 20,
        "producer.batch.num.messages": 10000}, spark=spark)
    wall, t = time.time(), time.perf_counter()
    streams.start()
    streams.await_termination()
    elapsed = time.perf_counter() - t
    streams.close()
    return wall, elapsed


def read_back(bootstrap: str, topic: str, partitions: int,
              decode: Callable[[bytes], dict]) -> list[tuple[float, bytes, dict]]:
    """(append time, key, decoded value) of every record of ``topic``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": "read_committed", "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, at_end, deadline = [], set(), time.monotonic() + 120
    while len(at_end) < partitions and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                continue
            kind, ts = m.timestamp()
            assert kind == TIMESTAMP_LOG_APPEND_TIME, f"{topic} has no LogAppendTime"
            out.append((ts / 1000, m.key(), decode(m.value())))
    c.close()
    if len(at_end) < partitions:
        raise RuntimeError(f"could not read {topic} to its end within 120 s")
    return out


def check(out: list[tuple[float, bytes, dict]], expected: Expected) -> str | None:
    """None when the output is W1's, else what is wrong."""
    if len(out) != expected.w1_out:
        return f"{len(out)} output records, expected {expected.w1_out}"
    for _, key, rec in out:
        if (rec["amount"] <= THRESHOLD or not rec["kind"].isupper()
                or rec["amount_cents"] != round(rec["amount"] * 100)
                or key.decode() != rec["user"]):
            return f"wrong output record {key!r}: {rec}"
    if len({rec["id"] for _, _, rec in out}) != len(out):
        return "an input record was written twice"
    return None


def after_start_up(out: list[tuple[float, bytes, dict]], n: int,
                   skip_s: float = 0.5) -> float | None:
    """Input records/s from ``skip_s`` after the first output's append to the last output's
    (the input records processed by then are read from the output: W1's id, in order per
    partition), as ``peers/run.py`` measures it."""
    first, last = min(t for t, _, _ in out), max(t for t, _, _ in out)
    t0 = first + skip_s
    if last <= t0:
        return None
    done = max((rec["id"] - 1_000_000 for t, _, rec in out if t <= t0), default=-1) + 1
    return (n - done) / (last - t0)


# -- the serdes' own cost, in this process

def serde_costs(registry_url: str, n: int = 50_000,
                tries: int = 3) -> dict[str, tuple[float, float]]:
    """µs per record to read (the input record) and write (W1's output record), per format
    and with fastavro alone (Avro's bytes, framing included, checked equal to the serde's),
    the best of ``tries`` (the machine is shared), the schemas fetched before timing."""
    import fastavro

    records = [json.loads(v) for _, v in generate(n, Expected())]
    enriched = [enrich(r) for r in records]
    config = {"schema.registry.url": registry_url}
    avro_in = Serdes.avro(IN_SCHEMA, config=config)
    avro_data = [avro_in.serialize("bench-costs-in", r) for r in records]
    avro_out = Serdes.avro(OUT_SCHEMA, config=config)
    parsed_in = fastavro.parse_schema(json.loads(IN_SCHEMA))
    parsed_out = fastavro.parse_schema(json.loads(OUT_SCHEMA))
    prefix = avro_out.serialize("bench-costs-out", enriched[0])[:5]  # magic byte, schema id

    def fast_read(data: bytes) -> dict:
        return fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed_in, None)

    def fast_write(rec: dict) -> bytes:
        buf = io.BytesIO()
        buf.write(prefix)
        fastavro.schemaless_writer(buf, parsed_out, rec)
        return buf.getvalue()

    assert all(fast_write(r) == avro_out.serialize("bench-costs-out", r) for r in enriched[:1000])
    json_data = [Serdes.Json().serialize("bench-costs-in", r) for r in records]
    cases = {  # name: (read one, write one, input bytes)
        "json": (Serdes.Json().deserialize, Serdes.Json().serialize, json_data),
        "avro": (Serdes.avro(config=config).deserialize, avro_out.serialize, avro_data),
        "fastavro alone": (lambda topic, b: fast_read(b), lambda topic, r: fast_write(r),
                           avro_data)}
    costs = {}
    for name, (read_one, write_one, data) in cases.items():
        read_one("bench-costs-in", data[0])
        read = write = float("inf")
        for _ in range(tries):
            t = time.perf_counter()
            for d in data:
                read_one("bench-costs-in", d)
            read = min(read, time.perf_counter() - t)
            t = time.perf_counter()
            for r in enriched:
                write_one("bench-costs-out", r)
            write = min(write, time.perf_counter() - t)
        costs[name] = (read / n * 1e6, write / n * 1e6)
    return costs


def driver_costs(registry_url: str, n: int = 50_000) -> dict[str, float]:
    """µs per record of W1 through the TopologyTestDriver (the same engine, no Spark), per
    format: whether the gap is the serdes' or Spark's."""
    from kspark.testing import TopologyTestDriver

    records = [(k, json.loads(v)) for k, v in generate(n, Expected())]
    raw = Serdes.ByteArray()
    costs = {}
    for fmt in FORMATS:
        in_serde, out_serde = serdes(fmt)
        writer = (Serdes.avro(IN_SCHEMA, config={"schema.registry.url": registry_url})
                  if fmt == "avro" else in_serde)
        data = [(k, writer.serialize("in", rec)) for k, rec in records]  # not timed
        b = StreamsBuilder()
        (b.stream("in", key_serde=raw, value_serde=in_serde)
          .filter(keep).map_values(enrich)
          .to("out", key_serde=raw, value_serde=out_serde))
        with TopologyTestDriver(b.build(), {"schema.registry.url": registry_url}) as driver:
            topic = driver.create_input_topic("in", raw, raw)
            topic.pipe_input(*data[0])
            t = time.perf_counter()
            for key, value in data[1:]:
                topic.pipe_input(key, value)
            costs[fmt] = (time.perf_counter() - t) / (n - 1) * 1e6
    return costs


def profile_avro(registry_url: str, n: int = 100_000, top: int = 14) -> str:
    """cProfile of Serdes.avro() reading n input records and writing n output records."""
    config = {"schema.registry.url": registry_url}
    records = [json.loads(v) for _, v in generate(n, Expected())]
    writer = Serdes.avro(IN_SCHEMA, config=config)
    data = [writer.serialize("bench-profile-in", r) for r in records]
    enriched = [enrich(r) for r in records]
    reader, out = Serdes.avro(config=config), Serdes.avro(OUT_SCHEMA, config=config)
    reader.deserialize("bench-profile-in", data[0])
    out.serialize("bench-profile-out", enriched[0])
    text = io.StringIO()
    for what, fn in (("read", lambda: [reader.deserialize("bench-profile-in", d) for d in data]),
                     ("write", lambda: [out.serialize("bench-profile-out", r) for r in enriched])):
        prof = cProfile.Profile()
        prof.runcall(fn)
        text.write(f"--- Serdes.avro() {what}, {n:,} records (cProfile, by own time) ---\n")
        stats = pstats.Stats(prof, stream=text)
        stats.strip_dirs().sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--mode", default="micro_batch", choices=["micro_batch", "real_time"])
    ap.add_argument("--goal", type=float, default=0.8, help="Avro/JSON ratio below which the "
                    "Avro serde is profiled (default %(default)s)")
    ap.add_argument("--profile", action="store_true", help="profile the Avro serde anyway")
    args = ap.parse_args()
    n, parts = args.records, args.partitions
    inputs = {"json": "in-json", "avro": "in-avro"}
    warm_inputs = {"json": "warm-in-json", "avro": "warm-in-avro"}
    expected = Expected()
    print(f"load average at the start {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)",
          flush=True)
    with local_broker([*inputs.values(), *warm_inputs.values()], parts) as (bootstrap, work):
        registry = LocalRegistry(os.path.join(work, "registry"))
        t = time.perf_counter()
        direct_url = registry.start()
        proxy = CountingProxy(direct_url)
        print(f"registry (Apicurio) up in {time.perf_counter() - t:.1f}s at {direct_url}; "
              f"the serdes use it through a counting proxy at {proxy.url}", flush=True)
        try:
            t = time.perf_counter()
            load_input(bootstrap, direct_url, 10_000, warm_inputs)
            load_input(bootstrap, direct_url, n, inputs, expected)
            print(f"loaded {n:,} records twice (JSON, Avro; {parts} partitions; "
                  f"{expected.w1_out:,} pass the W1 filter) in {time.perf_counter() - t:.1f}s",
                  flush=True)
            avro_reader = AvroDeserializer(SchemaRegistryClient({"url": direct_url}))
            decoders = {"json": json.loads, "avro": lambda b: avro_reader(b, None)}
            spark = spark_session({"spark.master": f"local[{parts}]",
                                   "spark.ui.enabled": "false"})
            admin = Admin(bootstrap)
            results: dict[str, list[tuple[float, float | None]]] = {f: [] for f in FORMATS}
            pairs: list[float] = []  # Avro / JSON of the two runs of one repeat, side by side

            def one(fmt: str, src: str, dst: str, records: int, exp: Expected | None,
                    label: str) -> None:
                admin.create_topics({dst: parts},
                                    config={"message.timestamp.type": "LogAppendTime"})
                before = proxy.snapshot()
                _, took = run_once(fmt, src, dst, spark, bootstrap, proxy.url, work, args.mode)
                asked = proxy.snapshot() - before
                out = read_back(bootstrap, dst, parts, decoders[fmt])
                wrong = check(out, exp) if exp is not None else None
                after = after_start_up(out, records) if out else None
                if exp is not None and wrong is None:
                    results[fmt].append((records / took, after))
                requests = ", ".join(f"{k} ×{v}" for k, v in sorted(asked.items())) or "none"
                after_text = f"{after:,.0f} rec/s after start-up" if after else "-"
                print(f"  {label:<16} {fmt:<4} {took:6.1f}s  {records / took:9,.0f} rec/s whole "
                      f"run, {after_text}; {len(out):,} out"
                      f"{'' if wrong is None else '  FAILED: ' + wrong}; registry requests: "
                      f"{sum(asked.values())} ({requests})", flush=True)

            for fmt in FORMATS:
                one(fmt, warm_inputs[fmt], f"warm-out-{fmt}", 10_000, None, "warm-up")
            for rep in range(args.repeat):
                order = FORMATS if rep % 2 == 0 else FORMATS[::-1]
                for fmt in order:
                    one(fmt, inputs[fmt], f"out-{fmt}-{rep}", n, expected, f"repeat {rep + 1}")
                if all(len(results[f]) == rep + 1 for f in FORMATS):
                    pairs.append(results["avro"][-1][0] / results["json"][-1][0])
                print(f"    load average {os.getloadavg()[0]:.1f}", flush=True)
            spark.stop()

            costs = serde_costs(direct_url)
            print(f"\nW1 over {n:,} records, {parts} partitions, {args.mode}, "
                  f"{args.repeat} run(s) each, median:")
            rates = {}
            for fmt in FORMATS:
                if not results[fmt]:
                    print(f"  {fmt}: no run succeeded")
                    continue
                rates[fmt] = statistics.median(r for r, _ in results[fmt])
                afters = [a for _, a in results[fmt] if a]
                after = f"{statistics.median(afters):,.0f}" if afters else "-"
                print(f"  {fmt:<4} ({'Serdes.Json()' if fmt == 'json' else 'Serdes.avro()'}): "
                      f"{rates[fmt]:9,.0f} rec/s whole run, {after} rec/s after start-up")
            ratio = rates["avro"] / rates["json"] if len(rates) == 2 else None
            if ratio is not None:
                print(f"  ratio Avro / JSON (whole run): {ratio:.2f} of the medians; per repeat "
                      f"{', '.join(f'{p:.2f}' for p in pairs)} (median "
                      f"{statistics.median(pairs):.2f}); goal >= {args.goal}")
            print("serde cost per record in one process (µs, best of 3; read = input record, "
                  "write = W1's output record):")
            for name, (read, write) in costs.items():
                print(f"  {name:<14} read {read:5.1f}  write {write:5.1f}  "
                      f"together {read + write:5.1f}")
            on_driver = driver_costs(direct_url)
            print("W1 through the TopologyTestDriver (same engine, no Spark), µs per record: "
                  + ", ".join(f"{f} {c:.1f}" for f, c in on_driver.items())
                  + f"; ratio of rates Avro / JSON {on_driver['json'] / on_driver['avro']:.2f}")
            if args.profile or (ratio is not None and ratio < args.goal):
                print(profile_avro(direct_url))
            ok = all(len(results[f]) == args.repeat for f in FORMATS)
        finally:
            proxy.close()
            registry.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
