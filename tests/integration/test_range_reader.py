"""read_range on a real broker: exact offset ranges, read again, an abandoned read."""

from __future__ import annotations

from confluent_kafka import Producer

from kspark._kafka.clients import read_range


def _offsets(bootstrap: str, topic: str, start: int, end: int, **kw) -> list[int]:
    return [m.offset() for msgs in read_range(bootstrap, topic, 0, start, end, 30000, **kw)
            for m in msgs]


def test_ranges_read_exactly(broker, admin, topic_name):
    plain = topic_name("ranges")
    admin.create_topics({plain: 1})
    p = Producer({"bootstrap.servers": broker})
    for i in range(50):
        p.produce(plain, value=b"%d" % i, partition=0)
    p.flush(30)
    assert _offsets(broker, plain, 0, 20) == list(range(20))
    assert _offsets(broker, plain, 20, 50) == list(range(20, 50))
    assert _offsets(broker, plain, 7, 9) == [7, 8]  # back again: a fresh position
    first = next(read_range(broker, plain, 0, 0, 50, 30000, batch_size=10))
    assert [m.offset() for m in first] == list(range(10))  # abandoned after one batch
    assert _offsets(broker, plain, 40, 50) == list(range(40, 50))
