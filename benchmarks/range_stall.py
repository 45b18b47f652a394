"""A range read right after one that ended at a log end (as a task's input read after its
restore, or a task's second input partition): how long the second read takes with the range
readers' fetch.wait.max.ms at kspark's default (10 ms) and at librdkafka's (500 ms).

``python benchmarks/range_stall.py [--records N] [--repeat R]``: starts its own broker.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from confluent_kafka import Producer

from kspark._kafka.admin import Admin
from kspark._local.broker import LocalBroker, free_port
from kspark._kafka.clients import read_range
from kspark._kafka.settings import ClientSettings


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=11)
    args = ap.parse_args()
    broker = LocalBroker(tempfile.mkdtemp(prefix="kspark-bench-"), port=free_port())
    bootstrap = broker.start()
    try:
        Admin(bootstrap).create_topics({"first": 1, "second": 1})
        p = Producer({"bootstrap.servers": bootstrap})
        for _ in range(args.records):
            p.produce("first", b"x")
            p.produce("second", b"y")
        p.flush(30)
        for wait in (None, 500):
            extra = {} if wait is None else {"consumer.fetch.wait.max.ms": wait}
            settings = ClientSettings.from_config({"bootstrap.servers": bootstrap,
                                                   "application.id": f"bench-{wait}", **extra})
            took = []
            for _ in range(args.repeat):
                for _ in read_range(settings, "first", 0, 0, args.records, 30000):
                    pass  # ends at the log end: a fetch stays parked there
                began = time.monotonic()
                for _ in read_range(settings, "second", 0, 0, args.records, 30000):
                    pass
                took.append((time.monotonic() - began) * 1000)
            took.sort()
            label = "kspark default (10 ms)" if wait is None else f"{wait} ms"
            print(f"range_stall: fetch.wait.max.ms {label}: second range median "
                  f"{took[len(took) // 2]:.0f} ms, max {took[-1]:.0f} ms ({args.records} records)")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
