"""An Avro topic with a Schema Registry: orders in, big orders out, as typed records.

Start a local broker and a local Schema Registry first (after ``make setup``, from the
project's root):

    . .venv/bin/activate
    kspark broker start       # Kafka on 127.0.0.1:9092
    kspark registry start     # Confluent's registry API at http://127.0.0.1:8081/apis/ccompat/v7
    python examples/avro_registry.py

It creates two topics of its own, ``orders-<run>`` and ``big-orders-<run>``, and writes five
orders to the first with confluent-kafka's ``AvroSerializer``, as any producer on the
registry would (a Java one with ``KafkaAvroSerializer`` writes the same bytes). The topology
reads them as ``Order`` dataclasses with ``Serdes.avro(record_type=Order)`` (the schema each
record was written with is fetched from the registry by its id), keeps the orders worth 100
or more and writes them as ``BigOrder`` records with ``Serdes.avro(record_type=BigOrder)``,
which registers BigOrder's schema under ``big-orders-<run>-value``. It runs as an
incremental batch (KIP-95, ``autostop.at=eol``): what the topic holds now, then it stops.
The output is read back with the same serde and printed.

Elsewhere: ``--bootstrap-servers`` and ``--schema-registry-url`` (or the environment
variables ``KSPARK_BOOTSTRAP_SERVERS`` and ``KSPARK_SCHEMA_REGISTRY_URL``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kspark import KafkaStreams, Serdes, StreamsBuilder

BOOTSTRAP = "127.0.0.1:9092"
REGISTRY = "http://127.0.0.1:8081/apis/ccompat/v7"  # `kspark registry start`'s default


@dataclass
class Order:
    id: str
    customer: str
    qty: int
    price: float
    note: str | None = None


@dataclass
class BigOrder:
    id: str
    customer: str
    total: float


# What the producer writes with: the schema kspark derives from Order, written out by hand
# as another team's producer would have it.
ORDER_SCHEMA = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "string"}, {"name": "customer", "type": "string"},
    {"name": "qty", "type": "long"}, {"name": "price", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None}]})

ORDERS = [  # (key, value)
    ("ann", {"id": "o-1", "customer": "ann", "qty": 3, "price": 40.0, "note": None}),
    ("bob", {"id": "o-2", "customer": "bob", "qty": 1, "price": 9.5, "note": "gift"}),
    ("cy", {"id": "o-3", "customer": "cy", "qty": 10, "price": 12.5, "note": None}),
    ("ann", {"id": "o-4", "customer": "ann", "qty": 2, "price": 15.0, "note": None}),
    ("dee", {"id": "o-5", "customer": "dee", "qty": 1, "price": 250.0, "note": "express"}),
]


def big_orders(orders: str, big: str):
    """The topology: orders worth 100 or more, as BigOrder records."""
    builder = StreamsBuilder()
    (builder.stream(orders, key_serde=Serdes.String(),
                    value_serde=Serdes.avro(record_type=Order))
            .filter(lambda customer, order: order.qty * order.price >= 100)
            .map_values(lambda order: BigOrder(order.id, order.customer,
                                               round(order.qty * order.price, 2)))
            .to(big, key_serde=Serdes.String(), value_serde=Serdes.avro(record_type=BigOrder)))
    return builder.build()


def produce_orders(bootstrap: str, registry_url: str, topic: str) -> int:
    """Write ORDERS with confluent-kafka's AvroSerializer; returns the schema id."""
    client = SchemaRegistryClient({"url": registry_url})
    serializer = AvroSerializer(client, ORDER_SCHEMA)
    producer = Producer({"bootstrap.servers": bootstrap})
    ctx = SerializationContext(topic, MessageField.VALUE)
    for key, order in ORDERS:
        producer.produce(topic, key=key.encode(), value=serializer(order, ctx))
    producer.flush(30)
    return client.get_latest_version(f"{topic}-value").schema_id


def read_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` (key and value bytes), up to the end of each partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                         "enable.partition.eof": True, "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records, at_end = [], set()
    while len(at_end) < partitions:
        for m in consumer.consume(100, 10.0):
            if m.error() is None:
                records.append((m.key(), m.value()))
            elif m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
            else:
                raise RuntimeError(f"reading {topic}: {m.error()}")
    consumer.close()
    return records


def main(argv: list[str] | None = None, spark=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap-servers",
                    default=os.environ.get("KSPARK_BOOTSTRAP_SERVERS", BOOTSTRAP))
    ap.add_argument("--schema-registry-url",
                    default=os.environ.get("KSPARK_SCHEMA_REGISTRY_URL", REGISTRY))
    args = ap.parse_args(argv)
    bootstrap, registry_url = args.bootstrap_servers, args.schema_registry_url
    run = uuid.uuid4().hex[:6]
    orders, big = f"orders-{run}", f"big-orders-{run}"

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(orders, 1, 1), NewTopic(big, 1, 1)]).values():
        future.result(30)
    schema_id = produce_orders(bootstrap, registry_url, orders)
    print(f"produced {len(ORDERS)} orders to {orders} (Avro, schema id {schema_id})", flush=True)

    streams = KafkaStreams(big_orders(orders, big), {
        "application.id": f"big-orders-{run}",
        "bootstrap.servers": bootstrap,
        "schema.registry.url": registry_url,  # every Serdes.avro() of the topology uses it
        "autostop.at": "eol",                 # an incremental batch run: what is there, then stop
        "state.dir": tempfile.mkdtemp(prefix="kspark-avro-example-"),
        "spark.ui.enabled": "false",
    }, spark=spark)
    try:
        streams.start()
        streams.await_termination()
    finally:
        streams.close()

    # read back with the same serde, configured on its own (as a test's or a tool's would be)
    serde = Serdes.avro(record_type=BigOrder, config={"schema.registry.url": registry_url})
    print(f"big orders in {big}:")
    for key, value in read_all(bootstrap, big, 1):
        print(f"{key.decode()}: {serde.deserialize(big, value)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
