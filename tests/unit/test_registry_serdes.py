"""Schema Registry serdes (Serdes.avro, json_schema, protobuf): the bytes confluent-kafka's
own serializers write, schema evolution, typed records, subject name strategies, settings
from the application config, one client per process, and every failure named.

Registries: confluent-kafka's in-memory ``mock://<scope>`` (one per scope and process, shared
through kspark.serde.registry.schema_registry_client), and for what only HTTP shows
(requests counted, a registry down or refusing) a small fake registry on localhost."""

import dataclasses
import json
import pickle
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

import pytest
from confluent_kafka.schema_registry import Schema, topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kspark import Serdes, StreamsBuilder, StreamsConfig
from kspark._graph.instantiate import resolve_serde
from kspark.config import CONFIG_KEYS
from kspark.errors import SchemaRegistryUnreachableError, ConfigError, SerializationError
from kspark.serde._registry_settings import REGISTRY_KEYS
from kspark.serde.registry import schema_registry_client
from kspark.testing import TopologyTestDriver

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "shop", "fields": [
    {"name": "name", "type": "string"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "shop", "fields": [
    {"name": "name", "type": "string"}, {"name": "tier", "type": "string",
                                         "default": "basic"}]})
JSON_USER = json.dumps({"type": "object", "title": "User", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]})
VALUE = SerializationContext("t", MessageField.VALUE)
KEY = SerializationContext("t", MessageField.KEY)


def _mock() -> dict:
    return {"schema.registry.url": f"mock://{uuid.uuid4().hex}"}


