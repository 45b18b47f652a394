"""Schema Registry serdes on the real broker, the real registry (Apicurio, Confluent's API)
and the real SparkSession (issue 41).

Records written by confluent-kafka's own Avro, Protobuf and JSON Schema serializers are read
by a kspark topology on Spark in both execution modes, transformed and written with kspark's
registry serdes; confluent's deserializers read the output back, and every output record is
byte for byte what confluent's serializer writes for the same value and topic. The same run
reads a topic holding two schema versions with the newer reader schema (old records get the
new field's default). In the TopologyTestDriver, against the real registry: the same
evolution, and an incompatible schema refused on auto-register (HTTP 409, with the
registry's reason). Last, a registry of the test's own made unreachable mid-run (its JVM
SIGSTOPped, so it keeps its in-memory schemas) while records with a new schema id arrive:
the application waits, and its output is exact once the registry is back.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry import topic_subject_name_strategy as by_topic
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark.errors import SerializationError, StreamsError
from kspark.testing import TopologyTestDriver
from tests.conftest import consume_all
from tests.matrix import sampled_modes

pytestmark = pytest.mark.integration
S = Serdes.String()
N = 12  # records per input topic

ORDER_V1 = json.dumps({"type": "record", "name": "Order", "namespace": "kspark.test", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"}]})
# BACKWARD-compatible: the new field has a default
ORDER_V2 = json.dumps({"type": "record", "name": "Order", "namespace": "kspark.test", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
    {"name": "currency", "type": "string", "default": "EUR"}]})
# incompatible with ORDER_V1 under BACKWARD: a new field without a default
ORDER_BAD = json.dumps({"type": "record", "name": "Order", "namespace": "kspark.test", "fields": [
    {"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
    {"name": "customer", "type": "string"}]})
ITEM_JSON = json.dumps({"type": "object", "title": "Item", "properties": {
    "sku": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["sku", "qty"]})


def _message_class():
    """A Protobuf message class made without protoc: kst.Parcel {id, weight}. Its module is
    this one, so Spark pickles it by reference and a Python worker that imports this module
    makes the same class (a generated class's ``_pb2`` module does the same)."""
    proto = descriptor_pb2.FileDescriptorProto(name="kspark_test/parcel.proto", package="kst",
                                               syntax="proto3")
    msg = proto.message_type.add(name="Parcel")
    t = descriptor_pb2.FieldDescriptorProto
    msg.field.add(name="id", number=1, type=t.TYPE_STRING, label=t.LABEL_OPTIONAL)
    msg.field.add(name="weight", number=2, type=t.TYPE_INT64, label=t.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("kst.Parcel"))
    cls.__module__ = __name__
    return cls


Parcel = _message_class()


def _value(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _produce(broker: str, topic: str, records: list[tuple[str, bytes]]) -> None:
    p = Producer({"bootstrap.servers": broker, "enable.idempotence": True})
    for k, v in records:
        p.produce(topic, key=k.encode(), value=v)
    assert p.flush(30) == 0


def _read(broker: str, topic: str, n: int, timeout_s: float = 60) -> dict[str, bytes]:
    """``topic``'s records (read_committed) by key, once ``n`` are in; no key twice."""
    out = consume_all(broker, topic, n, timeout_s=timeout_s)
    by_key = {m.key().decode(): m.value() for m in out}
    assert len(by_key) == len(out) == n, (topic, len(out), n)
    return by_key


class _Formats:
    """confluent-kafka's own serializers and deserializers on the registry at ``url``."""

    def __init__(self, url: str):
        self.client = SchemaRegistryClient({"url": url})
        conf = {"subject.name.strategy": by_topic}
        self.avro_v1 = AvroSerializer(self.client, ORDER_V1, conf=conf)
        self.avro_v2 = AvroSerializer(self.client, ORDER_V2, conf=conf)
        self.json = JSONSerializer(ITEM_JSON, self.client, conf=conf)
        self.proto = ProtobufSerializer(Parcel, self.client,
                                        conf={**conf, "use.deprecated.format": False})
        self.read_avro = AvroDeserializer(self.client)  # the writer's schema
        self.read_json = JSONDeserializer(ITEM_JSON, schema_registry_client=self.client)
        self.read_proto = ProtobufDeserializer(Parcel, {"use.deprecated.format": False})


# -- 1 and 2: the three formats and a two-version topic, on Spark, in both modes

def _topology(t: dict[str, str]):
    """Each format: a transform and a passthrough, written with kspark's registry serdes;
    the two-version topic read with ORDER_V2 as reader schema and written with it."""
    b = StreamsBuilder()
    avro = b.stream(t["avro"], key_serde=S, value_serde=Serdes.avro(ORDER_V1))
    avro.to(t["avro-copy"], key_serde=S, value_serde=Serdes.avro(ORDER_V1))
    avro.map_values(lambda v: {"id": v["id"].upper(), "amount": v["amount"] * 10}) \
        .to(t["avro-out"], key_serde=S, value_serde=Serdes.avro(ORDER_V1))
    js = b.stream(t["json"], key_serde=S, value_serde=Serdes.json_schema(ITEM_JSON))
    js.to(t["json-copy"], key_serde=S, value_serde=Serdes.json_schema(ITEM_JSON))
    js.map_values(lambda v: {"sku": v["sku"] + "!", "qty": v["qty"] + 1}) \
        .to(t["json-out"], key_serde=S, value_serde=Serdes.json_schema(ITEM_JSON))
    pb = b.stream(t["proto"], key_serde=S, value_serde=Serdes.protobuf(Parcel))
    pb.to(t["proto-copy"], key_serde=S, value_serde=Serdes.protobuf(Parcel))
    pb.map_values(lambda v: type(v)(id=v.id.upper(), weight=v.weight * 2)) \
        .to(t["proto-out"], key_serde=S, value_serde=Serdes.protobuf(Parcel))
    b.stream(t["evo"], key_serde=S, value_serde=Serdes.avro(schema_str=ORDER_V2)) \
        .to(t["evo-out"], key_serde=S, value_serde=Serdes.avro(schema_str=ORDER_V2))
    return b.build()


def test_confluents_records_are_read_and_written_byte_identical_on_spark(
        execution_mode, broker, admin, spark, schema_registry, topic_name, app_config, tmp_path,
        capfd):
    """On Spark, with the registry's basic-auth secret given as a ``${file:}`` reference
    (the registry here does not check it; every request carries it): the records, then a
    scan of what the run wrote and printed, in which the secret never appears."""
    names = ["avro", "avro-copy", "avro-out", "json", "json-copy", "json-out", "proto",
             "proto-copy", "proto-out", "evo", "evo-out"]
    t = {n: topic_name(f"sr-{execution_mode}-{n}") for n in names}
    admin.create_topics({topic: 2 for topic in t.values()})
    f = _Formats(schema_registry.url)
    keys = [f"k{i}" for i in range(N)]
    orders = {k: {"id": f"o{i}", "amount": i} for i, k in enumerate(keys)}
    items = {k: {"sku": f"s{i}", "qty": i} for i, k in enumerate(keys)}
    parcels = {k: Parcel(id=f"p{i}", weight=100 + i) for i, k in enumerate(keys)}
    _produce(broker, t["avro"], [(k, f.avro_v1(v, _value(t["avro"]))) for k, v in orders.items()])
    _produce(broker, t["json"], [(k, f.json(v, _value(t["json"]))) for k, v in items.items()])
    _produce(broker, t["proto"], [(k, f.proto(v, _value(t["proto"])))
                                  for k, v in parcels.items()])
    # the two-version topic: half its records of v1, then half of v2 (both registered)
    old, new = keys[:N // 2], keys[N // 2:]
    evo = {k: {"id": f"e{i}", "amount": i} for i, k in enumerate(old)}
    evo.update({k: {"id": f"e{i}", "amount": i, "currency": "NOK"} for i, k in enumerate(new)})
    evo_raw = [(k, f.avro_v1(evo[k], _value(t["evo"]))) for k in old] + \
              [(k, f.avro_v2(evo[k], _value(t["evo"]))) for k in new]
    assert evo_raw[0][1][1:5] != evo_raw[-1][1][1:5]  # two schema ids
    assert f.client.get_versions(f"{t['evo']}-value") == [1, 2]
    _produce(broker, t["evo"], evo_raw)

    secret = f"kspark:{uuid.uuid4().hex}"
    (tmp_path / "registry-user-info").write_text(secret)
    cfg = app_config(execution_mode=execution_mode, processing_guarantee="exactly_once_v2",
                     commit_interval_ms=100, schema_registry_url=schema_registry.url)
    cfg["basic.auth.credentials.source"] = "USER_INFO"
    cfg["schema.registry.basic.auth.user.info"] = f"${{file:{tmp_path / 'registry-user-info'}}}"
    streams = KafkaStreams(_topology(t), cfg, spark=spark)
    assert secret not in repr(streams) and secret not in str(streams.config)
    streams.start()
    try:
        assert streams.await_termination(180), "the batch run did not end"
        assert streams.batch_finished()
    finally:
        streams.close()

    # what confluent's serializer writes for the value on the output topic, byte for byte
    def check(topic: str, write: Callable, read: Callable, expected: dict) -> None:
        out = _read(broker, topic, len(expected))
        assert {k: read(raw, _value(topic)) for k, raw in out.items()} == expected, topic
        assert out == {k: write(v, _value(topic)) for k, v in expected.items()}, topic

    check(t["avro-copy"], f.avro_v1, f.read_avro, orders)
    check(t["avro-out"], f.avro_v1, f.read_avro,
          {k: {"id": v["id"].upper(), "amount": v["amount"] * 10} for k, v in orders.items()})
    check(t["json-copy"], f.json, f.read_json, items)
    check(t["json-out"], f.json, f.read_json,
          {k: {"sku": v["sku"] + "!", "qty": v["qty"] + 1} for k, v in items.items()})
    check(t["proto-copy"], f.proto, f.read_proto, parcels)
    check(t["proto-out"], f.proto, f.read_proto,
          {k: Parcel(id=v.id.upper(), weight=v.weight * 2) for k, v in parcels.items()})
    # read with the v2 reader schema: the v1 records got the default, the v2 ones kept theirs
    check(t["evo-out"], f.avro_v2, f.read_avro,
          {k: {"currency": "EUR", **v} for k, v in evo.items()})
    # and the output subjects hold the schemas kspark registered, one version each
    for name in ("avro-out", "json-out", "proto-out", "evo-out"):
        assert f.client.get_versions(f"{t[name]}-value") == [1], name
    # the secret scan: nothing the run wrote (state, checkpoints, logs, its internal topics:
    # control, progress, routes) or printed holds it
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "registry-user-info"]
    if execution_mode == "micro_batch":
        assert any("checkpoint" in p.parts for p in written), "no checkpoint was written"
    for path in written:
        assert secret.encode() not in path.read_bytes(), f"the registry secret is in {path}"
    app_id = cfg["application.id"]
    internal = [topic for topic in admin.partition_counts() if topic.startswith(app_id)]
    assert internal, "the application made no internal topic"
    for topic in internal:
        for m in consume_all(broker, topic, 0, timeout_s=30):
            raw = b"".join([m.key() or b"", m.value() or b"",
                            *(v or b"" for _, v in m.headers() or [])])
            assert secret.encode() not in raw, f"the registry secret is in topic {topic}"
    out, err = capfd.readouterr()
    assert secret not in out + err


# -- 2 and 3 in the TopologyTestDriver, against the real registry

def _driver_config(url: str, topic_name) -> dict:
    return {"application.id": topic_name("sr-driver"), "bootstrap.servers": "unused:9092",
            "schema.registry.url": url}


def test_a_v2_reader_reads_v1_records_with_the_default_in_the_driver(schema_registry,
                                                                     topic_name):
    src, dst = topic_name("sr-evo-in"), topic_name("sr-evo-out")
    f = _Formats(schema_registry.url)
    old = f.avro_v1({"id": "a", "amount": 1}, _value(src))
    new = f.avro_v2({"id": "b", "amount": 2, "currency": "NOK"}, _value(src))
    assert old[1:5] != new[1:5]
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=Serdes.avro(schema_str=ORDER_V2)) \
        .map_values(lambda v: {**v, "amount": v["amount"] + 100}) \
        .to(dst, key_serde=S, value_serde=Serdes.avro(schema_str=ORDER_V2))
    with TopologyTestDriver(b.build(), _driver_config(schema_registry.url, topic_name)) as d:
        raw_in = d.create_input_topic(src, S, Serdes.ByteArray())
        raw_in.pipe_input("a", old)
        raw_in.pipe_input("b", new)
        out = d.create_output_topic(dst, S, Serdes.ByteArray()).read_key_values_to_list()
    assert [(k, f.read_avro(v, _value(dst))) for k, v in out] == [
        ("a", {"id": "a", "amount": 101, "currency": "EUR"}),
        ("b", {"id": "b", "amount": 102, "currency": "NOK"})]
    assert [v for _, v in out] == [f.avro_v2({"id": "a", "amount": 101, "currency": "EUR"},
                                             _value(dst)),
                                   f.avro_v2({"id": "b", "amount": 102, "currency": "NOK"},
                                             _value(dst))]


def test_confluents_json_schema_and_protobuf_records_are_read_in_the_driver(schema_registry,
                                                                           topic_name):
    """The driver reads what confluent's JSONSerializer and ProtobufSerializer wrote (from
    the real registry) and writes what they would write, byte for byte."""
    t = {n: topic_name(f"sr-driver-{n}") for n in ("json", "json-out", "proto", "proto-out")}
    f = _Formats(schema_registry.url)
    b = StreamsBuilder()
    b.stream(t["json"], key_serde=S, value_serde=Serdes.json_schema(ITEM_JSON)) \
        .map_values(lambda v: {"sku": v["sku"] + "!", "qty": v["qty"] + 1}) \
        .to(t["json-out"], key_serde=S, value_serde=Serdes.json_schema(ITEM_JSON))
    b.stream(t["proto"], key_serde=S, value_serde=Serdes.protobuf(Parcel)) \
        .map_values(lambda v: type(v)(id=v.id.upper(), weight=v.weight * 2)) \
        .to(t["proto-out"], key_serde=S, value_serde=Serdes.protobuf(Parcel))
    item, parcel = {"sku": "s1", "qty": 1}, Parcel(id="p1", weight=100)
    with TopologyTestDriver(b.build(), _driver_config(schema_registry.url, topic_name)) as d:
        d.create_input_topic(t["json"], S, Serdes.ByteArray()).pipe_input(
            "k", f.json(item, _value(t["json"])))
        d.create_input_topic(t["proto"], S, Serdes.ByteArray()).pipe_input(
            "k", f.proto(parcel, _value(t["proto"])))
        (json_out,) = d.create_output_topic(t["json-out"], S, Serdes.ByteArray()) \
            .read_values_to_list()
        (proto_out,) = d.create_output_topic(t["proto-out"], S, Serdes.ByteArray()) \
            .read_values_to_list()
    want_json, want_proto = {"sku": "s1!", "qty": 2}, Parcel(id="P1", weight=200)
    assert f.read_json(json_out, _value(t["json-out"])) == want_json
    assert json_out == f.json(want_json, _value(t["json-out"]))
    assert f.read_proto(proto_out, _value(t["proto-out"])) == want_proto
    assert proto_out == f.proto(want_proto, _value(t["proto-out"]))


def test_an_incompatible_schema_is_refused_on_auto_register_with_the_reason(schema_registry,
                                                                           topic_name):
    src, dst = topic_name("sr-bad-in"), topic_name("sr-bad-out")
    client = SchemaRegistryClient({"url": schema_registry.url})
    client.register_schema(f"{dst}-value", Schema(ORDER_V1, "AVRO"))
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=S) \
        .map_values(lambda v: {"id": v, "amount": 1, "customer": "c"}) \
        .to(dst, key_serde=S, value_serde=Serdes.avro(schema_str=ORDER_BAD))
    with TopologyTestDriver(b.build(), _driver_config(schema_registry.url, topic_name)) as d:
        with pytest.raises(SerializationError) as refused:
            d.create_input_topic(src, S, S).pipe_input("k", "o-1")
        assert d.create_output_topic(dst, S, Serdes.ByteArray()).is_empty()
    text = str(refused.value)
    assert f"refused to register the schema under subject '{dst}-value'" in text, text
    assert "HTTP 409" in text and "Incompatible artifact" in text, text
    assert "customer at /fields/2" in text, text  # the registry's reason
    assert schema_registry.url in text and f"topic {dst!r}" in text, text
    assert client.get_versions(f"{dst}-value") == [1]  # nothing registered


