"""The internal topics an application creates when it starts, as data (no Kafka client).

Each is a :class:`PlannedTopic`: its name (``_graph/resources.py``'s, as Kafka Streams
names it), its partition count (one per task of whatever fills it), what those partitions
count (named in the error when an existing topic has another count) and the topic configs
it is created with. ``_spark/topic_creation.py`` creates a list of them, one check and one
``create_topics`` call per topic, in the list's order.

- :func:`changelog_topics`: one compacted changelog per logged store, as Kafka Streams
  configures it (``changelog_config``), one partition per task of the store;
- :func:`kspark_topics_at`: kspark's own topics made at a step of the start (``start``:
  progress and control topics; ``guard``: the instance topic);
- :func:`repartition_topics_of`: an execution mode's repartition topics (each mode computes
  which: micro-batch mode's ``QueryPlan.looped``, real-time mode's ``layout.py``),
  configured as Kafka Streams' repartition topics (:data:`REPARTITION_TOPIC_CONFIG`);
- :func:`spark_sink_topics`: each Spark sink's topic, configured as a repartition topic;
- :func:`start_topics`: what a mode's driver creates once planned, in today's order.

Example:
    >>> from kspark import Materialized, Serdes, StreamsBuilder
    >>> b = StreamsBuilder()
    >>> counts = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .group_by_key().count(Materialized.as_("counts"))
    >>> graph = b.build()._graph
    >>> [(t.name, t.partitions, dict(t.config)["cleanup.policy"])
    ...  for t in changelog_topics("app", graph.stores, {"counts": 3}, {})]
    [('app-counts-changelog', 3, 'compact')]
    >>> [(t.name, t.partitions) for t in kspark_topics_at("app", 4, "start")]
    [('app-kspark-progress', 4), ('app-kspark-control', 1)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kspark._engine.state.build import changelog_config
from kspark._graph.resources import changelog_topic, kspark_topics

__all__ = ["PlannedTopic", "REPARTITION_TOPIC_CONFIG", "changelog_topics", "kspark_topics_at",
           "repartition_topics_of", "spark_sink_topic", "spark_sink_topics", "start_topics"]

# Kafka Streams' RepartitionTopicConfig defaults: records are purged by the application
# after commit (delete-records), never by retention.
REPARTITION_TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1",
                            "segment.bytes": "52428800"}


@dataclass(frozen=True)
class PlannedTopic:
    """An internal topic to create (or to find with ``partitions`` partitions).

    ``purpose``: what its partitions count, as the partition-count error names it ("there
    are 3 of store 'counts''s tasks"); ``config``: its topic configs, as pairs.

    >>> PlannedTopic("a-r-repartition", 2, "its readers' tasks").config
    ()
    """

    name: str
    partitions: int
    purpose: str
    config: tuple[tuple[str, str], ...] = ()


def changelog_topics(app_id: str, stores: Mapping[str, Any], store_tasks: Mapping[str, int],
                     overrides: Mapping[str, str]) -> list[PlannedTopic]:
    """A changelog per logged store of ``store_tasks`` (store -> its tasks), one partition
    per task, configured as Kafka Streams configures it (``changelog_config`` with the
    ``topic.*`` ``overrides``); ``stores``: the graph's (name -> (builder, processors)).
    An unlogged store has none."""
    out = []
    for name, n in store_tasks.items():
        builder = stores[name][0]
        if builder.logging_enabled:
            out.append(PlannedTopic(changelog_topic(app_id, name), n, f"store {name!r}'s tasks",
                                    tuple(changelog_config(builder, overrides).items())))
    return out


def kspark_topics_at(app_id: str, tasks: int, when: str) -> list[PlannedTopic]:
    """kspark's own topics made at step ``when`` of the start (``_graph/resources.py``):
    at ``start`` the progress topic (one partition per task) and the control topic, at
    ``guard`` the instance topic."""
    return [PlannedTopic(t.name, t.partitions or tasks, t.purpose, t.config)
            for t in kspark_topics(app_id, tasks) if t.created == when]


def repartition_topics_of(partitions: Mapping[str, int], purpose: str,
                       overrides: Mapping[str, str]) -> list[PlannedTopic]:
    """The topics of ``partitions`` (topic -> partitions: an execution mode's repartition
    topics), configured as Kafka Streams' repartition topics, then ``overrides``.

    >>> [t] = repartition_topics_of({"a-r-repartition": 2}, "its readers' tasks", {})
    >>> t.partitions, dict(t.config)["cleanup.policy"]
    (2, 'delete')
    """
    config = tuple({**REPARTITION_TOPIC_CONFIG, **overrides}.items())
    return [PlannedTopic(topic, n, purpose, config) for topic, n in partitions.items()]


def spark_sink_topic(app_id: str, spec: Any) -> str:
    """The topic of Spark sink ``spec`` (a ``SparkSinkSpec``): ``<application.id>-<topic>``."""
    return f"{app_id}-{spec.topic}"


def spark_sink_topics(app_id: str, sinks: Mapping[str, Any], plan: Any,
                      overrides: Mapping[str, str]) -> list[PlannedTopic]:
    """Each Spark sink's topic (``sinks``: the graph's, name -> spec), one partition per task
    of the sub-topology writing it (in ``plan``, a ``QueryPlan``), configured as a
    repartition topic (purged as the sink commits)."""
    tasks = {n: m.tasks for m in plan.members() for n in m.stage_plan.nodes}
    return [t for name, spec in sinks.items()
            for t in repartition_topics_of({spark_sink_topic(app_id, spec): tasks[name]},
                                        f"the tasks writing Spark sink {name!r}", overrides)]


def start_topics(graph: Any, plan: Any, overrides: Mapping[str, str],
                 repartitions: list[PlannedTopic] | None = None) -> list[PlannedTopic]:
    """What a mode's driver creates once its ``plan`` (a ``QueryPlan`` of ``graph``) is made,
    in the order of creation: the changelogs, the Spark sinks' topics, the mode's
    ``repartitions`` (real-time mode's; micro-batch mode creates its own before planning),
    then kspark's progress and control topics."""
    app_id = plan.application_id
    return [*changelog_topics(app_id, graph.stores, plan.store_tasks, overrides),
            *spark_sink_topics(app_id, graph.spark_sinks, plan, overrides),
            *(repartitions or []),
            *kspark_topics_at(app_id, plan.tasks, "start")]
