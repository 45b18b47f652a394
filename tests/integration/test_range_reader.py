"""read_range on a real broker: one consumer per worker process, reused range after range."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from kspark._kafka import clients
from kspark._kafka.clients import read_range


def _offsets(bootstrap: str, topic: str, start: int, end: int, **kw) -> list[int]:
    return [m.offset() for msgs in read_range(bootstrap, topic, 0, start, end, 30000, **kw)
            for m in msgs]


def test_ranges_read_exactly_with_one_reused_consumer(broker, admin, topic_name):
    plain, tx = topic_name("ranges"), topic_name("ranges-tx")
    admin.create_topics({plain: 1, tx: 1})
    p = Producer({"bootstrap.servers": broker})
    for i in range(50):
        p.produce(plain, value=b"%d" % i, partition=0)
    p.flush(30)
    # a transactional writer: commit markers and an aborted batch take offsets no record has
    t = Producer({"bootstrap.servers": broker, "transactional.id": f"ranges-{uuid.uuid4()}"})
    t.init_transactions(30)
    for commit in (True, False, True):
        t.begin_transaction()
        for i in range(5):
            t.produce(tx, value=b"x", partition=0)
        t.commit_transaction(30) if commit else t.abort_transaction(30)
    end_tx = admin.end_offsets([(tx, 0)])[(tx, 0)]

    assert _offsets(broker, plain, 0, 20) == list(range(20))
    readers = dict(clients._RANGE_READERS)
    assert len(readers) == 1
    assert _offsets(broker, plain, 20, 50) == list(range(20, 50))
    assert _offsets(broker, plain, 7, 9) == [7, 8]  # back again: a fresh position
    assert clients._RANGE_READERS == readers  # the same consumer served every range
    # read_committed, ending on a control record: the read ends without the aborted five
    got = _offsets(broker, tx, 0, end_tx)
    assert len(got) == 10 and got == sorted(got) and max(got) < end_tx

    first = next(read_range(broker, plain, 0, 0, 50, 30000, batch_size=10))
    assert [m.offset() for m in first] == list(range(10))  # abandoned after one batch
    assert _offsets(broker, plain, 40, 50) == list(range(40, 50))
