"""The local Schema Registry kspark runs (Apicurio Registry with Confluent's API): it starts and
answers confluent-kafka's SchemaRegistryClient as Confluent's would, keeps BACKWARD
compatibility, refuses an incompatible schema with the reason, and the CLI manages it."""

from __future__ import annotations

import json
import urllib.request

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from kspark._cli.main import main

pytestmark = pytest.mark.integration

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "kspark.test",
            "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}]}
# BACKWARD-compatible: the new field has a default, so readers of v2 can read v1's records
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"],
                                   {"name": "currency", "type": "string", "default": "EUR"}]}


def avro(schema: dict) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


@pytest.fixture
def client(schema_registry):
    return SchemaRegistryClient({"url": schema_registry.url})


def test_the_registry_answers_with_backward_compatibility(schema_registry):
    assert schema_registry.url.startswith("http://127.0.0.1:")
    assert schema_registry.url.endswith("/apis/ccompat/v7")
    with urllib.request.urlopen(schema_registry.url + "/config", timeout=10) as answer:
        assert json.loads(answer.read()) == {"compatibilityLevel": "BACKWARD"}
    assert schema_registry.status().running


def test_a_schema_is_registered_and_read_back_by_id(client, topic_name):
    subject = f"{topic_name('orders')}-value"
    schema_id = client.register_schema(subject, avro(ORDER_V1))
    assert client.register_schema(subject, avro(ORDER_V1)) == schema_id  # same schema, same id
    back = client.get_schema(schema_id)
    assert back.schema_type == "AVRO"
    assert json.loads(back.schema_str) == ORDER_V1
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (1, schema_id)


def test_a_compatible_evolution_gets_a_new_version(client, topic_name):
    subject = f"{topic_name('orders')}-value"
    v1 = client.register_schema(subject, avro(ORDER_V1))
    assert client.test_compatibility(subject, avro(ORDER_V2))
    v2 = client.register_schema(subject, avro(ORDER_V2))
    assert v2 != v1
    assert client.get_versions(subject) == [1, 2]
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (2, v2)


@pytest.mark.parametrize("change, reason", [
    # a field added without a default: readers of the new schema cannot read old records
    (lambda fields: [*fields, {"name": "customer", "type": "string"}], "customer at /fields/2"),
    # a field's type changed
    (lambda fields: [{"name": "id", "type": "long"}, *fields[1:]],
     "reader type: LONG not compatible with writer type: STRING"),
])
def test_an_incompatible_change_is_refused_with_the_reason(client, topic_name, change, reason):
    subject = f"{topic_name('orders')}-value"
    client.register_schema(subject, avro(ORDER_V1))
    bad = avro({**ORDER_V1, "fields": change(ORDER_V1["fields"])})
    assert not client.test_compatibility(subject, bad)
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, bad)
    # Confluent's answer to an incompatible schema is 409 too
    assert refused.value.http_status_code == 409
    assert "Incompatible artifact" in refused.value.error_message
    assert reason in refused.value.error_message
    assert client.get_versions(subject) == [1]


def test_records_round_trip_through_confluents_avro_serdes(client, topic_name):
    topic = topic_name("orders")
    ser = AvroSerializer(client, json.dumps(ORDER_V1))
    ctx = SerializationContext(topic, MessageField.VALUE)
    data = ser({"id": "o-1", "amount": 42}, ctx)
    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == schema_id  # Confluent's framing
    # a reader on the evolved schema fills the new field's default
    reader = AvroDeserializer(client, json.dumps(ORDER_V2))
    assert reader(data, ctx) == {"id": "o-1", "amount": 42, "currency": "EUR"}


def test_cli_start_status_stop(tmp_path, capsys):
    args = ["--port", "0", "--dir", str(tmp_path)]
    try:
        assert main(["registry", "start", *args]) == 0
        url = capsys.readouterr().out.strip().rsplit("url=", 1)[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/apis/ccompat/v7")
        with urllib.request.urlopen(url + "/subjects", timeout=10) as answer:
            assert json.loads(answer.read()) == []
        assert main(["registry", "start", *args]) == 0  # the running one is kept
        assert "already running (pid" in capsys.readouterr().out
        assert main(["registry", "status", *args]) == 0
        assert "running (pid" in capsys.readouterr().out
    finally:
        assert main(["registry", "stop", *args]) == 0
    assert "stopped" in capsys.readouterr().out
    assert main(["registry", "status", *args]) == 3
    assert "not running" in capsys.readouterr().out
