"""Conformance scenarios: each is written once and run on both hosts (see test_conformance.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kspark import Serdes
from kspark.processor import Processor, PunctuationType, Record, Topology
from kspark.processor.timestamps import TimestampExtractor
from kspark.state import Stores

S, I = Serdes.String(), Serdes.Integer()


@dataclass
class Scenario:
    """``build(builder, inputs, outputs)`` adds the topology; it may return a Topology instead."""

    name: str
    build: Callable
    inputs: dict[str, list[tuple]]  # logical topic -> [(key, value, timestamp[, headers])]
    outputs: list[str]
    partitions: int = 2
    per_batch: int = 64
    out_serdes: tuple = (S, S)
    extra_topics: list[str] = field(default_factory=list)


def _records(n: int, keys: int = 5, start: int = 1000, step: int = 3) -> list[tuple]:
    return [(f"k{i % keys}", i, start + step * i) for i in range(n)]


def _str_out(stream, out):
    stream.map_values(lambda k, v: f"{k}|{v}", with_key=True).to(out, key_serde=S, value_serde=S)


class Tagger(Processor):
    def init(self, context):
        self.context = context

    def process(self, record):
        m = self.context.record_metadata()
        self.context.forward(record.with_value(f"{record.value}@{m.topic}")
                             .with_headers(list(record.headers) + [("tag", b"t")]))


class Summer(Processor):
    def init(self, context):
        self.context, self.total, self.last = context, 0, None
        context.schedule(50, PunctuationType.STREAM_TIME, self.emit)

    def emit(self, ts):
        if self.last is not None:
            self.context.forward(self.last.with_value(f"{self.total}@{ts}"))

    def process(self, record):
        self.last = record
        self.total += record.value


class ValueTime(TimestampExtractor):
    def extract(self, record, partition_time):
        return 5000 + record.value * 10


class StoreScanner(Processor):
    """Sums values per key in a store; every 40 ms of stream time forwards every key's sum."""

    def init(self, context):
        self.context = context
        self.store = context.get_state_store("scan-sums")
        context.schedule(40, PunctuationType.STREAM_TIME, self.scan)

    def scan(self, ts):
        with self.store.all() as entries:
            for entry in entries:
                self.context.forward(Record(entry.key, f"{entry.value}@{ts}", ts))

    def process(self, record):
        self.store.put(record.key, (self.store.get(record.key) or 0) + record.value)


def _store_scan(b, i, o):
    store = Stores.key_value_store_builder(Stores.persistent_key_value_store("scan-sums"), S, I)
    return (Topology().add_source("src", i[0], key_serde=S, value_serde=I)
            .add_processor("scan", StoreScanner, "src").add_state_store(store, "scan")
            .add_sink("sink", o[0], "scan", key_serde=S, value_serde=S))


def _processor_api(b, i, o):
    return (Topology().add_source("src", i[0], key_serde=S, value_serde=I)
            .add_processor("tag", Tagger, "src")
            .add_sink("sink", o[0], "tag", key_serde=S, value_serde=S))


def _split(b, i, o):
    br = (b.stream(i[0], key_serde=S, value_serde=I).split(name="s-")
          .branch(lambda k, v: v % 3 == 0, name="three")
          .branch(lambda k, v: v % 3 == 1, name="one").default_branch())
    _str_out(br["s-three"], o[0])
    _str_out(br["s-one"], o[1])
    _str_out(br["s-0"], o[2])


def _seed_branch(b, i, o):
    evens, small = b.stream(i[0], key_serde=S, value_serde=I).branch(
        lambda k, v: v % 2 == 0, lambda k, v: v < 50)
    _str_out(evens, o[0])
    _str_out(small, o[1])


def _merge(b, i, o):
    a = b.stream(i[0], key_serde=S, value_serde=I)
    c = b.stream(i[1], key_serde=S, value_serde=I).map_values(lambda v: v * 1000)
    _str_out(a.merge(c), o[0])


def _fan_out(b, i, o):
    s = b.stream(i[0], key_serde=S, value_serde=I)
    _str_out(s.filter(lambda k, v: v > 20), o[0])
    _str_out(s.map_values(lambda v: -v), o[1])


def _repartition(b, i, o):
    (b.stream(i[0], key_serde=S, value_serde=I)
      .select_key(lambda k, v: f"r{v % 3}").repartition(key_serde=S, value_serde=I)
      .map_values(lambda k, v: f"{k}/{v}", with_key=True)
      .to(o[0], key_serde=S, value_serde=S))


def _through(b, i, o):
    """Kafka Streams 4's replacement of through(): to(topic), then stream(topic)."""
    (b.stream(i[0], key_serde=S, value_serde=I).map(lambda k, v: (k.upper(), v + 1))
      .to(o[0], key_serde=S, value_serde=I))
    (b.stream(o[0], key_serde=S, value_serde=I)
      .map_values(lambda v: f"after-{v}").to(o[1], key_serde=S, value_serde=S))


def _global_join(b, i, o):
    """A stream joins a GlobalKTable by a key mapped from its value, inner and left; the
    global topic (written before the stream: on Spark the first micro-batch pins all of it)
    holds updates and tombstones; a null mapped key drops the record."""
    table = b.global_table(i[1], key_serde=S, value_serde=I)
    s = b.stream(i[0], key_serde=S, value_serde=I)
    select = lambda k, v: None if v % 11 == 0 else f"c{v % 7}"  # noqa: E731
    s.join(table, select, lambda v, c: f"{v}*{c}").to(o[0], key_serde=S, value_serde=S)
    s.left_join(table, select, lambda v, c: f"{v}*{c}").to(o[1], key_serde=S, value_serde=S)


