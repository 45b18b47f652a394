"""A topology's Spark query as plain data: stages, exchanges, tasks, each source's options.

:func:`plan` imports no pyspark and runs no Spark job: it can be unit-tested, printed
(``describe``) and handed to ``planner.build``, which makes the DataFrames. It runs these
named passes (``passes.py``) over the topology, in order:

1. :func:`task_counts`: tasks per sub-topology and partitions per fed topic, upstream first
   (a sub-topology has as many tasks as its most partitioned input, as in Kafka Streams).
   In micro-batch mode, :func:`back_edges` and :func:`cut_back_edges`: the topics closing a
   cycle of sub-topologies (a foreign-key join's) become Kafka topics, read back in the
   next micro-batch (``QueryPlan.looped``), so the stages that follow form no cycle.
2. :func:`fuse_stages`: the sub-topologies that read what one stage writes share a stage,
   and its input is one Spark exchange, so every stage's output is consumed exactly once
   (its tasks, their stores and writes, run once). A sub-topology that reads only Kafka is a
   stage of its own, without an exchange. Stages come upstream first.
3. :func:`lay_out`: each member of a stage owns a range of the stage's partitions.
4. :func:`shuffle_keys`: per exchange size, an int that Spark's hash partitioning sends to
   each partition (Spark's Murmur3 computed in Python, see :func:`spark_hash`).

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> from kspark.config import StreamsConfig
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .repartition(name="r").to("out")
    >>> config = StreamsConfig({"application.id": "a", "bootstrap.servers": "kafka:9092"})
    >>> p = plan(b.build()._graph, {"in": 3, "out": 3}, config)
    >>> [(s.index, [m.sub_topology for m in s.members], s.exchange and s.exchange.size)
    ...  for s in p.stages]
    [(0, [0], None), (1, [1], 3)]
    >>> p.routes, p.tasks
    ({'a-r-repartition': (3, 0)}, 6)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kspark._engine.state.build import changelog_topic
from kspark._graph.graph import TopologyGraph, topic_name
from kspark._graph.subtopology import SubTopology, sub_topologies
from kspark._plan.batch_path import batch_path_note
from kspark._plan.options import Offsets, SourceOptions
from kspark._plan.passes import (back_edges, cut_back_edges, fuse_stages, lay_out, shuffle_keys,
                                 task_counts)
from kspark.config import checkpoint_location
from kspark.errors import TopologyError

__all__ = ["plan", "QueryPlan", "Stage", "Member", "Exchange", "StagePlan", "StorePlan",
           "SourceOptions", "kafka_sources", "needed_topics", "local_checkpoint"]


@dataclass(frozen=True)
class StagePlan:
    """What one sub-topology's tasks need to know: its nodes and where its fed topics go.

    ``fed``: resolved topic name -> (partitions, also written to Kafka?). ``routes``: fed
    topic -> (size of the exchange its reader's group reads through, the reader's first
    partition in it). ``shuffle_keys``: per exchange size, the int whose Spark hash lands in
    each partition.
    """

    stage: int
    nodes: tuple[str, ...]
    fed: dict[str, tuple[int, bool]]
    routes: dict[str, tuple[int, int]]
    shuffle_keys: dict[int, list[int]]
    partition_counts: dict[str, int]
    streaming: bool = False  # one input topic, nothing shuffled in: process batch by batch
    first_marker: int = 0  # the partition of the progress topic holding task 0's marker


@dataclass(frozen=True)
class Member:
    """One sub-topology run by a stage: its tasks are the stage's partitions ``first`` to
    ``first + tasks - 1``; ``source``: its Kafka source (None: it reads only the exchange)."""

    sub_topology: int
    first: int
    tasks: int
    stage_plan: StagePlan
    source: SourceOptions | None


@dataclass(frozen=True)
class Exchange:
    """A stage's input shuffle: Spark's hash partitioning of ``shuffle_key`` into ``size``
    partitions. It carries the fed ``topics`` (resolved names) written by the ``upstream``
    stages, the records of its members' Kafka sources, and the task markers."""

    size: int
    shuffle_keys: tuple[int, ...]
    topics: tuple[str, ...]
    upstream: tuple[int, ...]


