"""What every task of one sub-topology shares, made once on the driver and sent by value.

A :class:`HostContext` carries the topology, the application's config, the sub-topology's
plan, the test hooks and what is derived from them once (the client settings, parsed
once; the guarantee; the store builders; every key the host reads, typed), so no worker
parses the config again or restates a default. The engine's own task still gets the config
(its handlers and serdes read it, as Kafka Streams' ``ProcessorContext.appConfigs()``). Both
execution modes hand it to :class:`~kspark._host.task.HostedTask`.
"""

from __future__ import annotations

from typing import Any

from kspark._engine.state.build import changelog_topic
from kspark._graph.graph import TopologyGraph
from kspark._host.hooks import TaskHooks, installed_task_hooks
from kspark._kafka.settings import as_settings
from kspark.config import EXACTLY_ONCE_V2, checkpoint_location

__all__ = ["HostContext"]


class HostContext:
    """What every task of one sub-topology shares; travels to the workers by value.

    ``plan``: the sub-topology's ``StagePlan`` (its nodes, fed topics, partition counts and
    first marker partition); ``hooks``: a test's, by default those installed in the
    (driver) process making the context (``hooks.install_task_hooks``)."""

    def __init__(self, graph: TopologyGraph, config: dict[str, Any], plan: Any,
                 hooks: TaskHooks | None = None):
        self.graph, self.config, self.plan = graph, config, plan
        self.hooks = hooks if hooks is not None else installed_task_hooks()
        self.settings = as_settings(config)  # every client's settings (security included)
        self.app_id = config["application.id"]
        self.eos = config["processing.guarantee"] == EXACTLY_ONCE_V2
        self.builders = {name: b for name, (b, _) in graph.stores.items()}
        self.changelogs = frozenset(changelog_topic(self.app_id, name)
                                    for name, b in self.builders.items() if b.logging_enabled)
        # Under exactly-once a refused delivery aborts the transaction: it always fails the task.
        self.skip_failed = config["production.exception.handler"] == "log_and_continue"
        self.read_timeout_ms = int(config["source.read.timeout.ms"])
        self.request_timeout_ms = int(config["request.timeout.ms"])
        self.delays = bool(graph.delayed_stores())
        self.checkpoint = checkpoint_location(config)
        self.state_dir = str(config["state.dir"])
        self.max_task_idle_ms = int(config["max.task.idle.ms"])
        self.query_enabled = bool(config["query.endpoint.enabled"])
        self.query_host = str(config["query.endpoint.host"])
        self.standbys = int(config.get("num.standby.replicas", 0)) > 0

    def admin(self) -> Any:
        """This worker's admin client of the cluster (made once per process)."""
        from kspark._host.restore import admin_for

        return admin_for(self.settings, self.request_timeout_ms)
