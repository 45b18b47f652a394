"""Generated conformance scenarios run through KafkaStreams on Spark + Kafka, compared with
Java Kafka Streams' TopologyTestDriver (issue 10: the Spark host is the product).

Many scenarios run as ONE application (Spark start-up and each run cost seconds): every
scenario's topics and stores get a prefix of their own (``<run>-c7-in0``), so each is a
set of independent sub-topologies of one topology. One partition per topic, the cache off
(``cache 0`` for Java), a few records per micro-batch. Each scenario's output records
(key, value, timestamp, in order), read with read_committed, must equal Java's, and so must
the stores it dumps (``store`` lines), read through ``KafkaStreams.store`` after the run
(``autostop.at=eol`` in both modes) and before its close. docs/conformance.md ("On Spark")
explains which scenarios are sampled and in which order Java is fed.

    python -m tests.conformance.spark_host --count 100 [--seed 0] [--bootstrap HOST:PORT]
        [--mode real_time]
    python -m tests.conformance.spark_host --file scenario.txt [--per-trigger 1]
"""

from __future__ import annotations

import heapq
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kspark import KafkaStreams, QueryableStoreTypes, StoreQueryParameters, StreamsBuilder
from kspark._graph.subtopology import sub_topologies
from kspark._spark.batch_cut import cap_by_lag, cap_by_time
from tests.conformance.generate import scenario
from tests.conformance.lang import L, S, build
from tests.conformance.reference import run_java

__all__ = ["Case", "Sample", "case_of", "with_java", "sample", "run_on_spark",
           "disagreements", "rows_differ", "report", "SPARK_DIVERGENCES", "PER_TRIGGER",
           "REAL_TIME", "mode_of", "families"]

PER_TRIGGER = 8  # max.offsets.per.trigger: a scenario's 6 to 30 inputs take 1 to 4 batches
# execution.mode=real_time: a task processes what it polled once each of its partitions has
# records or is read to its end, so a scenario's inputs (all written before the start) are
# merged as one batch: Java is fed them in that order
REAL_TIME = 10**9

# Scenario families on which kspark on Spark still differs from Java, left out of the sample
# until fixed (docs/conformance.md lists them): name -> (the execution modes it is left out
# in, test on the op lines' kinds).
SPARK_DIVERGENCES = {
    # a processor's own fields (not a store) restart every micro-batch on Spark: a task with
    # a persistent store is rebuilt for each batch, and a task may move between workers;
    # Java keeps a task's processors while the task stays assigned. In real-time mode a
    # task stays open for its whole epoch (its processors keep their fields), as in Java
    "a value transformer counting its calls across micro-batches":
        (("micro_batch",), lambda ops: "transform_values" in ops),
}


def mode_of(per_trigger: int) -> str:
    """The execution mode a sample is cut for: ``REAL_TIME`` is real-time mode's."""
    return "real_time" if per_trigger >= REAL_TIME else "micro_batch"


@dataclass
class Case:
    """One sampled scenario: as generated, as Java runs it, and its prefix on Spark."""

    seed: int
    lines: list[str]
    java_lines: list[str]
    prefix: str
    batches: int  # micro-batches of its longest source
    fed_output: bool  # its output comes from a stage fed by a repartition topic
    java: list[str] = field(default_factory=list)  # Java's output records
    spark: list[str] = field(default_factory=list)  # kspark on Spark's
    java_rows: list[str] = field(default_factory=list)  # Java's stores at the end
    spark_rows: list[str] = field(default_factory=list)  # kspark's, read after the run


@dataclass
class Sample:
    """The cases taken, and how many scenarios were left out for which reason."""

    cases: list[Case]
    skipped: Counter  # reason -> scenarios left out


def _inputs(lines: list[str]) -> list[list[str]]:
    return [line.split(" ") for line in lines if line.startswith("input ")]


def _spark_order(lines: list[str], per_trigger: int) -> tuple[list[str], int, bool] | None:
    """The scenario's input lines in the order kspark on Spark processes them, how many
    micro-batches its longest source takes, and whether its output comes from a stage fed
    by a repartition topic; None if the order depends on more than the input topics (see
    docs/conformance.md). Batches are cut by the reader's own rules (``batch_cut.py``); the
    merge within a batch is written out here, as the rule the comparison relies on."""
    subs = sub_topologies(build(lines).builder.build()._graph)
    if any(st.fed_topics and len(st.fed_topics) + len(st.user_topics) > 1 for st in subs):
        return None  # a task merges a repartition topic with another input
    queues: dict[str, list[list[str]]] = {}
    for t in _inputs(lines):
        queues.setdefault(t[1], []).append(t)
    order: list[list[str]] = []
    batches = 0
    for st in subs:
        topics = sorted(t for t in st.user_topics if t in queues)
        ends = {t: {"0": len(queues[t])} for t in topics}
        start = {t: {"0": 0} for t in topics}
        n = 0
        while start != ends:  # one source's micro-batches, as KafkaStreamReader cuts them
            end = _cut(queues, topics, start, ends, per_trigger)
            order += _merge([queues[t][start[t]["0"]:end[t]["0"]] for t in topics])
            start, n = end, n + 1
        batches = max(batches, n)
    return [" ".join(t) for t in order], batches, any(st.fed_topics for st in subs)


