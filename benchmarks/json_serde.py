"""Micro-benchmark: ``Serdes.Json()`` per record, serialize + deserialize, the standard
library's ``json`` (what the serde used before) against orjson (what it uses now).

The records are the peers' W1 input (``peers/workload.py``: six fields, about 107 bytes of
JSON). Each path reads every record's bytes to a dict and writes the dict back, as a
map_values between a Json source and a Json sink does; the best of ``--repeat`` rounds in
records/s. No broker, no Spark. Not a test: run it on purpose:

    .venv/bin/python benchmarks/json_serde.py [--records 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from workload import Expected, generate  # noqa: E402

from kspark import Serdes  # noqa: E402
from kspark.serde import Serde  # noqa: E402


class StdlibJsonSerde(Serde):
    """``Serdes.Json()`` as it was before orjson (its code, unchanged)."""

    name = "Json"

    def serialize(self, topic: str, data: object) -> bytes | None:
        if data is None:
            return None
        return json.dumps(data, separators=(",", ":")).encode("utf-8")

    def _to_bytes(self, data: object) -> bytes:
        return self.serialize("", data) or b""

    def _from_bytes(self, data: bytes) -> object:
        return json.loads(data)


def rate(serialize: Callable, deserialize: Callable, values: list[bytes], repeat: int) -> float:
    """Best records/s of ``repeat`` rounds of deserialize then serialize over ``values``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for raw in values:
            serialize("t", deserialize("t", raw))
        best = min(best, time.perf_counter() - start)
    return len(values) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    values = [v for _, v in generate(args.records, Expected())]
    size = sum(map(len, values)) / len(values)
    serde = Serdes.Json()
    assert all(serde.deserialize("t", v) == json.loads(v) for v in values[:1000])
    before = StdlibJsonSerde()
    old = rate(before.serialize, before.deserialize, values, args.repeat)
    new = rate(serde.serialize, serde.deserialize, values, args.repeat)
    print(f"{args.records} records of {size:.0f} bytes, serialize + deserialize, best of "
          f"{args.repeat}:")
    print(f"  json (before):           {old:>12,.0f} records/s")
    print(f"  Serdes.Json() (orjson):  {new:>12,.0f} records/s  ({new / old:.1f}x)")


if __name__ == "__main__":
    main()
