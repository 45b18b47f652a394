"""A stateful kspark app on Spark local-cluster (separate executor processes), run as a script.

Used by test_cluster_failover.py: ``python -m tests.integration.cluster_app BOOTSTRAP SRC DST
APP_ID STATE_DIR [CHECKPOINT]``. Prints ``batches N`` as micro-batches complete; exits 0 when
the input
is consumed.
"""

from __future__ import annotations

import sys
import time

from kspark import KafkaStreams, Serdes, StreamsBuilder, spark_session
from kspark.processor import Processor
from kspark.state import Stores
from tests.integration.eos_app import run_printing_batches

S, L = Serdes.String(), Serdes.Long()


class SlowCounter(Processor):
    """Counts per key; a little slow, so a batch is long enough to be interrupted."""

    def init(self, context):
        self.context = context
        self.store = context.get_state_store("counts")

    def process(self, record):
        time.sleep(0.004)
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(n))


def topology(src: str, dst: str):
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(
        Stores.persistent_key_value_store("counts"), S, L))
    b.stream(src, key_serde=S, value_serde=S).process(SlowCounter, "counts").to(
        dst, key_serde=S, value_serde=L)
    return b.build()


def main(bootstrap: str, src: str, dst: str, app_id: str, state_dir: str,
         checkpoint: str | None = None) -> int:
    spark = spark_session({"spark.master": "local-cluster[2,1,1024]", "spark.ui.enabled": "false",
                           "spark.task.maxFailures": "8"})
    streams = KafkaStreams(topology(src, dst), {
        "application.id": app_id, "bootstrap.servers": bootstrap, "state.dir": state_dir,
        "autostop.at": "eol", "max.offsets.per.trigger": 200,
        "placement.replacement.wait.ms": 2000,  # exactness is checked here, not placement
        **({"checkpoint.location": checkpoint} if checkpoint else {})}, spark=spark)
    streams.start()
    run_printing_batches(streams)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
