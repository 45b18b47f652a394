"""``kspark reset``: the application reset tool, modelled on Kafka's
``kafka-streams-application-reset``.

A full reset, so that the next start reprocesses its input:

1. the consumer group ``<application.id>`` is deleted (it holds the input offsets and the
   tasks' exactly-once markers) and the input topics' offsets are committed again where one
   offset-reset option says (``reset_plan.py``): ``--to-earliest`` (the default),
   ``--to-latest``, ``--to-offset N``, ``--shift-by N``, ``--to-datetime T``,
   ``--by-duration D`` or ``--from-file F``. The input topics are ``--input-topics``, else
   the topics of ``--from-file``, else every non-internal topic the group has offsets for;
2. the internal topics are deleted (``--internal-topics``: only those named, each one of
   them): the stores' changelogs (``<id>-*-changelog``), ``<id>-*-repartition`` and
   ``<id>-*-topic`` as in Kafka, the Spark sinks' topics (``<id>-*-spark-sink``), and
   kspark's ``<id>-kspark-progress``, ``<id>-kspark-instance``, ``<id>-kspark-metadata`` (the
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
``<application.id>-kspark-instance`` (see ``_control/instance_guard.py``), and a member of
the group ``<application.id>`` (a consumer of another tool, or of a Java instance) would
commit over the reset. ``--force`` removes the members of both groups first, as Java's
``--force``, but never an instance running on this host, and then checks that none joins
again within ``REJOIN_CHECK_S`` (a live member does, at its next heartbeat): if one does, the
application is running, and nothing is reset.

Example:
    >>> is_internal("hourly", "hourly-counts-changelog"), is_internal("hourly", "hourly-in")
    (True, False)
    >>> is_internal("hourly", "hourly-kspark-control")
    True
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from kspark._kafka.admin import Admin
from kspark._kafka.admin_groups import GroupMember
from kspark._graph.resources import instance_group, is_internal, metadata_topic
from kspark._control.instance_guard import SESSION_TIMEOUT_MS, InstanceGuard
from kspark._control.reset_plan import Scenario, plan_offsets
from kspark._control.stop_offsets import StopOffsets
from kspark.errors import InstanceAlreadyRunningError, KSparkError

__all__ = ["ResetPlan", "plan_reset", "run_reset", "is_internal", "REJOIN_CHECK_S"]

TP = tuple[str, int]

# After --force removed the groups' members: how long a live one has to join again (a
# running driver's instance member heartbeats every second and rejoins at once).
REJOIN_CHECK_S = 3.0


@dataclass
class ResetPlan:
    """What a reset does; ``describe()`` is what ``--dry-run`` prints."""

    app_id: str
    offsets: dict[TP, int] = field(default_factory=dict)  # input offsets to commit
    current: dict[TP, int] = field(default_factory=dict)  # the group's committed offsets
    notes: dict[TP, str] = field(default_factory=dict)  # why an offset is not as asked
    scenario: str = "--to-earliest"
    delete_group: bool = False
    topics: list[str] = field(default_factory=list)  # internal topics to delete
    paths: list[Path] = field(default_factory=list)  # local directories to delete
    stop_offsets: int = 0  # live records in the metadata topic to tombstone
    members: dict[str, list[GroupMember]] = field(default_factory=dict)  # by group
    force: bool = False

    def describe(self) -> list[str]:
        lines = []
        for group, members in self.members.items():
            lines += [f"remove member {m} from consumer group {group!r} (--force)"
                      if self.force else f"refuse to reset: {m} is a member of consumer group "
                      f"{group!r} (stop the application, or give --force if it is stopped)"
                      for m in members]
        if self.delete_group:
            lines.append(f"delete consumer group {self.app_id!r} (input offsets and task markers)")
        for (t, p), o in sorted(self.offsets.items()):
            now = self.current.get((t, p))
            why = f"; {self.notes[(t, p)]}" if (t, p) in self.notes else ""
            lines.append(f"commit offset {o} for input topic {t!r} partition {p} (committed now: "
                         f"{'none' if now is None else now}; {self.scenario}{why})")
        lines += [f"delete internal topic {t!r}" for t in self.topics]
        lines += [f"delete local directory {p}" for p in self.paths]
        if self.stop_offsets:
            lines.append(f"delete the stop offsets of the last batch run ({self.stop_offsets} "
                         f"record(s) in {metadata_topic(self.app_id)!r})")
        return lines or ["nothing to reset"]


def plan_reset(admin: Admin, app_id: str, *, input_topics: list[str] | None = None,
               scenario: Scenario | None = None, internal_topics: list[str] | None = None,
               delete_stopoffsets: bool = False, state_dir: str | None = None,
               checkpoint_location: str | None = None, start_at: str = "earliest",
               force: bool = False) -> ResetPlan:
    """Work out a reset (changes nothing). ``start_at``: where the application starts a
    partition without a committed offset (its ``auto.offset.reset``), for ``--shift-by``."""
    scenario = scenario or Scenario()
    plan = ResetPlan(app_id, scenario=scenario.option, force=force)
    plan.members = {g: m for g in (instance_group(app_id), app_id)
                    if (m := admin.group_members(g)[0])}
    if delete_stopoffsets:
        plan.stop_offsets = len(_stop_offsets(admin, app_id).read().live_keys)
        return plan
    counts = admin.partition_counts()
    plan.current = admin.group_offsets(app_id)
    plan.delete_group = bool(plan.current)
    topics = _input_topics(app_id, input_topics, scenario, plan.current)
    missing = [t for t in topics if t not in counts]
    if missing:
        raise KSparkError(f"input topic(s) {', '.join(map(repr, missing))} not found at "
                          f"{admin.bootstrap}; check --input-topics")
    tps = [(t, p) for t in topics for p in range(counts[t])]
    _check_file(scenario, tps, topics)
    by_time = (admin.offsets_for_time(tps, scenario.value)
               if scenario.kind in ("datetime", "duration") and tps else None)
    plan.offsets, plan.notes = plan_offsets(
        tps, scenario, current=plan.current, earliest=admin.end_offsets(tps, earliest=True),
        latest=admin.end_offsets(tps), by_time=by_time, start_at=start_at)
    plan.topics = _internal_topics(admin, app_id, counts, topics, internal_topics)
    if state_dir is not None and Path(state_dir, app_id).exists():
        plan.paths.append(Path(state_dir, app_id))
    if checkpoint_location:  # with the Spark sinks' checkpoints beside it
        for location in (checkpoint_location, f"{checkpoint_location.rstrip('/')}-spark-sinks"):
            path = _local_path(location)
            if path.exists() and not any(path.is_relative_to(p) for p in plan.paths):
                plan.paths.append(path)
    return plan


def _input_topics(app_id: str, given: list[str] | None, scenario: Scenario,
                  committed: dict[TP, int]) -> list[str]:
    if given is not None:
        return given
    if scenario.kind == "file":
        return sorted({t for t, _ in scenario.value})
    return sorted({t for t, _ in committed if not is_internal(app_id, t)})


def _check_file(scenario: Scenario, tps: list[TP], topics: list[str]) -> None:
    """Every input partition has a line in ``--from-file``, and every line is of one."""
    if scenario.kind != "file":
        return
    for tp, line in sorted(scenario.lines.items(), key=lambda kv: kv[1]):
        if tp not in tps:
            why = "no such partition" if tp[0] in topics else "not in --input-topics"
            raise KSparkError(f"{scenario.option} line {line}: topic {tp[0]!r} partition "
                              f"{tp[1]} is not an input partition ({why}): fix the line, or "
                              "--input-topics")
    for t, p in tps:
        if (t, p) not in scenario.value:
            raise KSparkError(f"{scenario.option} has no line for input topic {t!r} partition "
                              f"{p}: add '{t},{p},OFFSET', or leave {t!r} out of --input-topics")


def _internal_topics(admin: Admin, app_id: str, counts: dict[str, int], inputs: list[str],
                     chosen: list[str] | None) -> list[str]:
    """The internal topics to delete: all (an input topic named like one is not, as Java's
    KAFKA-7930), or ``--internal-topics``, each of which must be one of them."""
    inferred = sorted(t for t in counts if is_internal(app_id, t) and t not in inputs)
    if chosen is None:
        return inferred
    wrong = [t for t in chosen if t not in inferred]
    if wrong:
        raise KSparkError(
            f"--internal-topics: {', '.join(map(repr, wrong))} is not an internal topic of "
            f"application {app_id!r} at {admin.bootstrap}; run the reset with --dry-run and "
            "without --internal-topics to list them")
    return sorted(set(chosen))


def run_reset(admin: Admin, plan: ResetPlan, out: Callable[[str], None] = print) -> None:
    """Carry out ``plan``, printing each step; refuses while the application runs (with
    ``plan.force``: removes the groups' members first, unless they are alive)."""
    _clear_members(admin, plan, out)
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
        if not line.startswith("remove member"):
            out(f"kspark reset: done: {line}")


def _clear_members(admin: Admin, plan: ResetPlan, out: Callable[[str], None]) -> None:
    """Refuse while the application's groups have members; with ``--force`` remove them
    (Java's ``removeMembersFromConsumerGroup``) unless one is an instance alive on this host,
    then refuse if one joins again: that one is running."""
    app_id, instances = plan.app_id, instance_group(plan.app_id)
    members = {g: m for g in (instances, app_id) if (m := admin.group_members(g)[0])}
    if not members:
        return
    names = [f"{m.client_id} (host {m.host})" for m in members.get(instances, [])]
    if names and (not plan.force or InstanceGuard(admin.settings, app_id, "", admin.timeout_s)
                  .running_here(names)):
        raise InstanceAlreadyRunningError(
            f"application {app_id!r} is running: {', '.join(names)} is a member of consumer "
            f"group {instances!r}, which every running instance joins. Stop it first (a killed "
            f"instance is forgotten after its session timeout, {SESSION_TIMEOUT_MS // 1000} s), "
            "then reset" + (" (--force never removes an instance alive on this host)"
                            if plan.force else "; --force removes a stopped one at once"))
    if not plan.force:
        raise KSparkError(
            f"consumer group {app_id!r} is still active: {', '.join(map(str, members[app_id]))} "
            "is a member. Stop every instance of the application and every consumer of the "
            "group, then reset; --force removes members that are stopped at once")
    for group, gone in members.items():
        admin.remove_group_members(group, gone)
        for member in gone:
            out(f"kspark reset: done: remove member {member} from consumer group {group!r} "
                "(--force)")
    time.sleep(REJOIN_CHECK_S)
    back = {g: m for g in members if (m := admin.group_members(g)[0])}
    if back:
        group, again = next(iter(back.items()))
        raise InstanceAlreadyRunningError(
            f"application {app_id!r} is running: {', '.join(map(str, again))} joined consumer "
            f"group {group!r} again within {REJOIN_CHECK_S:g} s of --force removing its members. "
            "Nothing was reset; stop the application (or that consumer) first")


def _stop_offsets(admin: Admin, app_id: str) -> StopOffsets:
    return StopOffsets(admin.settings, app_id, int(admin.timeout_s * 1000))


def _local_path(location: str) -> Path:
    url = urlparse(location)
    if url.scheme not in ("", "file"):
        raise KSparkError(f"--checkpoint-location {location!r} is not a local path; delete it "
                          "with your storage's tools and pass the reset no --checkpoint-location")
    return Path(url.path if url.scheme else location)
