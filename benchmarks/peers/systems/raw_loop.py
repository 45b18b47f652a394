"""raw: a plain confluent-kafka consume -> transform -> produce loop in one process.

The lower bound: no framework, no state store, no commits. Stops after ``--records`` inputs.
W3 counts in a dict per partition keyed by (user, window start), dropping a window once the
largest timestamp seen in that partition (its stream time, as a Kafka Streams task's) has
passed its end plus the grace. W4 first reads the users topic to its end
into a dict, then joins each record with it.
"""

import sys
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import (GRACE_MS, WINDOW_MS, cli, long_bytes, w1, w4,  # noqa: E402
                      window_key, window_start)


def read_table(a) -> dict[bytes, bytes]:
    """W4: the users topic, from the start to its end, as {key: value}."""
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": f"raw-table-{a.dst}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(a.table, p, 0) for p in range(a.partitions)])
    table: dict[bytes, bytes] = {}
    at_end: set[int] = set()
    while len(at_end) < a.partitions:
        for m in c.consume(10000, 1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                continue
            table[m.key()] = m.value()
    c.close()
    return table


def main() -> None:
    a = cli()
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": f"raw-{a.dst}",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(a.src, p, 0) for p in range(a.partitions)])
    p = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 20,
                  "batch.num.messages": 10000, "partitioner": "murmur2_random"})
    counts: dict = {}  # W2
    table = read_table(a) if a.workload == "w4" else {}
    windows: list[dict] = [{} for _ in range(a.partitions)]  # W3: per partition
    high = [0] * a.partitions  # W3: the largest timestamp seen per partition

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
            elif a.workload == "w2":
                counts[k] = counts.get(k, 0) + 1
                send(k, long_bytes(counts[k]))
            elif a.workload == "w3":
                ts, part = m.timestamp()[1], m.partition()
                start = window_start(ts)
                if ts > high[part]:
                    if start != window_start(high[part]):  # drop the closed windows
                        windows[part] = {wk: n for wk, n in windows[part].items()
                                         if wk[1] + WINDOW_MS + GRACE_MS > ts}
                    high[part] = ts
                if start + WINDOW_MS + GRACE_MS <= high[part]:
                    continue  # too late: its window has closed
                mine, wk = windows[part], (k, start)
                mine[wk] = mine.get(wk, 0) + 1
                send(window_key(k, start), long_bytes(mine[wk]))
            else:
                user = table.get(k)
                if user is not None:
                    send(k, w4(m.value(), user))
        p.poll(0)
    p.flush(120)
    c.close()


if __name__ == "__main__":
    main()
