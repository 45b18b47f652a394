"""The two workloads every system runs, and the input they run on.

Stdlib only: imported by the runner (kspark's virtualenv) and by the system scripts, some of
which run in the peers' own virtualenv.

Input: N JSON records of about 107 bytes, key = the user id (100,000 distinct users):
    {"id": 1000123, "user": "u-004711", "amount": 12.5, "kind": "click", "ts": ..., "region": "eu-1"}
W1 (filter + map): keep ``amount > THRESHOLD`` (drops ~10 %), upper-case ``kind`` and add
    ``amount_cents``, written as JSON.
W2 (count per key): the running count of records per user, an 8-byte big-endian long.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

KEYS = 100_000
THRESHOLD = 10.0
KINDS = ("click", "view", "scroll", "purchase")
WORKLOADS = ("w1", "w2")


def passes(rec: dict) -> bool:
    return rec["amount"] > THRESHOLD


def enrich(rec: dict) -> dict:
    return {**rec, "kind": rec["kind"].upper(), "amount_cents": round(rec["amount"] * 100)}


def w1(value: bytes) -> bytes | None:
    """W1 on raw bytes: the new value, or None when the record is filtered out."""
    rec = json.loads(value)
    return json.dumps(enrich(rec)).encode() if passes(rec) else None


def long_bytes(n: int) -> bytes:
    return n.to_bytes(8, "big")


@dataclass
class Expected:
    """What a correct run must produce, computed while the input is generated."""
    records: int = 0
    w1_out: int = 0
    counts: Counter = field(default_factory=Counter)


def generate(n: int, expected: Expected, seed: int = 7) -> Iterator[tuple[bytes, bytes]]:
    """``n`` (key, value) records; fills ``expected`` as it goes."""
    rng = random.Random(seed)
    for i in range(n):
        user = f"u-{i * 7919 % KEYS:06d}"  # 7919 is prime: every key once per 100,000 records
        rec = {"id": 1_000_000 + i, "user": user, "amount": round(rng.uniform(0, 100), 2),
               "kind": rng.choice(KINDS), "ts": 1_700_000_000_000 + i, "region": "eu-1"}
        expected.records += 1
        expected.w1_out += passes(rec)
        expected.counts[user.encode()] += 1
        yield user.encode(), json.dumps(rec).encode()


def cli() -> argparse.Namespace:
    """The arguments the runner gives every system script."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=WORKLOADS, required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--max-offsets", type=int, default=500_000, help="Spark: per micro-batch")
    return ap.parse_args()
