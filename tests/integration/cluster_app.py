"""A stateful kspark app on Spark local-cluster (separate executor processes), run as a script.

Used by test_cluster_failover.py: ``python -m tests.integration.cluster_app BOOTSTRAP SRC DST
APP_ID STATE_DIR [CHECKPOINT [HOLD_DIR]]``. Prints ``batches N`` as micro-batches complete;
exits 0 when the input is consumed.

``HOLD_DIR``: the task that counts key ``k0`` to ``HOLD_AT`` (in the third micro-batch or
later: 100 records per partition and micro-batch) writes ``HOLD_DIR/held`` (JSON: its pid)
and waits until ``HOLD_DIR/release`` exists (at most 10 minutes); a retry of it passes. So a
test sees a file, not a moment, when an executor is processing a batch.
"""

from __future__ import annotations

import json
import os
import sys
import time

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from kspark.processor import Processor
from kspark.state import Stores
from tests.integration.eos_app import run_printing_batches

S, L = Serdes.String(), Serdes.Long()
HOLD_AT = 40


class SlowCounter(Processor):
    """Counts per key; a little slow, so a batch is long enough to be interrupted."""

    def __init__(self, hold_dir: str | None = None):
        self.hold_dir = hold_dir

    def init(self, context):
        self.context = context
        self.store = context.get_state_store("counts")

    def process(self, record):
        time.sleep(0.004)
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        if self.hold_dir and record.key == "k0" and n == HOLD_AT:
            self._hold()
        self.context.forward(record.with_value(n))

    def _hold(self) -> None:
        marker = os.path.join(self.hold_dir, "held")
        release = os.path.join(self.hold_dir, "release")
        tmp = f"{marker}.{os.getpid()}.{time.monotonic_ns()}"
        with open(tmp, "w") as f:
            json.dump({"pid": os.getpid()}, f)
        try:
            os.link(tmp, marker)  # atomic, and once: a retry of the held record passes
        except FileExistsError:
            return
        finally:
            os.unlink(tmp)
        deadline = time.monotonic() + 600
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.1)


def topology(src: str, dst: str, hold_dir: str | None = None):
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store("counts"), S, L))
    b.stream(src, key_serde=S, value_serde=S).process(
        lambda: SlowCounter(hold_dir), "counts").to(
        dst, key_serde=S, value_serde=L)
    return b.build()


def main(bootstrap: str, src: str, dst: str, app_id: str, state_dir: str,
         checkpoint: str | None = None, hold_dir: str | None = None) -> int:
    spark = spark_session({"spark.master": "local-cluster[2,1,1024]", "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8"})
    streams = KafkaStreams(topology(src, dst, hold_dir), {
        "application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
        "autostop.at": "eol", "execution.mode": "micro_batch", "max.offsets.per.trigger": 200,
        "placement.replacement.wait.ms": 2000,  # exactness is checked here, not placement
        **({"checkpoint.location": checkpoint} if checkpoint else {})}, spark=spark)
    streams.start()
    run_printing_batches(streams)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:8]))