def _order_class():
    """A Protobuf message class made at test time (no protoc): kt.Order {id, qty}."""
    proto = descriptor_pb2.FileDescriptorProto(name=f"kt_{uuid.uuid4().hex}.proto",
                                               package="kt", syntax="proto3")
    msg = proto.message_type.add(name="Order")
    t = descriptor_pb2.FieldDescriptorProto
    msg.field.add(name="id", number=1, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL)
    msg.field.add(name="qty", number=2, type=t.TYPE_INT64, label=t.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kt.Order"))


@dataclass
class Address:
    city: str
    zip: int


@dataclass
class Customer:
    name: str
    age: int
    address: Address
    email: Optional[str] = None
    tags: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    photo: bytes = b""


@dataclass
class View:
    page: str
    ms: int = 0


# -- byte-identical with confluent-kafka's own serializers, each reading the other's bytes

def test_avros_fast_path_writes_and_reads_what_confluents_serializers_do_record_after_record():
    """After a topic's first record (written by confluent's serializer) and a schema id's
    first record (read by its deserializer), fastavro does the work: same bytes, same
    values, and the same named error for a wrong value."""
    conf = _mock()
    ours = Serdes.avro(USER_V2).configure(conf, is_key=False)
    client = schema_registry_client(conf)
    theirs = AvroSerializer(client, USER_V2,
                            conf={"subject.name.strategy": topic_subject_name_strategy})
    v1 = AvroSerializer(client, USER_V1, conf={"auto.register.schemas": True,
                                              "subject.name.strategy":
                                                  topic_subject_name_strategy})
    users = [{"name": f"u{i}", "tier": "gold" if i % 2 else "basic"} for i in range(20)]
    assert [ours.serialize("t", u) for u in users] == [theirs(u, VALUE) for u in users]
    codec = ours._codec_of(ours._settings())  # noqa: SLF001 - the fast paths in use
    assert codec.fast[("w", "t")] is not None
    raws = [theirs(u, VALUE) for u in users]
    assert [ours.deserialize("t", r) for r in raws] == users
    old = [v1({"name": f"old{i}"}, VALUE) for i in range(3)]  # v1 records: the v2 default
    assert [ours.deserialize("t", r) for r in old] == [
        {"name": f"old{i}", "tier": "basic"} for i in range(3)]
    assert sum(1 for k, v in codec.fast.items() if k[0] == "r" and v is not None) == 2
    with pytest.raises(SerializationError, match="cannot write the value of topic 't'"):
        ours.serialize("t", {"name": 7, "tier": "x"})


@pytest.mark.parametrize("is_key", [False, True])
def test_avro_writes_what_confluents_serializer_writes_and_each_reads_the_other(is_key):
    conf, ctx = _mock(), KEY if is_key else VALUE
    ours = Serdes.avro(USER_V1).configure(conf, is_key=is_key)
    client = schema_registry_client(conf)
    theirs = AvroSerializer(client, USER_V1,
                            conf={"subject.name.strategy": topic_subject_name_strategy})
    raw = ours.serialize("t", {"name": "ann"})
    assert raw == theirs({"name": "ann"}, ctx)
    schema_id = client.get_latest_version(f"t-{'key' if is_key else 'value'}").schema_id
    assert raw == b"\x00" + schema_id.to_bytes(4, "big") + b"\x06ann"  # Confluent's framing
    assert AvroDeserializer(client)(raw, ctx) == {"name": "ann"}
    assert ours.deserialize("t", theirs({"name": "bob"}, ctx)) == {"name": "bob"}


def test_json_schema_writes_what_confluents_serializer_writes_and_each_reads_the_other():
    conf = _mock()
    ours = Serdes.json_schema(JSON_USER, conf)
    client = schema_registry_client(conf)
    theirs = JSONSerializer(JSON_USER, client,
                            conf={"subject.name.strategy": topic_subject_name_strategy})
    raw = ours.serialize("t", {"name": "ann", "age": 3})
    assert raw == theirs({"name": "ann", "age": 3}, VALUE)
    assert raw[5:] == b'{"name":"ann","age":3}'
    assert JSONDeserializer(None, schema_registry_client=client)(raw, VALUE) == \
        {"name": "ann", "age": 3}
    assert ours.deserialize("t", theirs({"name": "bob"}, VALUE)) == {"name": "bob"}


def test_protobuf_writes_what_confluents_serializer_writes_and_each_reads_the_other():
    order, conf = _order_class(), _mock()
    ours = Serdes.protobuf(order, conf)
    client = schema_registry_client(conf)
    theirs = ProtobufSerializer(order, client, conf={
        "use.deprecated.format": False, "subject.name.strategy": topic_subject_name_strategy})
    raw = ours.serialize("t", order(id="a", qty=3))
    assert raw == theirs(order(id="a", qty=3), VALUE)
    # magic byte, schema id, the message indexes ([0]: the file's first message: one 0 byte)
    assert raw[5:6] == b"\x00" and raw[6:] == order(id="a", qty=3).SerializeToString()
    back = ProtobufDeserializer(order, {"use.deprecated.format": False})(raw, VALUE)
    assert (back.id, back.qty) == ("a", 3)
    read = ours.deserialize("t", theirs(order(id="b", qty=1), VALUE))
    assert isinstance(read, order) and (read.id, read.qty) == ("b", 1)
    with pytest.raises(SerializationError, match="takes a Order"):
        ours.serialize("t", {"id": "a"})


# -- schema evolution

def test_a_new_reader_schema_reads_old_records_with_the_new_fields_default():
    conf = _mock()
    old = Serdes.avro(USER_V1, conf).serialize("t", {"name": "ann"})
    new = Serdes.avro(USER_V2, conf)
    assert new.deserialize("t", old) == {"name": "ann", "tier": "basic"}
    newer = new.serialize("t", {"name": "bob", "tier": "gold"})
    assert newer[1:5] != old[1:5]  # a second version: another schema id
    assert Serdes.avro(USER_V1, conf).deserialize("t", newer) == {"name": "bob"}
    assert Serdes.avro(config=conf).deserialize("t", newer) == {"name": "bob", "tier": "gold"}
    assert sorted(schema_registry_client(conf).get_versions("t-value")) == [1, 2]


# -- typed records

def test_a_dataclass_round_trips_through_its_derived_avro_schema():
    conf = _mock()
    s = Serdes.avro(record_type=Customer, config=conf)
    c = Customer("ann", 41, Address("Oslo", 150), tags=["a"], scores={"x": 1.5}, photo=b"\x01")
    assert s.deserialize("t", s.serialize("t", c)) == c
    schema = json.loads(schema_registry_client(conf).get_latest_version("t-value")
                        .schema.schema_str)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    assert types["name"] == "string" and types["age"] == "long" and types["photo"] == "bytes"
    assert types["email"] == ["null", "string"] and types["address"]["type"] == "record"
    assert types["tags"] == {"type": "array", "items": "string"}
    assert types["scores"] == {"type": "map", "values": "double"}
    # a dict of the fields is written as the instance is
    assert s.serialize("t", dataclasses.asdict(c)) == s.serialize("t", c)


def test_a_dataclass_reads_records_of_an_older_schema_with_its_defaults():
    conf = _mock()
    old = Serdes.avro(json.dumps({"type": "record", "name": "View", "fields": [
        {"name": "page", "type": "string"}]}), conf).serialize("t", {"page": "/home"})
    assert Serdes.avro(record_type=View, config=conf).deserialize("t", old) == View("/home", 0)


def test_a_wrong_field_type_is_an_error_naming_the_field():
    s = Serdes.avro(record_type=Customer, config=_mock())
    with pytest.raises(SerializationError, match=r"field 'age' takes int, got str '41'"):
        s.serialize("t", Customer("ann", "41", Address("Oslo", 150)))
    with pytest.raises(SerializationError, match=r"field 'address.zip' takes int, got str"):
        s.serialize("t", Customer("ann", 41, Address("Oslo", "0150")))
    with pytest.raises(SerializationError, match=r"field 'tags\[0\]' takes str"):
        s.serialize("t", Customer("ann", 41, Address("Oslo", 150), tags=[1]))
    with pytest.raises(SerializationError, match="takes a Customer or a dict"):
        s.serialize("t", View("/"))
    with pytest.raises(SerializationError, match="on field name"):  # a dict: fastavro names it
        Serdes.avro(USER_V1, _mock()).serialize("t", {"name": 1})


def test_a_dataclass_round_trips_through_its_derived_json_schema():
    conf = _mock()
    s = Serdes.json_schema(record_type=View, config=conf)
    assert s.deserialize("t", s.serialize("t", View("/a", 2))) == View("/a", 2)
    schema = json.loads(schema_registry_client(conf).get_latest_version("t-value")
                        .schema.schema_str)
    assert schema["properties"] == {"page": {"type": "string"}, "ms": {"type": "integer"}}
    assert schema["required"] == ["page"]
    with pytest.raises(SerializationError, match="field 'ms' takes int"):
        s.serialize("t", View("/a", 2.5))


def test_a_pydantic_model_round_trips():
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        sku: str
        n: int = 1

    s = Serdes.avro(record_type=Item, config=_mock())
    assert s.deserialize("t", s.serialize("t", Item(sku="x"))) == Item(sku="x")


@pytest.mark.parametrize("make", [Serdes.avro, Serdes.json_schema])
def test_a_pydantic_field_set_to_the_wrong_type_is_named(make):
    """A Pydantic model validates when it is made, not on assignment (by default): the
    serde names the field as it does for a dataclass."""
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        sku: str
        n: int = 1

    item = Item(sku="x")
    item.sku = 5
    with pytest.raises(SerializationError, match=r"field 'sku' takes str, got int 5 \(in Item\)"):
        make(record_type=Item, config=_mock()).serialize("t", item)


# -- subject name strategies

@pytest.mark.parametrize("strategy,subject", [
    ("TopicNameStrategy", "t-value"), ("RecordNameStrategy", "shop.User"),
    ("TopicRecordNameStrategy", "t-shop.User"),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "shop.User")])