def _cut(queues: dict[str, list[list[str]]], topics: list[str], start: dict, ends: dict,
         per_trigger: int) -> dict:
    """Where KafkaStreamReader ends the next micro-batch of a source of ``topics`` (their
    records in ``queues``): by lag for one topic, by time for several, with Kafka's
    ListOffsets answers taken from the queues."""
    if len(topics) < 2:
        return cap_by_lag(start, ends, per_trigger)
    stamps = {t: [int(r[4]) for r in queues[t]] for t in topics}

    def first_at(c: int) -> dict:
        return {(t, 0): next((i for i, x in enumerate(v) if x >= c), None)
                for t, v in stamps.items()}

    newest = max((x for v in stamps.values() for x in v), default=None)
    return cap_by_time(start, ends, per_trigger, first_at, newest)


def _merge(queues: list[list[list[str]]]) -> list[list[str]]:
    """One task's records of one micro-batch: lowest head timestamp first, ties to the
    lower topic name (``queues`` are in topic-name order), offset order within a topic."""
    heap = [(int(q[0][4]), i, 0) for i, q in enumerate(queues) if q]
    heapq.heapify(heap)
    out = []
    while heap:
        _, i, j = heapq.heappop(heap)
        out.append(queues[i][j])
        if j + 1 < len(queues[i]):
            heapq.heappush(heap, (int(queues[i][j + 1][4]), i, j + 1))
    return out


def _kind(t: list[str]) -> str:
    """An op line's kind; a join with a window (stream-stream) is ``stream_join``."""
    return "stream_join" if t[2] in ("join", "left_join", "outer_join") and len(t) > 6 else t[2]


def _java_lines(lines: list[str], order: list[str]) -> list[str]:
    """The scenario as Java runs it: cache off, inputs in Spark's order (its store dumps
    kept: Java prints the stores' contents after all inputs)."""
    head = ["cache 0" if line.startswith("cache ") else line for line in lines
            if not line.startswith("input ")]
    return head + order


def _shifted(lines: list[str]) -> list[str]:
    """The scenario with every input 1 ms later: librdkafka cannot write timestamp 0 (rule
    26), and both hosts get the same inputs, so the comparison holds."""
    out = []
    for line in lines:
        t = line.split(" ")
        out.append(" ".join(t[:4] + [str(int(t[4]) + 1)] + t[5:]) if t[0] == "input" else line)
    return out


def families(lines: list[str], mode: str | None = None) -> list[str]:
    """The ``SPARK_DIVERGENCES`` families the scenario is in (those left out in ``mode``;
    in any mode by default)."""
    ops = " ".join(_kind(line.split(" ")) for line in lines if line.startswith("op "))
    return [name for name, (modes, test) in SPARK_DIVERGENCES.items()
            if (mode is None or mode in modes) and test(ops)]


def case_of(lines: list[str], seed: int, run: str, per_trigger: int = PER_TRIGGER,
            known: bool = False) -> Case | str:
    """The scenario as a case of the sample (without Java's answer yet), or why not;
    ``known``: take it even if it is in a family of ``SPARK_DIVERGENCES`` (those of the mode
    ``per_trigger`` is cut for: ``REAL_TIME`` is real-time mode's)."""
    if any(t[4] == "0" for t in _inputs(lines)):
        lines = _shifted(lines)
    divergent = next(iter(families(lines, mode_of(per_trigger))), None)
    if divergent and not known:
        return divergent
    plan = _spark_order(lines, per_trigger)
    if plan is None:
        return "a task reads a repartition topic and another topic"
    order, batches, fed = plan
    return Case(seed, lines, _java_lines(lines, order), f"{run}-c{seed}-", batches, fed)


def with_java(cases: list[Case]) -> list[Case]:
    """Fill in Java's output records and store rows (one JVM); the cases Java answers with
    an error are left out."""
    kept = []
    for case, answer in zip(cases, run_java([c.java_lines for c in cases]), strict=True):
        if not answer or not answer[0].startswith("error"):
            case.java = [line for line in answer if line.startswith("record ")]
            case.java_rows = [line for line in answer if line.startswith("row ")]
            kept.append(case)
    return kept


