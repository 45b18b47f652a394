"""Ask every executor what state its disk holds: one small task placed on each.

Both execution modes place a task (micro-batch) or a stream thread (real time) on the
executor whose ``state.dir`` holds its stores; what each disk holds is asked with
:func:`probe_state` when the set of executors changes (micro-batch) or before the stream
threads start (real time, while every task slot is free).

Example (needs Spark, so not run)::

    disks, held = probe_state(spark, {"0": "executor_h_0", "1": "executor_h_1"},
                              "app", "kspark-state", ["0_0", "0_1"])
    # disks: {"0": "h:/work/0/kspark-state", ...}; held: {"0": {"0_0": 42}, "1": {}}
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql import SparkSession

from kspark._spark.located import located

__all__ = ["probe_state"]


def probe_state(spark: SparkSession, executors: Mapping[str, str], app_id: str,
                state_dir: str, tasks: list[str]
                ) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Per executor id (``executors``: id -> location string), where its ``state.dir`` is
    (``host:path``) and how much of each of ``tasks``' state it holds (see
    ``placement.held_state``)."""
    ids = sorted(executors)

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from kspark._host.state import state_location
        from kspark._plan.placement import held_state

        for b in batches:
            for i in b.column(0).to_pylist():
                yield pa.RecordBatch.from_pylist(
                    [{"i": i, "disk": state_location(state_dir),
                      "held": json.dumps(held_state(state_dir, app_id, tasks))}])

    df = located(spark, spark.range(0, len(ids), 1, len(ids)), [[executors[e]] for e in ids])
    disks: dict[str, str] = dict.fromkeys(ids, "")
    held: dict[str, dict[str, int]] = {}
    for r in df.mapInArrow(probe, "i long, disk string, held string").collect():
        disks[ids[r.i]] = r.disk
        held[ids[r.i]] = json.loads(r.held)
    return disks, held