def test_subject_name_strategies(strategy, subject):
    conf = {**_mock(), "value.subject.name.strategy": strategy}
    s = Serdes.avro(USER_V1).configure(conf, is_key=False)
    raw = s.serialize("t", {"name": "ann"})
    assert schema_registry_client(conf).get_subjects() == [subject]
    assert s.deserialize("t", raw) == {"name": "ann"}


def test_the_key_strategy_applies_to_keys_and_a_bad_one_is_refused():
    conf = {**_mock(), "key.subject.name.strategy": "RecordNameStrategy"}
    Serdes.avro(USER_V1).configure(conf, is_key=True).serialize("t", {"name": "a"})
    Serdes.avro(USER_V1).configure(conf, is_key=False).serialize("t", {"name": "a"})
    assert sorted(schema_registry_client(conf).get_subjects()) == ["shop.User", "t-value"]
    with pytest.raises(ConfigError, match="value.subject.name.strategy"):
        StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1",
                       "value.subject.name.strategy": "NoSuchStrategy"})
    with pytest.raises(ConfigError, match="must be one of TopicNameStrategy"):
        Serdes.avro(USER_V1, {**_mock(), "subject.name.strategy": "Nope"}).serialize("t", {})


# -- auto.register.schemas=false, use.latest.version

def test_without_auto_register_the_latest_version_is_written_with():
    conf = {**_mock(), "auto.register.schemas": "false", "use.latest.version": True}
    client = schema_registry_client(conf)
    with pytest.raises(SerializationError, match=r"subject 't-value' has no version .*"
                                                 r"use.latest.version=true"):
        Serdes.avro(USER_V2, conf).serialize("t", {"name": "ann", "tier": "x"})
    schema_id = client.register_schema("t-value", Schema(USER_V1, "AVRO"))
    raw = Serdes.avro(config=conf).serialize("t", {"name": "ann"})  # no schema of its own
    assert raw == b"\x00" + schema_id.to_bytes(4, "big") + b"\x06ann"
    assert client.get_versions("t-value") == [1]  # nothing registered


