"""What a topology becomes on Spark, as text: stages, exchanges, tasks, stores and topics.

:func:`describe_plan` is a pure function of the topology's description (as Kafka Streams
prints it, ``Topology.describe()``) and its :class:`~kspark._plan.plan.QueryPlan`.
:func:`describe_application` finds the partition counts the plan needs (the broker's, when
``bootstrap.servers`` answers; those given; else an assumption it prints) and describes the
plan. Neither imports pyspark nor starts anything.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> from kspark.config import StreamsConfig
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    >>> t = b.build()
    >>> c = StreamsConfig({"application.id": "app", "bootstrap.servers": "kafka:9092",
    ...                    "execution.mode": "micro_batch"})
    >>> print(describe_application(str(t.describe()), t._graph, c, {"in": 2}, broker=False))
    ... # doctest: +ELLIPSIS
    Topologies:
    ...
    Spark plan (one streaming query; every micro-batch runs each stage once):
       Stage 0 (2 Spark tasks): reads Kafka, no exchange
        Sub-topology: 0 (tasks 0_0 to 0_1; progress partitions 0-1)
          Kafka source: [in]
       Query output: stage 0 (a noop sink: the tasks write to Kafka themselves)
    Internal topics:
       app-kspark-progress: the tasks' progress markers (one partition per task), 2 partitions
       app-kspark-control: stop signals, task reports, query routes, 1 partition
       app-kspark-instance: marks the one running instance, 1 partition
       app-kspark-metadata: batch runs' stop offsets (autostop.at=eol), compacted, 1 partition
    Partition counts:
       in: 2 (given)
    <BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kspark._graph.graph import TopologyGraph
from kspark._graph.resources import kspark_topics
from kspark._plan.plan import Member, QueryPlan, Stage, StorePlan, needed_topics, plan
from kspark.errors import KSparkError
from kspark._kafka.settings import ClientSettings

__all__ = ["describe_plan", "describe_application", "describe_real_time",
           "partition_counts_for"]

_DESCRIBE_TIMEOUT_MS = 10_000  # describe asks the broker briefly: it runs nothing


def describe_application(topology_text: str, graph: TopologyGraph, config: Any,
                         partitions: Mapping[str, int] | None = None, broker: bool = True) -> str:
    """The topology as Kafka Streams prints it, then the Spark plan it becomes.

    Partition counts: ``partitions`` first, then (``broker``) those of the cluster at the
    config's ``bootstrap.servers``; a topic known to neither is assumed to have one
    partition, and the output says so.
    """
    counts, notes = partition_counts_for(graph, config, partitions or {}, broker)
    graph.check_copartitioning({t: n for t, n in counts.items() if "assumed" not in notes[t]})
    query = plan(graph, counts, config)
    lines = [f"   {t}: {counts[t]} ({notes[t]})" for t in sorted(counts)]
    if config["execution.mode"] == "real_time":
        return describe_real_time(topology_text, query, config, lines)
    return describe_plan(topology_text, query, lines)


def describe_real_time(topology_text: str, query: QueryPlan, config: Any,
                       notes: Sequence[str] = ()) -> str:
    """``topology_text``, then real-time mode's layout: every sub-topology's tasks, run by
    the stream threads (each a Spark job of one long-running task), meeting through
    repartition topics created in Kafka, as Kafka Streams' do."""
    text = topology_text if topology_text.endswith("\n") else topology_text + "\n"
    threads = config["num.stream.threads"]
    asked = (f"{threads} stream thread(s)" if threads else
             "stream threads as the free Spark task slots allow (num.stream.threads unset)")
    lines = [text + f"Real-time plan ({asked}, each a Spark job of one long-running task; "
             "sub-topologies meet through Kafka topics):"]
    repartitions = dict(sorted(query.fed_partitions.items()))
    fed = {m.sub_topology: [t for t in (s.exchange.topics if s.exchange else ())
                            if query.routes.get(t, (0, -1))[1] == m.first]
           for s in query.stages for m in s.members}
    for m in sorted(query.members(), key=lambda m: m.sub_topology):
        i = m.sub_topology
        reads = [*(m.source.topics if m.source is not None else ()), *fed[i]]
        lines += [f"    Sub-topology: {i} (tasks {i}_0 to {i}_{m.tasks - 1})",
                  f"      Reads: [{', '.join(reads)}]"]
        lines += [f"      Writes {t} ({n} partitions)" for t, (n, _) in m.stage_plan.fed.items()]
        lines += [f"      Store: {st.name} ({_store_note(st)})"
                  for st in query.stores if st.sub_topology == i]
    lines.append("Internal topics (created in Kafka):")
    lines += [f"   {t}: repartition topic, {n} partitions, purged after each commit"
              for t, n in repartitions.items()]
    lines += [f"   {st.changelog}: changelog of store {st.name}, {st.tasks} partitions, "
              "compacted" for st in query.stores if st.changelog]
    lines += _kspark_topics(query)
    if notes:
        lines += ["Partition counts:", *notes]
    return "\n".join(lines) + "\n"


