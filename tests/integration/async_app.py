"""The async test application, run as a script (a driver process a test can kill).

From ``SRC`` (keys ``k<n>``, Integer values) every value ``v`` is enriched through the HTTP
service at ``PORT`` (``GET /enrich?v=N`` answers ``e<N>``) by an async step with up to 16
calls in flight per task, held back ``--delay-ms`` by ``KStream.delay``, and written to
``OUT``; exactly_once_v2, streaming (it runs until killed).

``python -m tests.integration.async_app BOOTSTRAP SRC OUT APP_ID STATE_DIR PORT [--mode
real_time]``; prints ``started`` and then ``batches N`` as micro-batches (real time:
epochs) complete.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.processor import RetryPolicy
from tests.integration.app_base import (arguments, base_config, end, local_session,
                                        run_printing_batches, start)

S, I = Serdes.String(), Serdes.Integer()


def topology(src: str, out: str, port: int, delay_ms: int):
    def enrich(v: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/enrich?v={v}", timeout=10) as r:
            return r.read().decode()

    b = StreamsBuilder()
    (b.stream(src, key_serde=S, value_serde=I)
      .map_values_async(enrich, "enrich", max_in_flight=16,
                        retry=RetryPolicy(max_attempts=5, initial_backoff_ms=20,
                                          retry_on=(urllib.error.URLError, OSError)))
      .delay(delay_ms, "hold", value_serde=S)
      .to(out, key_serde=S, value_serde=S))
    return b.build()


def config(bootstrap: str, app_id: str, state_dir: str, mode: str = "micro_batch",
           max_offsets: int = 100) -> dict:
    """The app's config: exactly_once_v2, streaming; ``mode``: the execution.mode."""
    cfg = base_config(bootstrap, app_id, state_dir, mode, "exactly_once_v2")
    cfg["request.timeout.ms"] = 20000
    if mode == "micro_batch":
        cfg.update({"max.offsets.per.trigger": max_offsets,
                    "delayed.records.check.interval.ms": 300})
    return cfg


def main(argv: list[str]) -> int:
    ap = arguments("bootstrap", "src", "out", "app_id", "state_dir",
                   mode_help="execution.mode (real_time: without the micro-batch keys)")
    ap.add_argument("port", type=int)
    ap.add_argument("--delay-ms", type=int, default=800)
    ap.add_argument("--max-offsets", type=int, default=100)
    a = ap.parse_args(argv)
    spark = local_session("local[2]", shuffle_partitions=2)
    streams = KafkaStreams(topology(a.src, a.out, a.port, a.delay_ms),
                           config(a.bootstrap, a.app_id, a.state_dir, a.mode, a.max_offsets),
                           spark=spark)
    start(streams)
    run_printing_batches(streams)
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