def test_use_latest_version_reads_with_the_subjects_latest_schema():
    conf = _mock()
    v1 = Serdes.avro(USER_V1, conf).serialize("t", {"name": "ann"})  # registers v1
    schema_registry_client(conf).register_schema("t-value", Schema(USER_V2, "AVRO"))
    latest = Serdes.avro(config={**conf, "use.latest.version": True})
    assert latest.deserialize("t", v1) == {"name": "ann", "tier": "basic"}
    assert Serdes.avro(config=conf).deserialize("t", v1) == {"name": "ann"}  # the writer's


def test_normalize_schemas_asks_the_registry_to_normalize(registry):
    Serdes.avro(USER_V1, registry.conf(**{"normalize.schemas": True})).serialize(
        "t", {"name": "ann"})
    Serdes.avro(USER_V1, registry.conf()).serialize("u", {"name": "ann"})
    assert [p.split("?")[1].lower() for p in registry.paths] == [
        "normalize=true", "normalize=false"]


def test_a_static_bearer_token_is_sent_as_javas(registry):
    conf = registry.conf(**{"bearer.auth.credentials.source": "STATIC_TOKEN",
                            "bearer.auth.token": "tok-42", "bearer.auth.logical.cluster": "lsrc-1",
                            "bearer.auth.identity.pool.id": "pool-1"})
    Serdes.avro(USER_V1, conf).serialize("t", {"name": "ann"})
    assert registry.auth == ["Bearer tok-42"]


def test_tls_to_the_registry_trusts_the_ca_given_and_nothing_else(tmp_path):
    """An HTTPS registry whose certificate only ``schema.registry.ssl.ca.location`` vouches
    for: with it the schema is registered; without it the registry is unreachable, naming
    the certificate (retried: never a skipped record)."""
    import shutil
    import ssl
    import subprocess

    openssl = shutil.which("openssl")
    assert openssl, "the suite needs openssl (the secured broker does too)"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True,
                   timeout=60)
    r = FakeRegistry()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(cert), str(key))
    r.server.socket = tls.wrap_socket(r.server.socket, server_side=True)
    try:
        url = r.url.replace("http://", "https://")
        raw = Serdes.avro(USER_V1, {"schema.registry.url": url,
                                    "schema.registry.ssl.ca.location": str(cert)}).serialize(
            "t", {"name": "ann"})
        assert raw[:5] == b"\x00\x00\x00\x00\x01" and r.requests == [
            ("POST", "/subjects/t-value/versions")]
        untrusted = Serdes.avro(USER_V1, {"schema.registry.url": url + "-other",
                                          "request.timeout.ms": 500})
        with pytest.raises(SchemaRegistryUnreachableError, match="CERTIFICATE_VERIFY_FAILED"):
            untrusted.serialize("t", {"name": "ann"})
    finally:
        r.server.shutdown()
        r.server.server_close()