def partition_counts_for(graph: TopologyGraph, config: Any, given: Mapping[str, int],
                         broker: bool) -> tuple[dict[str, int], dict[str, str]]:
    """The partition count of every topic the plan needs, and where each came from."""
    needed = needed_topics(graph)
    counts = {t: given[t] for t in needed if t in given}
    notes = {t: "given" for t in counts}
    missing = [t for t in needed if t not in counts]
    why = "the broker was not asked"
    if missing and broker:
        found, why = _broker_counts(config)
        for t in missing:
            if t in found:
                counts[t], notes[t] = found[t], f"from the broker at {config['bootstrap.servers']}"
            elif not why:
                why = f"not found at {config['bootstrap.servers']}"
    for t in needed:
        if t not in counts:
            counts[t], notes[t] = 1, f"assumed: {why}; give the topic's partition count"
    return counts, notes


def _broker_counts(config: Any) -> tuple[dict[str, int], str]:
    """Every topic's partition count at the config's cluster, or why there are none."""
    from kspark._kafka.admin import Admin

    try:
        admin = Admin(ClientSettings.from_config(config),
                      min(int(config["request.timeout.ms"]), _DESCRIBE_TIMEOUT_MS))
        return admin.partition_counts(), ""
    except KSparkError as e:
        return {}, f"the broker at {config['bootstrap.servers']} did not answer ({e})"


def describe_plan(topology_text: str, query: QueryPlan, notes: Sequence[str] = ()) -> str:
    """``topology_text`` (``str(Topology.describe())``, Java's text as it is), then
    ``query``'s stages, exchanges, tasks, stores and internal topics; ``notes``: lines under
    "Partition counts:"."""
    text = topology_text if topology_text.endswith("\n") else topology_text + "\n"
    lines = [text + "Spark plan (one streaming query; every micro-batch runs each stage once):"]
    for stage in query.stages:
        lines += _stage_lines(query, stage)
    terminal = ", ".join(str(s.index) for s in query.stages if s.terminal)
    lines.append(f"   Query output: stage {terminal} (a noop sink: the tasks write to Kafka "
                 "themselves)")
    lines += ["Internal topics:", *_internal_topics(query)]
    if query.global_stores:
        lines.append("Global stores (every task reads them, at the offsets of its micro-batch):")
        pinned = (f"pinned by sub-topology {query.pins_globals}'s Kafka source"
                  if query.pins_globals is not None else "not pinned: no Kafka source")
        lines += [f"   {s}: topic {t}, {pinned}" for s, t in query.global_stores.items()]
    if notes:
        lines += ["Partition counts:", *notes]
    return "\n".join(lines) + "\n"