# -- 4: the registry away mid-run

@pytest.fixture
def own_registry(tmp_path):
    """A registry of this test's own, which it may freeze (SIGSTOP) and thaw (SIGCONT)."""
    from kspark._local.registry import LocalRegistry

    r = LocalRegistry(tmp_path / "registry")
    r.start()
    try:
        yield r
    finally:
        pid = r.status().pid
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        r.stop()


class _Lines(logging.Handler):
    """The kspark logger's messages in this process (the driver's)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _wait_for(done: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.1)


RESTARTED = ("starting a new epoch", "starting the query again")  # real_time, micro_batch


# The default mode in make test; both in the full matrix (the suite's time budget).


@sampled_modes("real_time")
def test_a_registry_away_mid_run_delays_the_application_and_loses_nothing(
        execution_mode, broker, admin, spark, own_registry, topic_name, app_config):
    """Both execution modes (micro_batch under the full matrix), exactly_once_v2. The
    registry's JVM is SIGSTOPped (connections hang, its in-memory schemas stay) while records
    with a schema id the application has not seen arrive: the reader fails within
    request.timeout.ms=2000 with SchemaRegistryUnreachableError, a TransientKafkaError, so
    the epoch (or micro-batch query) ends and a new one replays from the last commit
    (restart_after), until the registry is thawed; then every record is in the output once."""
    restarts, away_s = _registry_away(execution_mode, broker, admin, spark, own_registry,
                                      topic_name, app_config)
    print(f"\nregistry away {away_s:.1f} s; {len(restarts)} restart(s): {restarts[:1]}")


def _registry_away(mode, broker, admin, spark, registry, topic_name, app_config):
    """Run the application of the test above in ``mode``; the restarts logged, and how long
    the registry was away."""
    src, dst = topic_name("sr-away-in"), topic_name("sr-away-out")
    admin.create_topics({src: 2, dst: 2})
    f = _Formats(registry.url)
    first = {f"k{i}": {"id": f"o{i}", "amount": i} for i in range(N)}
    second = {f"k{i}": {"id": f"o{i}", "amount": i, "currency": "NOK"} for i in range(N, 2 * N)}
    _produce(broker, src, [(k, f.avro_v1(v, _value(src))) for k, v in first.items()])
    # written (so v2 is registered) before the registry goes away, produced while it is
    second_raw = [(k, f.avro_v2(v, _value(src))) for k, v in second.items()]
    reader = Serdes.avro(schema_str=ORDER_V2,
                         config={"request.timeout.ms": 2000, "retry.backoff.ms": 100})
    b = StreamsBuilder()
    b.stream(src, key_serde=S, value_serde=reader) \
        .map_values(lambda v: f"{v['id']}:{v['amount']}:{v['currency']}") \
        .to(dst, key_serde=S, value_serde=S)
    cfg = app_config(autostop_at="none", execution_mode=mode,
                     processing_guarantee="exactly_once_v2", commit_interval_ms=100,
                     task_timeout_ms=120_000, schema_registry_url=registry.url)
    lines = _Lines()
    logging.getLogger("kspark").addHandler(lines)
    streams = KafkaStreams(b.build(), cfg, spark=spark)
    pid = registry.status().pid
    failure: list[BaseException] = []

    def restarted() -> list[str]:
        return [line for line in lines.lines if any(r in line for r in RESTARTED)]

    def restarted_or_failed() -> bool:
        if restarted():
            return True
        try:
            return streams.await_termination(0.05)
        except StreamsError as e:
            failure.append(e)
            return True

    streams.start()
    try:
        assert len(_read(broker, dst, N, timeout_s=90)) == N  # v1's schema is cached now
        os.kill(pid, signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            _produce(broker, src, second_raw)
            _wait_for(restarted_or_failed, 60, "a restart (or the application failing) "
                                               "while the registry was away")
        finally:
            os.kill(pid, signal.SIGCONT)
        away_s = time.monotonic() - frozen
        assert not failure, ("the application failed while the registry was away, instead "
                             f"of restarting from its last commit: {failure[0]}")
        out = consume_all(broker, dst, 2 * N, timeout_s=120, until_quiet=True)
    finally:
        logging.getLogger("kspark").removeHandler(lines)
        streams.close()
    got = sorted((m.key().decode(), m.value().decode()) for m in out)
    expected = sorted([(k, f"{v['id']}:{v['amount']}:EUR") for k, v in first.items()] +
                      [(k, f"{v['id']}:{v['amount']}:NOK") for k, v in second.items()])
    assert got == expected  # each record once: none lost, none twice
    return restarted(), away_s
