"""Every name an application owns in Kafka besides its input and output topics, in one list:
the topology's internal topics (changelogs, repartition and foreign-key topics, named as
Kafka Streams names them: ``naming.py``), the Spark sinks' topics, and kspark's own topics
and consumer groups. Topic creation, ``kspark reset``, ``kspark describe`` and the ACL
documentation (``docs/security.md``, checked by a test) read them here.

All of them start with ``<application.id>-``, so Kafka Streams' prefixed ACLs on the
application id cover them.

- :func:`kspark_topics`: kspark's own topics, with partitions, configuration and purpose;
- :func:`kspark_groups`: the consumer groups kspark's clients use;
- :func:`topology_topics`: a topology's internal topics (names only: their partition
  counts come from the plan);
- :func:`is_internal`: whether a topic is one of an application's (what a reset deletes).

Example:
    >>> for t in kspark_topics("orders", tasks=4):
    ...     print(t.name, t.partitions, t.created)
    orders-kspark-progress 4 start
    orders-kspark-control 1 start
    orders-kspark-instance 1 guard
    orders-kspark-metadata 1 batch run
    >>> is_internal("orders", "orders-counts-changelog"), is_internal("orders", "orders")
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["InternalTopic", "kspark_topics", "kspark_groups", "topology_topics", "is_internal",
           "changelog_topic", "progress_topic", "control_topic", "instance_group",
           "metadata_topic", "reader_group", "control_group", "routes_group", "check_group",
           "SPARK_SINK_SUFFIX", "TOPOLOGY_SUFFIXES"]

SPARK_SINK_SUFFIX = "-spark-sink"
# Kafka Streams' internal topics end so (a foreign-key join's in "-topic"), and kspark's
# Spark sinks' topics
TOPOLOGY_SUFFIXES = ("-changelog", "-repartition", "-topic", SPARK_SINK_SUFFIX)
_COMPACT = (("cleanup.policy", "compact"),)


@dataclass(frozen=True)
class InternalTopic:
    """One internal topic: ``partitions`` (None: as the plan gives), ``purpose`` (one line
    for people), ``created`` (when: ``start``, ``guard``, ``batch run``, ``plan``),
    ``config`` (the topic configs kspark sets on creation, as pairs)."""

    name: str
    partitions: int | None
    purpose: str
    created: str = "plan"
    config: tuple[tuple[str, str], ...] = ()


def changelog_topic(app_id: str, store: str) -> str:
    """``<application.id>-<store>-changelog``, as Kafka Streams names it."""
    return f"{app_id}-{store}-changelog"


def progress_topic(app_id: str) -> str:
    """The topic whose partitions (one per task) carry the tasks' markers (no records)."""
    return f"{app_id}-kspark-progress"


def control_topic(app_id: str) -> str:
    """The control topic (one partition): the typed messages of ``_control/messages.py``
    (stop, assignment, task and thread reports) and the query routes."""
    return f"{app_id}-kspark-control"


def instance_group(app_id: str) -> str:
    """The group a running driver is the one member of (and its one-partition topic)."""
    return f"{app_id}-kspark-instance"


def metadata_topic(app_id: str) -> str:
    """The application's metadata topic (one partition, compacted): batch stop offsets."""
    return f"{app_id}-kspark-metadata"


def reader_group(app_id: str) -> str:
    """The group named by the micro-batch range readers (never joined, never committed)."""
    return f"{app_id}-kspark-reader"


def control_group(app_id: str) -> str:
    """The group of the readers of the control topic (they commit nothing)."""
    return f"{app_id}-control"


def routes_group(app_id: str) -> str:
    """The group of the interactive-query routes' reader (it commits nothing)."""
    return f"{app_id}-routes"


def check_group(app_id: str) -> str:
    """The group named by the start-up check of the consumers' settings (never joined)."""
    return f"{app_id}-check"


def kspark_topics(app_id: str, tasks: int | None = None) -> list[InternalTopic]:
    """kspark's own topics of application ``app_id`` with ``tasks`` tasks."""
    return [
        InternalTopic(progress_topic(app_id), tasks,
                      "the tasks' progress markers (one partition per task)", "start"),
        InternalTopic(control_topic(app_id), 1,
                      "stop signals, task reports, query routes", "start"),
        InternalTopic(instance_group(app_id), 1,
                      "marks the one running instance", "guard"),
        InternalTopic(metadata_topic(app_id), 1,
                      "batch runs' stop offsets (autostop.at=eol), compacted", "batch run",
                      _COMPACT),
    ]


def kspark_groups(app_id: str) -> list[tuple[str, str]]:
    """The consumer groups of application ``app_id``, with their purpose."""
    return [
        (app_id, "the input offsets and the tasks' exactly-once markers, as Kafka Streams'"),
        (instance_group(app_id), "the one running instance"),
        (reader_group(app_id), "the micro-batch range readers (never joined)"),
        (control_group(app_id), "the readers of the control topic (commit nothing)"),
        (routes_group(app_id), "the interactive-query routes' reader (commits nothing)"),
        (check_group(app_id), "the start-up check of the consumers' settings (never joined)"),
    ]


def topology_topics(graph: Any, app_id: str) -> list[InternalTopic]:
    """The internal topics of topology ``graph``: each logged store's changelog and each
    repartition or foreign-key topic, in name order."""
    out = [InternalTopic(changelog_topic(app_id, name), None,
                         f"changelog of store {name!r}, compacted")
           for name, (builder, _) in graph.stores.items() if builder.logging_enabled]
    out += [InternalTopic(f"{app_id}-{t}", None,
                          "repartition topic" if t.endswith("-repartition") else
                          "a foreign-key join's topic")
            for t in graph.internal_topics()]
    return sorted(out, key=lambda t: t.name)


def is_internal(app_id: str, topic: str) -> bool:
    """Whether ``topic`` is one of application ``app_id``'s internal topics."""
    if topic in {t.name for t in kspark_topics(app_id)}:
        return True
    return topic.startswith(f"{app_id}-") and topic.endswith(TOPOLOGY_SUFFIXES)