def _stage_lines(query: QueryPlan, stage: Stage) -> list[str]:
    ex = stage.exchange
    if ex is None:
        head = "reads Kafka, no exchange"
    else:
        ups = ", ".join(str(u) for u in ex.upstream) or "none"
        head = (f"exchange of {ex.size} partitions (Spark hash partitioning of shuffle_key), "
                f"fed by stage {ups}")
    out = [f"   Stage {stage.index} ({stage.partitions} Spark tasks): {head}"]
    for m in stage.members:
        out += _member_lines(query, stage, m)
    return out


def _member_lines(query: QueryPlan, stage: Stage, m: Member) -> list[str]:
    i, first = m.sub_topology, query.first_marker[m.sub_topology]
    where = (f"; exchange partitions {m.first}-{m.first + m.tasks - 1}"
             if stage.exchange is not None else "")
    out = [f"    Sub-topology: {i} (tasks {i}_0 to {i}_{m.tasks - 1}{where}; "
           f"progress partitions {first}-{first + m.tasks - 1})"]
    if m.source is not None:
        extra = []
        resets = {t: r for t, r in m.source.resets.items() if t not in m.source.looped}
        if resets:
            extra.append("offset reset: " + ", ".join(f"{t} {r}" for t, r in
                                                      sorted(resets.items())))
        if m.source.global_topics:
            extra.append(f"pins the global topics [{', '.join(m.source.global_topics)}]")
        if m.source.clock_ms:
            extra.append(f"pins a clock every {m.source.clock_ms} ms")
        if m.source.looped:
            extra.append(f"{', '.join(m.source.looped)} closes a cycle: read from Kafka in "
                         "the micro-batch after the one writing it")
        shown = f" ({'; '.join(extra)})" if extra else ""
        out.append(f"      Kafka source: [{', '.join(m.source.topics)}]{shown}")
    if stage.exchange is not None:
        for t in stage.exchange.topics:
            if query.routes.get(t, (0, -1))[1] == m.first:
                out.append(f"      Reads {t} ({query.fed_partitions[t]} partitions) "
                           "through the exchange")
    for t, (n, to_kafka) in m.stage_plan.fed.items():
        if t in query.looped:
            out.append(f"      Writes {t} ({n} partitions) to Kafka, in its transaction")
            continue
        reader = next(s.index for s in query.stages
                      if s.exchange is not None and t in s.exchange.topics)
        kafka = ", also written to Kafka" if to_kafka else ""
        out.append(f"      Writes {t} ({n} partitions) to stage {reader}'s exchange{kafka}")
    out += [f"      Store: {s.name} ({_store_note(s)})" for s in query.stores
            if s.sub_topology == i]
    return out


def _store_note(store: StorePlan) -> str:
    log = f"changelog {store.changelog}" if store.changelog else "not logged"
    return f"one per task; {log}" + (f"; {store.batch}" if store.batch else "")


def _internal_topics(query: QueryPlan) -> list[str]:

    to_kafka = {t: k for m in query.members() for t, (_, k) in m.stage_plan.fed.items()}
    out = []
    for t, n in sorted(query.fed_partitions.items()):
        reader = next(s for s in query.stages if s.exchange is not None and t in s.exchange.topics)
        what = ("a user topic written and read back, also in Kafka" if to_kafka.get(t)
                else "repartition topic, not created in Kafka")
        out.append(f"   {t}: {what}; {n} partitions, carried by stage {reader.index}'s exchange")
    for t, n in sorted(query.looped.items()):
        out.append(f"   {t}: closes a cycle of sub-topologies, read from Kafka; {n} partitions, "
                   "created in Kafka, purged after each micro-batch")
    for s in query.stores:
        if s.changelog:
            out.append(f"   {s.changelog}: changelog of store {s.name}, {s.tasks} partitions, "
                       "compacted")
    return out + _kspark_topics(query)


def _kspark_topics(query: QueryPlan) -> list[str]:
    """kspark's own topics (``_graph/resources.py``), one line each."""
    return [f"   {k.name}: {k.purpose}, {k.partitions} partition{'s' * (k.partitions != 1)}"
            for k in kspark_topics(query.application_id, query.tasks)]
