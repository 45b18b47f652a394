"""raw: a plain confluent-kafka consume -> transform -> produce loop in one process.

The lower bound: no framework, no state store, no commits. Stops after ``--records`` inputs.
"""

import sys
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import cli, long_bytes, w1  # noqa: E402


def main() -> None:
    a = cli()
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": f"raw-{a.dst}",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(a.src, p, 0) for p in range(a.partitions)])
    p = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 20,
                  "batch.num.messages": 10000, "partitioner": "murmur2_random"})
    counts: dict[bytes, int] = {}

    def send(key: bytes, value: bytes) -> None:
        while True:
            try:
                return p.produce(a.dst, key=key, value=value)
            except BufferError:
                p.poll(0.05)

    seen = 0
    while seen < a.records:
        for m in c.consume(10000, 1.0):
            if m.error():
                continue
            seen += 1
            k = m.key()
            if a.workload == "w1":
                out = w1(m.value())
                if out is not None:
                    send(k, out)
            else:
                counts[k] = counts.get(k, 0) + 1
                send(k, long_bytes(counts[k]))
        p.poll(0)
    p.flush(120)
    c.close()


if __name__ == "__main__":
    main()
