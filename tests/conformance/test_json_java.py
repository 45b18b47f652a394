"""``Serdes.Json()``'s bytes against Jackson 2.19's (the jackson-databind that Kafka Streams
4.1.1 brings; ``JsonReference.java`` writes a value as Kafka Connect's ``JsonSerializer``
does: a plain ``ObjectMapper`` writing a ``JsonNode``). Identical bytes for the values of
``SAME``; for ``OTHER_NOTATION``, the differences docs/serdes.md lists, each spelled out;
and for every value, Jackson reads kspark's bytes as the same value."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kspark import Serdes
from kspark._local.prereqs import java_binary
from tests.conformance.reference import compiled

J = Serdes.Json()
SAME = [
    {"a": [1, 2]}, {"name": "Zoë", "city": "Zürich", "note": "日本語"}, "naïve café",
    {"x": {"y": [None, False, True], "z": {}}, "e": []}, [1, -7, 0, 2**31, -2**63, 2**64 - 1],
    2**70, -2**90, {"id": 1000123, "user": "u-004711", "amount": 12.5, "kind": "click"},
    [0.1, 1.0, -2.5, 0.001, 1234567.25, -0.0], "tab\tnew line\n quote\" back\\ slash/ \x7f",
    "\u2028\u00a0", {1: "int key", "s": None}, True, False, 0, "",
]
# (value, Jackson's bytes): the same value in another notation (kspark's bytes in the docs)
OTHER_NOTATION = [
    (1e16, b"1.0E16"), (1e-5, b"1.0E-5"), (1e7, b"1.0E7"), (123456789.0, b"1.23456789E8"),
    (5e-324, b"4.9E-324"), ("😀", b'"\\uD83D\\uDE00"'), ("\x1f", b'"\\u001F"'),
    ("\ud800", b'"\\uD800"'),
]


def _jackson(values: list) -> list[tuple[bytes, bytes]]:
    """For each value: Jackson's bytes for it, and for what it reads from kspark's bytes."""
    text = "".join(f"{json.dumps(v)}\t{J.serialize('t', v).hex()}\n" for v in values)
    proc = subprocess.run([java_binary(), "-cp", compiled(Path(__file__).with_name(
        "JsonReference.java")), "JsonReference"], input=text, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert len(lines) == len(values) and "error" not in sum(lines, []), proc.stdout
    return [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in lines]


@pytest.fixture(scope="module")
def jackson() -> dict[str, tuple[bytes, bytes]]:
    values = SAME + [v for v, _ in OTHER_NOTATION]
    return dict(zip(map(repr, values), _jackson(values), strict=True))


@pytest.mark.parametrize("value", SAME, ids=lambda v: repr(v)[:30])
def test_kspark_writes_jacksons_bytes(value, jackson):
    javas, read_back = jackson[repr(value)]
    assert J.serialize("t", value) == javas
    assert read_back == javas


@pytest.mark.parametrize("value, javas", OTHER_NOTATION, ids=lambda v: repr(v)[:30])
def test_where_the_notation_differs_jackson_reads_the_same_value(value, javas, jackson):
    assert jackson[repr(value)] == (javas, javas)  # what Jackson writes, and reads from ours
    assert J.serialize("t", value) != javas
    assert J.deserialize("t", javas) == value  # and kspark reads Jackson's bytes