def test_without_auto_register_an_unregistered_schema_is_an_error_naming_the_subject():
    conf = {**_mock(), "auto.register.schemas": False}
    with pytest.raises(SerializationError, match=r"not registered under subject 't-value'.*"
                                                 r"auto.register.schemas=false"):
        Serdes.avro(USER_V1, conf).serialize("t", {"name": "ann"})
    with pytest.raises(ConfigError, match="no schema to write with"):
        Serdes.avro(config=_mock()).serialize("t", {"name": "ann"})


# -- failures: each a SerializationError naming topic, key or value, schema id and subject

def test_an_unknown_schema_id_is_named():
    s = Serdes.avro(config=_mock())
    with pytest.raises(SerializationError) as e:
        s.deserialize("orders", b"\x00\x00\x00\x03\xe7\x06ann")
    assert str(e.value).startswith("Serdes.avro() cannot read the value of topic 'orders' "
                                   "(schema id 999, subject 'orders-value'): schema id 999 "
                                   "is not in the schema registry at mock://")


@pytest.mark.parametrize("make", [lambda c: Serdes.json_schema(JSON_USER, c),
                                  lambda c: Serdes.protobuf(_order_class(), c)])
def test_an_unknown_schema_id_is_named_in_every_format(make):
    with pytest.raises(SerializationError, match=r"cannot read the value of topic 't' \(schema "
                                                 r"id 99, subject 't-value'\): schema id 99 is "
                                                 r"not in the schema registry"):
        make(_mock()).deserialize("t", b"\x00\x00\x00\x00\x63\x00\x02")


def test_bytes_without_the_magic_byte_are_named():
    s = Serdes.avro(USER_V1, _mock()).configure({}, is_key=True)
    with pytest.raises(SerializationError, match=r"cannot read the key of topic 't' \(schema "
                                                 r"id not known yet, subject 't-key'\): its 3 "
                                                 r"bytes have no Schema Registry framing"):
        s.deserialize("t", b"ann")


def test_an_unreachable_registry_is_retried_within_the_request_timeout_then_named():
    s = Serdes.avro(USER_V1, {"schema.registry.url": "http://ann:hunter2@127.0.0.1:9",
                              "request.timeout.ms": 400, "retry.backoff.ms": 20})
    start = time.monotonic()
    with pytest.raises(SchemaRegistryUnreachableError) as e:
        s.serialize("t", {"name": "ann"})
    took = time.monotonic() - start
    assert 0.3 < took < 5
    text = str(e.value)
    assert "the schema registry at http://127.0.0.1:9 could not be reached within " \
           "request.timeout.ms=400" in text and "subject 't-value'" in text
    assert "tries" in text and "hunter2" not in text
    assert "hunter2" not in str(e.value.__cause__) and "hunter2" not in repr(s)


def test_a_registry_back_within_the_bound_loses_no_record(registry):
    registry.fail_next = 3  # three 503s, then the registry answers
    s = Serdes.avro(USER_V1, registry.conf(**{"request.timeout.ms": 5000,
                                             "retry.backoff.ms": 10}))
    raw = s.serialize("t", {"name": "ann"})
    assert s.deserialize("t", raw) == {"name": "ann"}
    assert [r for r in registry.requests if r[0] == "POST"] == \
        [("POST", "/subjects/t-value/versions")] * 4


def test_an_incompatible_schema_on_auto_register_is_named(registry):
    registry.refuse = True
    with pytest.raises(SerializationError) as e:
        Serdes.avro(USER_V2, registry.conf()).serialize("t", {"name": "a", "tier": "b"})
    assert f"the schema registry at {registry.url} refused to register the schema under " \
           "subject 't-value': it is incompatible" in str(e.value)
    assert "HTTP 409" in str(e.value) and "(schema id not known yet" in str(e.value)


def _driver(conf: dict, **extra):
    b = StreamsBuilder()
    b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.avro(record_type=View)) \
        .map_values(lambda v: View(v.page.upper(), v.ms + 1)) \
        .to("out", value_serde=Serdes.avro(record_type=View))
    return TopologyTestDriver(b.build(), {**conf, **extra})