@dataclass(frozen=True)
class Stage:
    """One ``mapInArrow`` over one input; ``terminal``: no stage reads its output (the
    query's result is the union of the terminal stages)."""

    index: int
    members: tuple[Member, ...]
    exchange: Exchange | None
    terminal: bool

    @property
    def partitions(self) -> int:
        """Spark partitions (one per task) of the stage."""
        return sum(m.tasks for m in self.members)


@dataclass(frozen=True)
class StorePlan:
    """A state store: run by the tasks of ``sub_topology``, one store per task;
    ``changelog``: its changelog topic (one partition per task), None if not logged."""

    name: str
    sub_topology: int
    tasks: int
    changelog: str | None
    batch: str | None = None  # a count's: a batch at a time or record by record, and why


@dataclass(frozen=True)
class QueryPlan:
    """The whole topology as one streaming query (see the module's passes).

    ``routes``: fed topic -> (exchange size, its reader's first partition). ``fed_partitions``:
    partitions of each fed topic. ``first_marker``: per sub-topology, the progress topic's
    partition of its task 0's marker (one marker partition per task, ``tasks`` in all).
    ``stores``: the state stores; ``global_stores``: global store -> its topic.
    ``pins_globals``: the sub-topology whose Kafka source pins the global topics' offsets in
    every micro-batch (the tasks of the others read them from Spark's offset log).
    ``looped``: micro-batch mode's topics closing a cycle of sub-topologies (a foreign-key
    join's), each with its partitions: created in Kafka, written by their writers' tasks
    (in their transactions) and read by their readers' Kafka sources in a later micro-batch.
    """

    application_id: str
    stages: tuple[Stage, ...]
    routes: dict[str, tuple[int, int]]
    shuffle_keys: dict[int, list[int]]
    fed_partitions: dict[str, int]
    first_marker: dict[int, int]
    stores: tuple[StorePlan, ...]
    tasks: int
    global_stores: dict[str, str]
    pins_globals: int | None
    looped: dict[str, int] = field(default_factory=dict)

    @property
    def store_tasks(self) -> dict[str, int]:
        """Tasks (changelog partitions) of each state store."""
        return {s.name: s.tasks for s in self.stores}

    def members(self) -> list[Member]:
        """Every sub-topology's member, by sub-topology id."""
        return sorted((m for s in self.stages for m in s.members), key=lambda m: m.sub_topology)

    def sources(self) -> dict[int, SourceOptions]:
        """The Kafka source of each sub-topology that reads Kafka."""
        return {m.sub_topology: m.source for m in self.members() if m.source is not None}


def kafka_sources(graph: TopologyGraph, looped: Iterable[str] = ()
                  ) -> tuple[list[str], dict[str, str]]:
    """The topics the query reads from Kafka, and the offset reset policy of those that have
    one: the user topics, and ``looped`` (a plan's ``looped`` topics, read from the earliest
    offset, as Kafka Streams reads its internal topics)."""
    topics = sorted({t for st in sub_topologies(graph) for t in st.user_topics})
    resets = {t: s.offset_reset for s in graph.sources() if s.offset_reset for t in s.topics}
    looped = sorted(looped)
    return topics + looped, {**resets, **{t: "earliest" for t in looped}}


def needed_topics(graph: TopologyGraph) -> list[str]:
    """The user topics whose partition counts :func:`plan` needs: those read from Kafka,
    those written by one sub-topology and read by another (``through()``), and those an
    internal topic is partitioned like."""
    internal = set(graph.internal_topics())
    subs = sub_topologies(graph)
    topics = {t for st in subs for t in st.user_topics}
    topics |= {t for st in subs for t in st.feeds if t not in internal}
    topics |= set(graph.partitions_like.values())
    return sorted(topics - internal)


