import uuid

import pytest

from kspark import Serdes
from kspark.errors import ConfigError, SerializationError

# Byte layouts of Java Kafka's serializers (org.apache.kafka.common.serialization).
JAVA_BYTES = [
    (Serdes.String(), "héllo", b"h\xc3\xa9llo"),
    (Serdes.Integer(), 1, b"\x00\x00\x00\x01"),
    (Serdes.Integer(), -2, b"\xff\xff\xff\xfe"),
    (Serdes.Long(), 258, b"\x00\x00\x00\x00\x00\x00\x01\x02"),
    (Serdes.Short(), -1, b"\xff\xff"),
    (Serdes.Float(), 1.5, b"\x3f\xc0\x00\x00"),
    (Serdes.Double(), -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00"),
    (Serdes.ByteArray(), b"\x00\x01", b"\x00\x01"),
    (Serdes.Bytes(), b"ab", b"ab"),
    (Serdes.UUID(), uuid.UUID("12345678-1234-5678-1234-567812345678"),
     b"12345678-1234-5678-1234-567812345678"),
    (Serdes.Json(), {"a": [1, 2]}, b'{"a":[1,2]}'),
]


@pytest.mark.parametrize("serde,value,raw", JAVA_BYTES)
def test_java_byte_layout_round_trip(serde, value, raw):
    assert serde.serialize("t", value) == raw
    assert serde.deserialize("t", raw) == value


@pytest.mark.parametrize("serde", [s for s, _, _ in JAVA_BYTES] + [Serdes.Void()])
def test_null_safe(serde):
    assert serde.serialize("t", None) is None
    assert serde.deserialize("t", None) is None


def test_wrong_width_names_the_serde():
    with pytest.raises(SerializationError, match="Integer"):
        Serdes.Integer().deserialize("t", b"\x00\x01")


def test_avro_round_trip():
    schema = {"type": "record", "name": "View",
              "fields": [{"name": "user", "type": "string"}, {"name": "n", "type": "int"}]}
    s = Serdes.Avro(schema)
    raw = s.serialize("t", {"user": "ann", "n": 3})
    assert raw == b"\x06ann\x06"  # zig-zag varints, as any Avro binary encoder writes
    assert s.deserialize("t", raw) == {"user": "ann", "n": 3}


def test_by_name_accepts_java_class_names():
    java_name = "org.apache.kafka.common.serialization.Serdes$StringSerde"
    assert Serdes.by_name(java_name) == Serdes.String()
    with pytest.raises(ConfigError):
        Serdes.by_name("Nope")