def test_bad_records_follow_the_deserialization_handler_and_are_dead_lettered():
    conf = _mock()
    with _driver(conf) as d:
        with pytest.raises(SerializationError, match=r"topic 'in', partition 0, offset 0 .*"
                                                     r"schema id 999, subject 'in-value'"):
            d.create_input_topic("in", Serdes.String(), Serdes.ByteArray()).pipe_input(
                "k", b"\x00\x00\x00\x03\xe7\x00")
    with _driver(conf, **{"deserialization.exception.handler": "log_and_continue",
                          "errors.dead.letter.queue.topic.name": "dlq"}) as d:
        raw = d.create_input_topic("in", Serdes.String(), Serdes.ByteArray())
        raw.pipe_input("k", b"no framing")
        d.create_input_topic("in", Serdes.String(), Serdes.avro(record_type=View, config=conf)) \
            .pipe_input("k", View("/a", 1))
        out = d.create_output_topic("out", Serdes.String(),
                                    Serdes.avro(record_type=View, config=conf))
        assert out.read_values_to_list() == [View("/A", 2)]
        dead = d.create_output_topic("dlq", Serdes.String(), Serdes.ByteArray()).read_record()
        headers = dict(dead.headers)
        assert dead.value == b"no framing" and headers["__streams.errors.offset"] == b"0"
        assert b"no Schema Registry framing" in headers["__streams.errors.message"]


def test_an_unreachable_registry_is_never_a_skipped_record_even_under_log_and_continue():
    """An outage is not a bad record: the handler does not see it, the task attempt ends
    (on Spark: replayed from its last commit, within task.timeout.ms), nothing is dropped."""
    away = {"schema.registry.url": "http://127.0.0.1:9", "request.timeout.ms": 200,
            "retry.backoff.ms": 20}
    with _driver(away, **{"deserialization.exception.handler": "log_and_continue"}) as d:
        raw = d.create_input_topic("in", Serdes.String(), Serdes.ByteArray())
        with pytest.raises(SchemaRegistryUnreachableError, match="could not be reached"):
            raw.pipe_input("k", b"\x00\x00\x00\x00\x01\x02")
        assert d.create_output_topic("out", Serdes.String(), Serdes.ByteArray()).is_empty()


# -- the application config, one serde and one client per process

def test_the_registry_comes_from_the_application_config_through_the_driver():
    conf = _mock()
    with _driver(conf) as d:  # the topology's serdes were given no registry at all
        d.create_input_topic("in", Serdes.String(), Serdes.avro(record_type=View, config=conf)) \
            .pipe_input("k", View("/home", 1))
        out = d.create_output_topic("out", Serdes.String(),
                                    Serdes.avro(record_type=View, config=conf))
        assert out.read_key_values_to_list() == [("k", View("/HOME", 2))]
    assert sorted(schema_registry_client(conf).get_subjects()) == ["in-value", "out-value"]
    with pytest.raises(ConfigError, match="needs schema.registry.url"):
        _driver({})


def test_a_default_serde_and_a_wrapped_one_are_configured_too():
    from kspark._engine.aggregates.windows import TimeWindowedSerde

    conf = _mock()
    s = resolve_serde(None, {"default.key.serde": Serdes.avro(), **conf}, "key", "n")
    assert s.settings.is_key and s.settings.url.startswith("mock://")
    w = resolve_serde(TimeWindowedSerde(Serdes.avro(), 10), conf, "value", "n")
    assert w.inner.settings is not None and not w.inner.settings.is_key


def test_one_configured_serde_and_one_client_per_process_and_pickles_without_it():
    conf, serde = _mock(), Serdes.avro(record_type=View)
    a, b = serde.configure(conf, False), serde.configure(dict(conf), False)
    assert a is b and serde.settings is None  # the shared serde itself is never changed
    assert a is not serde.configure(conf, True)
    a.serialize("t", View("/"))
    shipped = pickle.loads(pickle.dumps(a))  # to an executor: no client, rebuilt there
    assert shipped._codec is None and shipped == a
    assert shipped.configure(conf, False) is a
    shipped.serialize("t", View("/"))
    assert shipped._codec.client is a._codec.client is schema_registry_client(conf)


