"""What real-time mode's stream threads run: every task of every sub-topology, and the
repartition topics between them (plain data, no pyspark).

Sub-topologies meet through Kafka topics, as in Kafka Streams: a task writes a repartition
topic (``<application.id>-<name>-repartition``) to the partition the engine computed, and
the reading sub-topology's task ``p`` reads its partition ``p``, with its other inputs.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> from kspark.config import StreamsConfig
    >>> from kspark._plan.plan import plan
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .repartition(name="r").to("out")
    >>> g = b.build()._graph
    >>> p = plan(g, {"in": 2, "out": 2}, StreamsConfig({"application.id": "a",
    ...                                                 "bootstrap.servers": "kafka:9092"}))
    >>> for s in task_specs(p, g):
    ...     print(s.task_id, s.sources, s.purged)
    0_0 (('in', 0),) ()
    1_0 (('a-r-repartition', 0),) ('a-r-repartition',)
    0_1 (('in', 1),) ()
    1_1 (('a-r-repartition', 1),) ('a-r-repartition',)
    >>> repartition_topics(p, g)
    {'a-r-repartition': 2}
"""

from __future__ import annotations

from dataclasses import dataclass

from kspark._graph.graph import TopologyGraph, topic_name
from kspark._graph.subtopology import sub_topologies
from kspark._plan.plan import QueryPlan

__all__ = ["TaskSpec", "task_specs", "repartition_topics"]


@dataclass(frozen=True)
class TaskSpec:
    """One kspark task as a stream thread hosts it (travels by value).

    ``sources``: the topic-partitions it reads (Kafka and repartition topics);
    ``purged``: those of its input topics that are repartition topics (purged after commit).
    """

    sub_topology: int
    partition: int
    sources: tuple[tuple[str, int], ...]
    purged: tuple[str, ...]

    @property
    def task_id(self) -> str:
        return f"{self.sub_topology}_{self.partition}"


def task_specs(plan: QueryPlan, graph: TopologyGraph) -> list[TaskSpec]:
    """Every task of the topology, partition by partition (so that threads taking every
    n-th share the sub-topologies alike)."""
    app_id = plan.application_id
    internal = set(graph.internal_topics())
    counts = {**plan.fed_partitions}
    for m in plan.members():
        counts.update(m.stage_plan.partition_counts)
    tasks = {m.sub_topology: m.tasks for m in plan.members()}
    specs = []
    for st in sub_topologies(graph):
        topics = [*st.user_topics, *(topic_name(t, t in internal, app_id) for t in st.fed_topics)]
        purged = tuple(topic_name(t, True, app_id) for t in st.fed_topics if t in internal)
        for p in range(tasks[st.id]):
            sources = tuple((t, p) for t in topics if p < counts[t])
            specs.append(TaskSpec(st.id, p, sources, purged))
    return sorted(specs, key=lambda s: (s.partition, s.sub_topology))


def repartition_topics(plan: QueryPlan, graph: TopologyGraph) -> dict[str, int]:
    """The repartition topics to create at start, with their partition counts (those Kafka
    Streams would choose: see ``passes.task_counts``)."""
    app_id = plan.application_id
    names = {topic_name(t, True, app_id) for t in graph.internal_topics()}
    return {t: n for t, n in sorted(plan.fed_partitions.items()) if t in names}