def sample(count: int, seed: int, per_trigger: int = PER_TRIGGER, run: str = "") -> Sample:
    """The first ``count`` generated scenarios from ``seed`` on that the sample takes, each
    with Java's answer; the others counted by reason. ``run`` (random by default) starts
    every prefix, so that runs against one broker do not share topics."""
    run = run or uuid.uuid4().hex[:6]
    cases: list[Case] = []
    skipped: Counter = Counter()
    s = seed
    while len(cases) < count:
        need, batch = count - len(cases), []
        while len(batch) < need + need // 4 + 1:  # a few more: Java refuses some
            case = case_of(scenario(s), s, run, per_trigger)
            if isinstance(case, str):
                skipped[case] += 1
            else:
                batch.append(case)
            s += 1
        kept = with_java(batch)
        if len(kept) < len(batch):
            skipped["Java answers with an error"] += len(batch) - len(kept)
        cases += kept[:need]
    return Sample(cases, skipped)


def run_on_spark(cases: list[Case], bootstrap: str, spark: Any, admin: Any, state_dir: str,
                 per_trigger: int = PER_TRIGGER, timeout_s: float = 600,
                 mode: str = "micro_batch", cache: bool = False) -> None:
    """Run every case in one KafkaStreams application on Spark (``mode``: the
    ``execution.mode``), to its inputs' ends (``autostop.at=eol``); fill in ``case.spark``
    and, read before the application closes, ``case.spark_rows``. ``cache``: the record
    cache on (its default size; see ``cached_counts.py``)."""
    b = StreamsBuilder()
    built = [build(c.lines, b, c.prefix) for c in cases]
    topics = {t[1] for x in built for t in x.inputs} | {o for x in built for o in x.outs}
    admin.create_topics({t: 1 for t in sorted(topics)})
    _produce(bootstrap, built)
    config = {"application.id": f"conformance-{cases[0].prefix}{len(cases)}",
              "bootstrap.servers": bootstrap, "state.dir": state_dir, "autostop.at": "eol",
              "statestore.cache.max.bytes": 0, "max.offsets.per.trigger": per_trigger,
              "default.key.serde": "String", "default.value.serde": "Long",
              "execution.mode": mode}
    if cache:
        del config["statestore.cache.max.bytes"]
    if mode == "real_time":  # the run ends once the group committed every input's end
        config["commit.interval.ms"] = 100
        del config["max.offsets.per.trigger"]
    streams = KafkaStreams(b.build(), config, spark=spark)
    streams.start()
    try:
        if not streams.await_termination(timeout_s):
            raise RuntimeError(f"the application did not reach the inputs' end in {timeout_s} s")
        for case, x in zip(cases, built, strict=True):
            case.spark_rows = _store_rows(streams, case.prefix, x.stores)
    finally:
        streams.close()
    records = _read_all(bootstrap, [o for x in built for o in x.outs])
    for case, x in zip(cases, built, strict=True):
        case.spark = [f"record {o[len(case.prefix):]} {k} {v} {ts}"
                      for o in x.outs for k, v, ts in records[o]]


def _produce(bootstrap: str, built: list[Any]) -> None:
    """Write every scenario's inputs, per topic in scenario order (Java's order keeps it)."""
    from confluent_kafka import Producer

    failed: list = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for x in built:
        for t in x.inputs:
            key = None if t[2] == "~" else S.serialize(t[1], t[2])
            value = None if t[3] == "~" else L.serialize(t[1], int(t[3]))
            p.produce(t[1], key=key, value=value, timestamp=int(t[4]), partition=0,
                      on_delivery=lambda err, msg: err is None or failed.append(err))
    if p.flush(60) or failed:
        raise RuntimeError(f"the scenarios' input records were not all delivered: {failed[:3]}")


def _store_rows(streams: Any, prefix: str, stores: list[list[str]]) -> list[str]:
    """The scenario's dumped stores as interactive queries answer them, in the lines of
    ``Reference.java``'s ``dump`` (``row <store> <key> <value>``, a window's key as
    ``key@start``; the store named without the case's prefix; null values ``~``)."""
    kinds = {"kv": QueryableStoreTypes.key_value_store(),
             "window": QueryableStoreTypes.window_store()}
    rows = []
    for _, name, kind in stores:
        shown = name[len(prefix):]
        store = streams.store(StoreQueryParameters.from_name_and_type(name, kinds[kind]))
        for kv in store.all():
            key = kv.key if kind == "kv" else f"{kv.key.key}@{kv.key.window.start}"
            rows.append(f"row {shown} {key} {'~' if kv.value is None else kv.value}")
    return rows


