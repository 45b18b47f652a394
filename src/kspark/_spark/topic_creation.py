"""The one path that creates an application's internal topics at start.

The application (the instance topic, before it takes the instance guard) and each
execution mode's driver (its repartition topics, changelogs, Spark sinks' topics, progress
and control topics: ``_plan/internal_topics.py`` lists them) hand their list to
:func:`ensure_internal_topics`, which checks each existing topic's partition count and
creates the missing ones, in order. :func:`create_start_topics` is what a driver does once
planned: the changelog refusals first (:func:`refuse_changelogs`), then the topics.

Example (needs a broker, so not run)::

    ensure_internal_topics(admin, admin.partition_counts(),
                           kspark_topics_at("app", 1, "guard"), replication_factor=-1)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from kspark._engine.state.checkpoint import read_checkpoint
from kspark._graph.naming import legacy_changelogs
from kspark._graph.resources import changelog_topic
from kspark._plan.internal_topics import PlannedTopic, start_topics
from kspark.errors import ChangelogLostError, TopologyError

__all__ = ["ensure_internal_topics", "create_start_topics", "refuse_changelogs"]


class _Admin(Protocol):
    def create_topics(self, topics: Mapping[str, int], config: Mapping[str, str] | None = None,
                      exist_ok: bool = True, replication_factor: int = -1) -> None: ...


def ensure_internal_topics(admin: _Admin, counts: Mapping[str, int],
                           topics: list[PlannedTopic], replication_factor: int) -> None:
    """Each of ``topics`` in turn: refuse it if it exists (in ``counts``) with another
    partition count, else create it (an existing topic is left as is)."""
    for t in topics:
        if t.name in counts and counts[t.name] != t.partitions:
            raise TopologyError(
                f"internal topic {t.name!r} has {counts[t.name]} partitions but there are "
                f"{t.partitions} of {t.purpose}; reset the application (delete its internal "
                "topics and the state directory) or restore the input topics' partition counts")
        admin.create_topics({t.name: t.partitions}, dict(t.config) or None,
                            replication_factor=replication_factor)


def create_start_topics(admin: _Admin, counts: Mapping[str, int], config: Any, graph: Any,
                        plan: Any, repartitions: list[PlannedTopic] | None = None) -> None:
    """What a mode's driver creates once ``plan`` is made (``start_topics``: changelogs,
    Spark sinks' topics, ``repartitions``, progress and control topics), after the
    changelog refusals, before any of them is created."""
    topics = start_topics(graph, plan, config.topic_overrides(), repartitions)
    changelogs = {changelog_topic(config["application.id"], s) for s in graph.stores}
    refuse_changelogs(config, graph.stores, counts,
                      [t.name for t in topics if t.name in changelogs])
    ensure_internal_topics(admin, counts, topics, config["replication.factor"])


def refuse_changelogs(config: Any, stores: Mapping[str, Any], counts: Mapping[str, int],
                      changelogs: list[str]) -> None:
    """Refuse to start over changelogs named by kspark's earlier naming, or when one of
    ``changelogs`` (the logged stores') is missing while local state was checkpointed
    from it."""
    _check_not_renamed(config["application.id"], stores, counts)
    for topic in changelogs:
        if topic not in counts:
            _check_no_local_state_of(config, topic)


def _check_not_renamed(app: str, stores: Mapping[str, Any], counts: Mapping[str, int]) -> None:
    """Refuse to start on changelogs named by kspark's earlier (pre-Java) naming: their
    stores have other names now, so they would start empty over committed offsets."""
    used = {changelog_topic(app, name) for name in stores}
    old = [t for t in legacy_changelogs(app, set(counts)) if t not in used]
    if old:
        raise TopologyError(
            f"application {app!r} has changelog topics named as kspark named generated "
            f"stores before it took Kafka Streams' names: {', '.join(old)}. Its stores "
            "have Java's names now (and their changelogs Java's layout), so they would "
            "start empty while the input offsets stay committed: reset the application "
            "(kspark reset) to reprocess its input; docs/from-java.md, \"Names\"")


def _check_no_local_state_of(config: Any, topic: str) -> None:
    """A missing changelog while local state has a checkpoint of it: refuse (creating
    it empty would make every task wipe its correct state and count from zero)."""
    app_dir = Path(config["state.dir"], config["application.id"])
    for path in sorted(app_dir.glob("*/.checkpoint")):
        if any(t == topic for t, _ in (read_checkpoint(path) or {})):
            raise ChangelogLostError(
                f"changelog topic {topic!r} does not exist, but the local state in "
                f"{path.parent} was checkpointed from it: the topic was deleted, and "
                "recreating it empty would silently lose that state. Either rebuild it "
                "from the local state (kspark changelog rebuild --store <store> ..., see "
                "docs/architecture.md), or reset the application (delete "
                f"{app_dir} and the application's internal topics, then reprocess)")