def test_a_schema_id_costs_one_request_per_process(registry):
    writer = Serdes.avro(record_type=View, config=registry.conf())
    raws = [writer.serialize("t", View(f"/{i}", i)) for i in range(50)]
    assert registry.requests == [("POST", "/subjects/t-value/versions")]
    registry.requests.clear()
    reader = Serdes.avro(config=registry.conf(**{"request.timeout.ms": 29_000}))  # own client
    assert [reader.deserialize("t", r)["ms"] for r in raws] == list(range(50))
    assert registry.requests == [("GET", "/schemas/ids/1")]


def test_every_registry_key_is_declared_in_the_application_config():
    assert set(REGISTRY_KEYS) <= set(CONFIG_KEYS)


# -- secrets

def test_secrets_come_from_references_and_are_never_shown(registry, monkeypatch):
    monkeypatch.setenv("KSPARK_SR_INFO", "ann:s3cr3t-pw")
    app = {"application.id": "a", "bootstrap.servers": "b:1",
           "basic.auth.user.info": "${env:KSPARK_SR_INFO}", "bearer.auth.token": "tok-42",
           **registry.conf()}
    config = StreamsConfig(app)
    tls = StreamsConfig({**app, "schema.registry.ssl.certificate.location": "/c.pem",
                         "schema.registry.ssl.key.password": "kp-42"})
    s = Serdes.avro(USER_V1).configure(config, is_key=False)
    s.serialize("t", {"name": "ann"})
    assert registry.auth == ["Basic YW5uOnMzY3IzdC1wdw=="]  # base64 of ann:s3cr3t-pw
    registry.refuse = True
    with pytest.raises(SerializationError) as e:
        Serdes.avro(USER_V2).configure(config, False).serialize("t", {"name": "a", "tier": "b"})
    shown = " ".join([repr(config), repr(tls), repr(s), str(s), repr(s.settings), str(e.value)])
    for secret in ("s3cr3t-pw", "tok-42", "kp-42"):
        assert secret not in shown


def test_a_serde_config_refuses_unknown_keys_and_unhashable_values():
    with pytest.raises(ConfigError, match="does not take config key 'schema.registry.urls'"):
        Serdes.avro(USER_V1, {"schema.registry.urls": "mock://x"})
    with pytest.raises(ConfigError, match="takes a str, int, bool or function, got dict"):
        Serdes.avro(USER_V1, {"schema.registry.url": {"a": 1}})
    with pytest.raises(ConfigError, match="PEM files only"):
        Serdes.avro(USER_V1, {**_mock(), "schema.registry.ssl.truststore.type": "JKS"}) \
            .serialize("t", {"name": "a"})


# -- a fake registry on localhost: counts requests, fails or refuses on demand

class _Registry(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        state = self.server.state
        path = self.path.split("?")[0].removeprefix(state.prefix)
        state.requests.append((method, path))
        state.paths.append(self.path)
        if self.headers.get("Authorization"):
            state.auth.append(self.headers["Authorization"])
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if state.fail_next:
            state.fail_next -= 1
            return self._send(503, {"error_code": 50301, "message": "starting"})
        if method == "POST" and path.endswith("/versions"):
            if state.refuse:
                return self._send(409, {"error_code": 409, "message": "Schema being registered "
                                        "is incompatible with an earlier schema"})
            schema = json.loads(body)["schema"]
            ids = state.ids.setdefault(schema, len(state.ids) + 1)
            return self._send(200, {"id": ids})
        if method == "GET" and path.startswith("/schemas/ids/"):
            wanted = int(path.rsplit("/", 1)[1])
            for schema, sid in state.ids.items():
                if sid == wanted:
                    return self._send(200, {"schema": schema})
        return self._send(404, {"error_code": 40403, "message": "Schema not found"})

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")


class FakeRegistry:
    def __init__(self):
        self.requests, self.paths, self.auth, self.ids = [], [], [], {}
        self.fail_next, self.refuse = 0, False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
        self.server.state = self
        # a path of its own: a client (and caches) of its own, whatever port it is given
        self.prefix = f"/r{uuid.uuid4().hex[:8]}"
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.prefix}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def conf(self, **extra) -> dict:
        return {"schema.registry.url": self.url, **extra}


@pytest.fixture
def registry():
    r = FakeRegistry()
    yield r
    r.server.shutdown()
    r.server.server_close()
