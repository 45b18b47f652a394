"""Global stores on Spark: one copy per Python worker process, brought to the offsets the
micro-batch pinned before its task processes anything (design brief, 7).

The source records the global topics' end offsets with every micro-batch in Spark's offset
log, and its task markers hand them to the tasks (``source.py``), so every task of a batch,
and any replay of it, sees the global stores at the same offsets. A worker applies the
records between its copy's offsets and the pinned ones; a copy ahead of them (a replayed
older batch) is rebuilt up to them.

Persistent global stores live under ``<state.dir>/<application.id>/global/<n>``, one
directory per worker process, each with a ``.checkpoint`` of its offsets and the topics'
ids. A new worker (after a restart too) adopts a directory no live process holds and
resumes from its checkpoint instead of reading the whole topic again. In-memory global
stores are read from the topic by every new worker.

KIP-406: a copy whose offsets are invalid (below the topic's earliest offset after records
were deleted, or of a topic deleted and created again: its id changed) is wiped and rebuilt
from the earliest offset, or from the pinned end with ``offset_reset="latest"`` (default:
``global.consumer.auto.offset.reset``), with a warning naming the store, topic and offsets.
The query goes on. These decisions are the engine's (``_engine/state/global_recovery.py``);
this module keeps the worker's copy, its directory and checkpoint.

Example (inside a task, so not run)::

    state = global_state(graph, config, {"countries": {"0": 120}})
    task = build_task(..., global_stores=state.read_only())
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kspark._engine.global_task import GlobalStateTask, global_store_dir
from kspark._engine.state.global_recovery import GlobalPins, catch_up_globals, global_reset_policy
from kspark._graph.graph import TopologyGraph
from kspark._plan.plan import local_checkpoint
from kspark._graph.instantiate import build_global_task
from kspark._kafka.changelog_reader import KafkaChangelogReader
from kspark._kafka.clients import read_range
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._spark.documents import check_global_checkpoint, read_offset_log
from kspark._worker import registry
from kspark.errors import StateStoreError

__all__ = ["global_state", "GlobalPins", "pins_from_offset_log", "local_checkpoint"]

log = logging.getLogger("kspark")
_CHECKPOINT = ".checkpoint"

def global_state(graph: TopologyGraph, config: Mapping[str, Any], pins: GlobalPins,
                 settings: ClientSettings | None = None) -> GlobalStateTask:
    """This process's global stores, brought to ``pins`` (``settings``: the cluster's client
    settings, if parsed already)."""
    app_id = config["application.id"]  # one global state per application in this worker
    state, directory = registry().get("globals", (app_id,), lambda: _open(graph, config))
    if _catch_up(state, graph, config, pins, settings) and directory is not None:
        state.flush()
        _write_checkpoint(directory, state)
    return state


def pins_from_offset_log(location: str, batch: int, topics: list[str]) -> GlobalPins | None:
    """The global topics' offsets micro-batch ``batch`` pinned, read from Spark's offset log
    (written before the batch runs): for tasks of a source that does not pin them (a
    topology reading Kafka in several sub-topologies). None if the log has no such batch."""
    directory = local_checkpoint(location)
    path = None if directory is None else directory / "offsets" / str(batch)
    if path is None or not path.exists():
        return None
    offsets = read_offset_log(path.read_text(errors="replace"), str(path))
    pins: GlobalPins = {t: offsets[t] for t in topics if t in offsets}
    return pins if set(pins) == set(topics) else None


def _open(graph: TopologyGraph, config: Mapping[str, Any]) -> tuple[GlobalStateTask, Path | None]:
    """A new global state: persistent stores adopt a free directory and its checkpoint."""
    persistent = any(g.builder.supplier.persistent for g in graph.global_stores.values())
    if not persistent:
        return build_global_task(graph, config), None
    root = global_store_dir(config["state.dir"], config["application.id"])
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1024):
        directory = root / str(n)
        try:
            state = build_global_task(graph, config, directory)
        except StateStoreError:
            continue  # another live worker holds this copy
        saved = _read_checkpoint(directory)
        # only persistent stores kept their contents: an in-memory one is read again
        kept = {g.source.topics[0] for g in graph.global_stores.values()
                if g.builder.supplier.persistent}
        state.offsets = {tp: o for tp, o in saved.get("offsets", {}).items() if tp[0] in kept}
        state.topic_ids = {t: i for t, i in saved.get("topic_ids", {}).items() if t in kept}
        if state.offsets:
            log.info("global stores of %r: worker %d resumes the copy in %s at %s",
                     config["application.id"], os.getpid(), directory, state.offsets)
        return state, directory
    raise StateStoreError(f"no free directory for global stores under {root}")


def _catch_up(state: GlobalStateTask, graph: TopologyGraph, config: Mapping[str, Any],
              pins: GlobalPins, settings: ClientSettings | None = None) -> bool:
    """Apply each pinned topic's records up to its pin; True if anything changed. The
    engine decides what is kept or rebuilt (``_engine/state/global_recovery.py``)."""
    from kspark._host.restore import admin_for

    if not pins:
        return False
    settings = settings or as_settings(config)
    reader = KafkaChangelogReader(admin_for(settings, config["request.timeout.ms"]), settings,
                                  int(config["source.read.timeout.ms"]), read=read_range)
    return catch_up_globals(state, reader, pins, lambda t: _reset_policy(graph, config, t))


def _reset_policy(graph: TopologyGraph, config: Mapping[str, Any], topic: str) -> str:
    """The topic's ``offset_reset``, else ``global.consumer.auto.offset.reset``."""
    offset_reset = next((g.source.offset_reset for g in graph.global_stores.values()
                         if g.source.topics[0] == topic and g.source.offset_reset), None)
    return global_reset_policy(offset_reset, config.get("global.consumer.auto.offset.reset"))


def _read_checkpoint(directory: Path) -> dict[str, Any]:
    path = directory / _CHECKPOINT
    if not path.exists():
        return {}
    saved = check_global_checkpoint(path.read_text(errors="replace"), str(path))
    return {"offsets": {(t, int(p)): o for t, parts in saved["offsets"].items()
                        for p, o in parts.items()},
            "topic_ids": saved.get("topic_ids", {})}


def _write_checkpoint(directory: Path, state: GlobalStateTask) -> None:
    offsets: dict[str, dict[str, int]] = {}
    for (t, p), o in state.offsets.items():
        offsets.setdefault(t, {})[str(p)] = o
    tmp = directory / f"{_CHECKPOINT}.tmp"
    tmp.write_text(json.dumps({"offsets": offsets, "topic_ids": state.topic_ids}))
    tmp.replace(directory / _CHECKPOINT)