def _read_all(bootstrap: str, topics: list[str], timeout_s: float = 60) -> dict[str, list]:
    """Every committed record of each topic's partition 0: (key, value, timestamp) as shown
    in answers, read until each partition's end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in topics])
    out: dict[str, list] = {t: [] for t in topics}
    pending, deadline = set(topics), time.monotonic() + timeout_s
    try:
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(pending)} output topics not read to their end in "
                                   f"{timeout_s} s, e.g. {sorted(pending)[:3]}")
            for m in c.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"reading {m.topic()}: {m.error()}")
                    pending.discard(m.topic())
                    continue
                k, v = m.key(), m.value()
                out[m.topic()].append(("~" if k is None else S.deserialize(m.topic(), k),
                                       "~" if v is None else L.deserialize(m.topic(), v),
                                       m.timestamp()[1]))
    finally:
        c.close()
    return out


def rows_differ(case: Case) -> bool:
    """Whether the case's stores on Spark differ from Java's: as sorted lines, since Java
    iterates one task's store and kspark concatenates its partitions'."""
    return sorted(case.spark_rows) != sorted(case.java_rows)


def disagreements(cases: list[Case]) -> list[Case]:
    """The cases whose output or stores on Spark differ from Java's."""
    return [c for c in cases if c.spark != c.java or rows_differ(c)]


def report(bad: list[Case], show: int = 3) -> str:
    """The first disagreeing cases: the scenario as Java ran it, then both answers (and
    both stores' rows, sorted, where they differ)."""
    return "\n\n".join(_report(c) for c in bad[:show])


def _report(c: Case) -> str:
    text = (f"seed {c.seed} (on Spark with prefix {c.prefix}):\n" + "\n".join(c.java_lines)
            + "\n-- java:\n" + "\n".join(c.java)
            + "\n-- kspark on Spark:\n" + "\n".join(c.spark))
    if rows_differ(c):
        text += ("\n-- java's stores:\n" + "\n".join(sorted(c.java_rows))
                 + "\n-- kspark's stores (interactive queries):\n"
                 + "\n".join(sorted(c.spark_rows)))
    return text


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile
    from pathlib import Path

    from kspark import spark_session
    from kspark._kafka.admin import Admin
    from kspark._local.broker import LocalBroker, free_port

    ap = argparse.ArgumentParser(prog="python -m tests.conformance.spark_host")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--file", action="append", default=[],
                    help="run this scenario file instead, even if in SPARK_DIVERGENCES")
    ap.add_argument("--per-trigger", type=int, default=PER_TRIGGER)
    ap.add_argument("--mode", choices=("micro_batch", "real_time"), default="micro_batch",
                    help="the execution.mode (real_time feeds Java each scenario's inputs "
                    "merged as one batch)")
    ap.add_argument("--bootstrap", help="a running broker (default: start one)")
    ap.add_argument("--show", type=int, default=3)
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    if a.mode == "real_time":
        a.per_trigger = REAL_TIME
    if a.file:
        run = uuid.uuid4().hex[:6]
        picked = [case_of(Path(f).read_text().splitlines(), i, run, a.per_trigger, known=True)
                  for i, f in enumerate(a.file)]
        refused = [f"{f}: {c}" for f, c in zip(a.file, picked, strict=True) if isinstance(c, str)]
        got = Sample(with_java([c for c in picked if not isinstance(c, str)]),
                     Counter(refused))
    else:
        got = sample(a.count, a.seed, a.per_trigger)
    with tempfile.TemporaryDirectory() as tmp:
        if not got.cases:
            print(f"spark conformance: no scenario to run (left out: {dict(got.skipped)})")
            return 2
        broker = None if a.bootstrap else LocalBroker(f"{tmp}/broker", port=free_port())
        bootstrap = a.bootstrap or broker.start()
        spark = spark_session({"spark.master": "local[2]", "spark.ui.enabled": "false",
                               "spark.sql.shuffle.partitions": "2"})
        try:
            run_on_spark(got.cases, bootstrap, spark, Admin(bootstrap, 30000), f"{tmp}/state",
                         a.per_trigger, mode=a.mode)
        finally:
            spark.stop()
            if broker is not None:
                broker.stop()
    bad = disagreements(got.cases)
    if bad:
        print(report(bad, a.show))
    rows = [len(c.java_rows) for c in got.cases if c.java_rows]
    print(f"spark conformance: {len(got.cases) - len(bad)}/{len(got.cases)} agree with Java "
          f"Kafka Streams ({sum(rows)} store rows in {len(rows)} cases; left out: "
          f"{dict(got.skipped)}; {time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