def plan(graph: TopologyGraph, partition_counts: dict[str, int], config: Any,
         start: Offsets | None = None, stop: Offsets | None = None) -> QueryPlan:
    """Plan the topology as one streaming query (see :class:`QueryPlan`).

    ``partition_counts`` holds every user topic the topology reads or writes by name (see
    :func:`needed_topics`); ``config``: a StreamsConfig; ``start``: where the query's first
    batch starts, per topic and partition (see ``_spark/resume.py``); ``stop``: an
    incremental batch run's stop offsets (see ``_control/stop_offsets.py``), None to stop at
    the ends found at start (AvailableNow) or never (streaming). In micro-batch mode a
    cycle's back edges (:func:`back_edges`) are Kafka topics (``QueryPlan.looped``).
    """
    c = config
    app_id = c["application.id"]
    internal = set(graph.internal_topics())
    subs = sub_topologies(graph)
    tasks, fed_count = task_counts(graph, subs, partition_counts, internal)
    name = lambda t: topic_name(t, t in internal, app_id)  # noqa: E731
    back = back_edges(subs) if c.get("execution.mode") == "micro_batch" else set()
    writes_back = {st.id: [t for t in st.feeds if t in back] for st in subs}
    subs = cut_back_edges(subs, back)
    looped = {name(t): fed_count[t] for t in sorted(back)}
    fused = fuse_stages(subs)
    _check_global_pins(graph, c, fused)
    layouts = [lay_out(ms, tasks) for ms in fused]
    stage_of = {m.id: i for i, ms in enumerate(fused) for m in ms}
    readers = {t: st for st in subs for t in st.fed_topics}
    routes = {name(t): (layouts[stage_of[r.id]][1], layouts[stage_of[r.id]][0][r.id])
              for t, r in readers.items()}
    keys = {size: shuffle_keys(size)
            for (_, size), ms in zip(layouts, fused, strict=True) if ms[0].fed_topics}
    first_marker, total = {}, 0
    for st in sorted(subs, key=lambda st: st.id):
        first_marker[st.id], total = total, total + tasks[st.id]
    # the first Kafka source built (upstream first) pins the global topics (see globals.py)
    pins = next((st.id for ms in fused for st in ms if st.user_topics), None)
    pins = pins if graph.global_topics() else None
    sources = _SourceMaker(graph, c, start or {}, stop, pins, name, set(looped))

    def member(st: SubTopology, first: int) -> Member:
        fed = {name(t): (fed_count[t], t not in internal) for t in st.feeds}
        fed |= {name(t): (fed_count[t], True) for t in writes_back[st.id]}  # to Kafka only
        counts = {**partition_counts, **looped, **{n: p for n, (p, _) in fed.items()}}
        streaming = len(st.user_topics) == 1 and not st.fed_topics
        stage_plan = StagePlan(st.id, st.nodes, fed, routes, keys, counts, streaming,
                               first_marker[st.id])
        return Member(st.id, first, tasks[st.id], stage_plan, sources.of(st))

    stages = tuple(_stage(i, fused, layouts[i], keys, name, member) for i in range(len(fused)))
    stores = tuple(
        StorePlan(store, st.id, tasks[st.id],
                  changelog_topic(app_id, store) if builder.logging_enabled else None,
                  batch_path_note(graph, c, set(st.nodes), store))
        for st in subs for store, (builder, procs) in graph.stores.items() if procs & set(st.nodes))
    return QueryPlan(app_id, stages, routes, keys,
                     {name(t): n for t, n in fed_count.items() if t not in back}, first_marker,
                     stores, total, {s: g.source.topics[0] for s, g in graph.global_stores.items()},
                     pins, looped)