def _global_join_two_sources(b, i, o):
    """Two sub-topologies read Kafka and both join one GlobalKTable: one source pins the
    global offsets, the other's tasks read them from Spark's offset log."""
    table = b.global_table(i[2], key_serde=S, value_serde=I)
    select = lambda k, v: f"c{v % 7}"  # noqa: E731
    b.stream(i[0], key_serde=S, value_serde=I).join(table, select, lambda v, c: f"a{v}*{c}").to(
        o[0], key_serde=S, value_serde=S)
    b.stream(i[1], key_serde=S, value_serde=I).left_join(
        table, select, lambda v, c: f"b{v}*{c}").to(o[1], key_serde=S, value_serde=S)


def _slow_show(v):
    """A call whose latency varies, so async calls complete out of order."""
    import random
    import time

    time.sleep(random.random() / 500)
    return f"v{v}"


def _async_steps(b, i, o):
    s = b.stream(i[0], key_serde=S, value_serde=I)
    s.map_values_async(_slow_show, max_in_flight=16).to(o[0], key_serde=S, value_serde=S)
    s.filter_async(lambda v: v % 3 == 0, ordering="key").map_values(str).to(
        o[1], key_serde=S, value_serde=S)


# the global topic: countries c0..c5 (c6 never), each updated, c3 and c4 deleted
_COUNTRIES = ([(f"c{j}", j, 10 + j) for j in range(6)]
              + [(f"c{j}", 100 + j, 20 + j) for j in range(6)]
              + [("c3", None, 30), ("c4", None, 31)])

SCENARIOS = [
    Scenario("filter", lambda b, i, o: _str_out(
        b.stream(i[0], key_serde=S, value_serde=I).filter(lambda k, v: v % 4 == 1), o[0]),
        {"in": _records(120)}, ["out"]),
    Scenario("filter-not", lambda b, i, o: _str_out(
        b.stream(i[0], key_serde=S, value_serde=I).filter_not(lambda k, v: v % 4 == 1), o[0]),
        {"in": _records(120)}, ["out"]),
    Scenario("map-key-and-value", lambda b, i, o: b.stream(i[0], key_serde=S, value_serde=I)
             .map(lambda k, v: (f"{k}-{v % 2}", str(v * 2))).to(o[0], key_serde=S, value_serde=S),
             {"in": _records(120)}, ["out"]),
    Scenario("map-values", lambda b, i, o: b.stream(i[0], key_serde=S, value_serde=I)
             .map_values(lambda v: f"v{v * v}").to(o[0], value_serde=S),
             {"in": _records(120)}, ["out"]),
    Scenario("map-values-with-key", lambda b, i, o: _str_out(
        b.stream(i[0], key_serde=S, value_serde=I), o[0]), {"in": _records(120)}, ["out"]),
    Scenario("flat-map", lambda b, i, o: b.stream(i[0], key_serde=S, value_serde=I)
             .flat_map(lambda k, v: [(k, str(v)), (f"{k}{k}", str(-v))] if v % 2 else [])
             .to(o[0], key_serde=S, value_serde=S), {"in": _records(120)}, ["out"]),
    Scenario("flat-map-values", lambda b, i, o: b.stream(i[0], key_serde=S, value_serde=I)
             .flat_map_values(lambda v: [str(x) for x in range(v % 4)]).to(o[0], value_serde=S),
             {"in": _records(120)}, ["out"]),
    Scenario("select-key-repartition-multi-stage", _repartition, {"in": _records(150)}, ["out"]),
    Scenario("split-named-branches", _split, {"in": _records(120)}, ["o3", "o1", "o0"]),
    Scenario("seed-branch-list", _seed_branch, {"in": _records(120)}, ["even", "small"]),
    Scenario("merge-two-topics", _merge, {"a": _records(80), "b": _records(80, start=1001)},
             ["out"]),
    Scenario("multiple-sinks", _fan_out, {"in": _records(100)}, ["big", "neg"]),
    Scenario("topic-name-extractor", lambda b, i, o: b.stream(i[0], key_serde=S, value_serde=I)
             .map_values(str).to(lambda k, v, meta: o[0] if int(v) % 2 else o[1], value_serde=S),
             {"in": _records(100)}, ["odd", "even"]),
    Scenario("headers-and-processor-api", _processor_api,
             {"in": [(k, v, ts, [("seq", str(v).encode())]) for k, v, ts in _records(90)]},
             ["out"]),
    Scenario("timestamp-extractor", lambda b, i, o: _str_out(
        b.stream(i[0], key_serde=S, value_serde=I, timestamp_extractor=ValueTime()), o[0]),
        {"in": _records(90)}, ["out"]),
    Scenario("stream-time-punctuation", lambda b, i, o: b.stream(
        i[0], key_serde=S, value_serde=I).process(Summer).to(o[0], key_serde=S, value_serde=S),
        {"in": _records(200, keys=7)}, ["out"], partitions=1, per_batch=100_000),
    # stream time and punctuation due times carry over between micro-batches (the task is
    # rebuilt each batch: it has a RocksDB store)
    Scenario("punctuation-scans-a-store", _store_scan, {"in": _records(200, keys=7, step=7)},
             ["out"], partitions=1, per_batch=25),
    Scenario("through-topic", _through, {"in": _records(100)}, ["mid", "out"],
             out_serdes=(S, None)),
    Scenario("global-table-join-and-left-join", _global_join,
             {"in": _records(150, keys=5), "countries": _COUNTRIES}, ["inner", "left"]),
    Scenario("global-table-joined-by-two-sub-topologies", _global_join_two_sources,
             {"a": _records(80), "b": _records(80, start=1001), "countries": _COUNTRIES},
             ["fromA", "fromB"]),
    Scenario("async-steps-in-order", _async_steps, {"in": _records(150)}, ["mapped", "kept"]),
]
