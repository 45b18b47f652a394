"""Ask every executor what state its disk holds: one small task placed on each.

Both execution modes place a task (micro-batch) or a stream thread (real time) on the
executor whose ``state.dir`` holds its stores; what each disk holds is asked with
:func:`probe_state` when the set of executors changes (micro-batch) or before the stream
threads start (real time, while every task slot is free).

Example (needs Spark, so not run)::

    disks, held, tags = probe_state(spark, {"0": "executor_h_0", "1": "executor_h_1"},
                                    "app", "kspark-state", ["0_0", "0_1"])
    # disks: {"0": "h:/work/0/kspark-state", ...}; held: {"0": {"0_0": 42}, "1": {}}
    # tags: {"0": {"KSPARK_CLIENT_TAG_ZONE": "a"}, "1": {}} (the client-tag variables)
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from kspark._plan.racks import missing_tags, tag_env_name, tags_by_executor
from kspark._spark.located import located
from kspark._host.state import state_location
from kspark._plan.placement import held_state
from kspark._plan.racks import TAG_ENV_PREFIX

__all__ = ["probe_state", "client_tags"]

log = logging.getLogger("kspark")
_ATTEMPTS = 3  # probes of one executor set, while two executors answer from one disk


def probe_state(spark: SparkSession, executors: Mapping[str, str], app_id: str,
                state_dir: str, tasks: list[str]
                ) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, dict[str, str]]]:
    """Per executor id (``executors``: id -> location string), where its ``state.dir`` is
    (``host:path``), how much of each of ``tasks``' state it holds (see
    ``placement.held_state``) and its client-tag environment variables (``racks.py``)."""
    ids = sorted(executors)

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tags = {k: v for k, v in os.environ.items() if k.startswith(TAG_ENV_PREFIX)}
        for b in batches:
            for i in b.column(0).to_pylist():
                yield pa.RecordBatch.from_pylist(
                    [{"i": i, "disk": state_location(state_dir),
                      "held": json.dumps(held_state(state_dir, app_id, tasks)),
                      "tags": json.dumps(tags)}])

    for _attempt in range(_ATTEMPTS):
        df = located(spark, spark.range(0, len(ids), 1, len(ids)), [[executors[e]] for e in ids])
        disks: dict[str, str] = dict.fromkeys(ids, "")
        held: dict[str, dict[str, int]] = {}
        tags: dict[str, dict[str, str]] = {}
        for r in df.mapInArrow(probe, "i long, disk string, held string, tags string").collect():
            disks[ids[r.i]] = r.disk
            held[ids[r.i]] = json.loads(r.held)
            tags[ids[r.i]] = json.loads(r.tags)
        if len(set(disks.values())) == len(ids):
            break  # each executor answered for itself
        # two answers from one disk: a partition ran elsewhere than placed (an executor
        # busy or just lost), or executors share a disk; ask again to tell
    return disks, held, tags


def client_tags(app_id: str, config: Mapping[str, Any],
                environs: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """Per executor id, its client tags (``racks.py``) from its probed ``environs``; logged,
    with a warning naming each executor and the variable it lacks (its copies are then
    placed as if it had no value for that tag)."""
    tags = tags_by_executor(config, environs)
    if tags:
        log.info("application %r: executors' client tags %s", app_id, tags)
    for e, keys in missing_tags(config, tags).items():
        log.warning("application %r: executor %s has no value for client tag(s) %s: set %s "
                    "in its environment (or client.tag.<key> for every executor) for "
                    "rack-aware standby placement", app_id, e, keys,
                    ", ".join(tag_env_name(k) for k in keys))
    return tags