def _stage(i: int, fused: list[list[SubTopology]], layout: tuple[dict[int, int], int],
           keys: dict[int, list[int]], name: Callable[[str], str],
           member: Callable[[SubTopology, int], Member]) -> Stage:
    """Stage ``i``: its members, its exchange (if its members read fed topics: the
    stages writing them are upstream) and whether it is terminal (nobody reads its output)."""
    ms, (first, size) = fused[i], layout
    fed_here = {t for m in ms for t in m.fed_topics}
    exchange = None if not ms[0].fed_topics else Exchange(
        size, tuple(keys[size]), tuple(name(t) for m in ms for t in m.fed_topics),
        tuple(j for j, up in enumerate(fused) if any(set(u.feeds) & fed_here for u in up)))
    feeds = {t for m in ms for t in m.feeds}
    terminal = not any(set(m.fed_topics) & feeds for other in fused for m in other)
    return Stage(i, tuple(member(st, first[st.id]) for st in ms), exchange, terminal)


class _SourceMaker:
    """Each Kafka-reading sub-topology's :class:`SourceOptions` (``name``: a topic's real
    name; ``looped``: the back edges read from Kafka, from the earliest offset, never
    stopped at a batch run's stop offsets)."""

    def __init__(self, graph: TopologyGraph, c: Any, start: Offsets, stop: Offsets | None,
                 pins: int | None, name: Callable[[str], str], looped: set[str]):
        self.graph, self.c, self.start, self.stop, self.pins = graph, c, start, stop, pins
        self.name, self.looped = name, looped
        self.resets = {**kafka_sources(graph)[1], **{t: "earliest" for t in looped}}
        self.clock_ms = int(c["delayed.records.check.interval.ms"]) if graph.delayed_stores() else 0

    def of(self, st: SubTopology) -> SourceOptions | None:
        if not st.user_topics:
            return None
        topics, c = tuple(self.name(t) for t in st.user_topics), self.c
        return SourceOptions(
            topics=topics, bootstrap=c["bootstrap.servers"],
            max_offsets=int(c["max.offsets.per.trigger"]), timeout_ms=int(c["request.timeout.ms"]),
            read_timeout_ms=int(c["source.read.timeout.ms"]),
            resets={t: self.resets[t] for t in topics if t in self.resets},
            start={t: self.start[t] for t in topics if t in self.start},
            stop=None if self.stop is None else {t: self.stop[t] for t in topics
                                                 if t not in self.looped},
            global_topics=tuple(self.graph.global_topics()) if st.id == self.pins else (),
            clock_ms=self.clock_ms, emit="ranges",  # the stage reads the records (wire.py)
            looped=tuple(t for t in topics if t in self.looped))


def _check_global_pins(graph: TopologyGraph, c: Any, fused: list[list[SubTopology]]) -> None:
    """Several Kafka sources with global stores: the others' tasks read the pins from Spark's
    offset log, which must be on local disk."""
    checkpoint = checkpoint_location(c)
    kafka_stages = sum(1 for ms in fused for st in ms if st.user_topics)
    if graph.global_topics() and kafka_stages > 1 and local_checkpoint(checkpoint) is None:
        raise TopologyError(
            f"this topology reads Kafka in {kafka_stages} sub-topologies and has global stores "
            f"({', '.join(map(repr, graph.global_stores))}): one source pins the global "
            "offsets of each micro-batch, and the tasks of the others read them from Spark's "
            f"offset log, which must then be on local disk, but checkpoint.location is "
            f"{checkpoint!r}. Use a local checkpoint.location, or merge the input streams into "
            "one sub-topology (one stream of several topics, or merge())")


def local_checkpoint(location: str) -> Path | None:
    """The local directory of a checkpoint location (None: not on this machine's disk)."""
    from urllib.parse import urlparse

    url = urlparse(location)
    return Path(url.path) if url.scheme == "file" else Path(location) if not url.scheme else None
