"""The workloads every system runs, and the input they run on.

Stdlib only: imported by the runner (kspark's virtualenv) and by the system scripts, some of
which run in the peers' own virtualenv.

Input: N JSON records of about 107 bytes, key = the user id (100,000 distinct users):
    {"id": 1000123, "user": "u-004711", "amount": 12.5, "kind": "click", "ts": ..., "region": "eu-1"}
W1 (filter + map): keep ``amount > THRESHOLD`` (drops ~10 %), upper-case ``kind`` and add
    ``amount_cents``, written as JSON.
W2 (count per key): the running count of records per user, an 8-byte big-endian long.
W3 (windowed count): the count per user and tumbling event-time window of ``WINDOW_MS``
    (2 minutes), by the record timestamps (equal to ``ts``: ``T0`` + the record's index, so
    1,000 records a second of event time and every user once per 100 s: a user's count in a
    window is 1 or 2, 1M records span 9 windows, 10M 84), ``GRACE_MS`` (1 minute) of grace
    (native Spark: the same as its watermark delay). Output key ``<user>@<window start ms>``,
    value the count as an 8-byte big-endian long.
W4 (stream-table join): each record joined with its user's row of a table read from a second
    topic (``USERS_TOPIC``, 100,000 rows keyed by user, written before the input and with
    earlier timestamps), the record with the user's ``tier`` and ``country`` added, as JSON.
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
WORKLOADS = ("w1", "w2", "w3", "w4")
T0 = 1_700_000_000_000   # the timestamp (and ``ts``) of input record 0; record i has T0 + i
WINDOW_MS = 120_000      # W3's tumbling windows
GRACE_MS = 60_000        # W3's grace (native Spark: watermark delay)
USERS_TOPIC = "users"    # W4's table
TIERS = ("bronze", "silver", "gold")
COUNTRIES = ("de", "fr", "es", "it", "pl")


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


def window_key(user: bytes, start_ms: int) -> bytes:
    """W3's output key: ``<user>@<window start ms>``."""
    return user + b"@" + str(start_ms).encode()


def window_start(ts_ms: int) -> int:
    """The start of the W3 window holding ``ts_ms`` (windows aligned to the epoch)."""
    return ts_ms - ts_ms % WINDOW_MS


def user_row(j: int) -> dict:
    """W4: the table's row for user ``j``."""
    return {"user": f"u-{j:06d}", "tier": TIERS[j % 3], "country": COUNTRIES[j % 5]}


def users() -> Iterator[tuple[bytes, bytes, int]]:
    """W4's table: ``(key, value, timestamp)`` of every user, timestamps before ``T0``."""
    for j in range(KEYS):
        row = user_row(j)
        yield row["user"].encode(), json.dumps(row).encode(), T0 - KEYS + j


def w4(value: bytes, user: bytes) -> bytes:
    """W4's joiner: the record (raw JSON) with its user's row (raw JSON)."""
    rec, u = json.loads(value), json.loads(user)
    return json.dumps({**rec, "tier": u["tier"], "country": u["country"]}).encode()


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
               "kind": rng.choice(KINDS), "ts": T0 + i, "region": "eu-1"}
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
    ap.add_argument("--table", default=USERS_TOPIC, help="W4: the users topic")
    return ap.parse_args()
