"""``kspark reset``: the application reset tool, modelled on Kafka's
``kafka-streams-application-reset``.

A full reset, so that the next start reprocesses its input from scratch:

1. the consumer group ``<application.id>`` is deleted (it holds the input offsets and the
   tasks' exactly-once markers) and the input topics' offsets are committed again at the
   target: ``--to-earliest`` (the default), ``--to-latest`` or ``--to-offset N``. The input
   topics are ``--input-topics``, else every non-internal topic the group has offsets for;
2. the internal topics are deleted: the stores' changelogs (``<id>-*-changelog``),
   ``<id>-*-repartition`` and ``<id>-*-topic`` as in Kafka, the Spark sinks' topics
   (``<id>-*-spark-sink``), and kspark's
   ``<id>-kspark-progress``, ``<id>-kspark-instance``, ``<id>-kspark-metadata`` (the
   stop offsets of incremental batch runs) and ``<id>-kspark-control`` (real-time's stop
   signals, both modes' task reports);
3. the local state directory ``<state-dir>/<application.id>`` is deleted, and with it the
   Spark checkpoint (and the Spark sinks' checkpoints beside it) unless
   ``--checkpoint-location`` puts it elsewhere (a local path only). The sinks' tables are
   left as they are: a reset application writes its output into them again.

``--delete-stopoffsets`` alone does only this: it deletes the stop offsets of the last batch
run (KIP-95), so the next batch run begins anew from the group's offsets.

``--dry-run`` prints the plan and changes nothing. The tool refuses to run while the
application runs: a running application's driver is a member of the consumer group
``<application.id>-kspark-instance`` (see ``_control/instance_guard.py``).

Example:
    >>> is_internal("hourly", "hourly-counts-changelog"), is_internal("hourly", "hourly-in")
    (True, False)
    >>> is_internal("hourly", "hourly-kspark-control")
    True
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from kspark._kafka.admin import Admin
from kspark._graph.resources import instance_group, is_internal, metadata_topic
from kspark._control.instance_guard import InstanceGuard
from kspark._control.stop_offsets import StopOffsets
from kspark.errors import InstanceAlreadyRunningError, KSparkError

__all__ = ["ResetPlan", "plan_reset", "run_reset", "is_internal"]

TP = tuple[str, int]


@dataclass
class ResetPlan:
    """What a reset does; ``describe()`` is what ``--dry-run`` prints."""

    app_id: str
    offsets: dict[TP, int] = field(default_factory=dict)  # input offsets to commit
    delete_group: bool = False
    topics: list[str] = field(default_factory=list)  # internal topics to delete
    paths: list[Path] = field(default_factory=list)  # local directories to delete
    stop_offsets: int = 0  # live records in the metadata topic to tombstone

    def describe(self) -> list[str]:
        lines = []
        if self.delete_group:
            lines.append(f"delete consumer group {self.app_id!r} (input offsets and task markers)")
        for (t, p), o in sorted(self.offsets.items()):
            lines.append(f"commit offset {o} for input topic {t!r} partition {p}")
        lines += [f"delete internal topic {t!r}" for t in self.topics]
        lines += [f"delete local directory {p}" for p in self.paths]
        if self.stop_offsets:
            lines.append(f"delete the stop offsets of the last batch run ({self.stop_offsets} "
                         f"record(s) in {metadata_topic(self.app_id)!r})")
        return lines or ["nothing to reset"]


def plan_reset(admin: Admin, app_id: str, *, input_topics: list[str] | None = None,
               to: str = "earliest", offset: int | None = None, delete_stopoffsets: bool = False,
               state_dir: str | None = None, checkpoint_location: str | None = None
               ) -> ResetPlan:
    """Work out a reset (changes nothing)."""
    plan = ResetPlan(app_id)
    if delete_stopoffsets:
        plan.stop_offsets = len(_stop_offsets(admin, app_id).read().live_keys)
        return plan
    counts = admin.partition_counts()
    committed = admin.group_offsets(app_id)
    plan.delete_group = bool(committed)
    topics = input_topics if input_topics is not None else sorted(
        {t for t, _ in committed if not is_internal(app_id, t)})
    missing = [t for t in topics if t not in counts]
    if missing:
        raise KSparkError(f"input topic(s) {', '.join(map(repr, missing))} not found at "
                          f"{admin.bootstrap}; check --input-topics")
    tps = [(t, p) for t in topics for p in range(counts[t])]
    if to == "offset":
        ends = admin.end_offsets(tps)
        starts = admin.end_offsets(tps, earliest=True)
        plan.offsets = {tp: min(max(offset, starts[tp]), ends[tp]) for tp in tps}
    else:
        plan.offsets = admin.end_offsets(tps, earliest=to == "earliest")
    plan.topics = sorted(t for t in counts if is_internal(app_id, t))
    if state_dir is not None and Path(state_dir, app_id).exists():
        plan.paths.append(Path(state_dir, app_id))
    if checkpoint_location:  # with the Spark sinks' checkpoints beside it
        for location in (checkpoint_location, f"{checkpoint_location.rstrip('/')}-spark-sinks"):
            path = _local_path(location)
            if path.exists() and not any(path.is_relative_to(p) for p in plan.paths):
                plan.paths.append(path)
    return plan


def run_reset(admin: Admin, plan: ResetPlan, out: Callable[[str], None] = print) -> None:
    """Carry out ``plan``, printing each step; refuses while the application runs."""
    _refuse_if_running(admin, plan.app_id)
    if plan.stop_offsets:
        meta = _stop_offsets(admin, plan.app_id)
        meta.delete(meta.read())
    if plan.delete_group:
        admin.delete_group(plan.app_id)
    if plan.offsets:
        admin.commit_group_offsets(plan.app_id, plan.offsets)
    admin.delete_topics(plan.topics)
    for path in plan.paths:
        shutil.rmtree(path)
    for line in plan.describe():
        out(f"kspark reset: done: {line}")


def _refuse_if_running(admin: Admin, app_id: str) -> None:
    members = InstanceGuard(admin.settings, app_id, "", admin.timeout_s).members()
    if members:
        raise InstanceAlreadyRunningError(
            f"application {app_id!r} is running: {', '.join(members)} is a member of consumer "
            f"group {instance_group(app_id)!r}, which every running instance joins. Stop it "
            "first (a killed instance is forgotten after its session timeout, 6 s), then reset")


def _stop_offsets(admin: Admin, app_id: str) -> StopOffsets:
    return StopOffsets(admin.settings, app_id, int(admin.timeout_s * 1000))


def _local_path(location: str) -> Path:
    url = urlparse(location)
    if url.scheme not in ("", "file"):
        raise KSparkError(f"--checkpoint-location {location!r} is not a local path; delete it "
                          "with your storage's tools and pass the reset no --checkpoint-location")
    return Path(url.path if url.scheme else location)
