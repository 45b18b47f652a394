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

import os
import sys
import time

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.processor import Processor
from kspark.state import Stores
from tests.integration.app_base import (base_config, end, hold_once, local_session,
                                        run_printing_batches)

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
            hold_once(self.hold_dir, {"pid": os.getpid()})  # a retry of it passes
        self.context.forward(record.with_value(n))


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
    spark = local_session("local-cluster[2,1,1024]")
    streams = KafkaStreams(topology(src, dst, hold_dir), {
        **base_config(bootstrap, app_id, state_dir, "micro_batch", "at_least_once"),
        "autostop.at": "eol", "max.offsets.per.trigger": 200,
        "placement.replacement.wait.ms": 2000,  # exactness is checked here, not placement
        **({"checkpoint.location": checkpoint} if checkpoint else {})}, spark=spark)
    streams.start()
    run_printing_batches(streams)
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:8]))
