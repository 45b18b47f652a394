"""Counts with the record cache on, run on Spark and compared with Java Kafka Streams (the
batch path of ``count()``, ``_engine/aggregates/batch_count.py``, runs where the cache is on).

With the cache on, what a table emits depends on when commits happen, which differs
between Java's TopologyTestDriver (a commit after every record, so every update) and a
Spark run (a commit per micro-batch or commit interval). What must hold: the stores are
equal, every key's last emitted value (with its timestamp) is Java's last, and what kspark
emits for a key is a subsequence of Java's updates of it (a cache only leaves updates out).

Example:
    >>> collapsed_of(["record out a 1 5", "record out a 3 9"],
    ...              ["record out a 1 5", "record out a 2 7", "record out a 3 9"])
    True
    >>> collapsed_of(["record out a 2 9"], ["record out a 1 5", "record out a 2 7"])
    False
"""

from __future__ import annotations

import random

from tests.conformance.spark_host import Case, case_of, rows_differ

__all__ = ["count_scenario", "cached_cases", "collapsed_of", "cached_disagreements"]


def count_scenario(seed: int, keys: int = 6) -> list[str]:
    """W2's shape, small: ``group_by_key().count()`` of one stream (an odd seed: in
    tumbling or hopping time windows with grace), to a topic, its store dumped; 30 to 90
    inputs over ``keys`` keys, timestamps out of order (late windows), some null keys and
    values (the count drops them; a windowed count counts a null value)."""
    r = random.Random(seed)
    lines = [f"# cached count {seed}", "cache 10485760", "op v1 stream in0",
             "op v2 group_by_key v1"]
    if seed % 2:
        size = r.choice([50, 100])
        advance = r.choice([size, size // 2])
        lines += [f"op v3 time_windows v2 {size} {advance} {r.choice([0, 20, 100])}",
                  "op v4 count v3 st0", "op v5 to_stream v4", "op v6 unwindow v5", "to v6 out"]
    else:
        lines += ["op v3 count v2 st0", "op v4 to_stream v3", "to v4 out"]
    for _ in range(r.randint(30, 90)):
        k = "~" if r.random() < 0.05 else "k%d" % r.randrange(keys)
        v = "~" if r.random() < 0.05 else str(r.randrange(100))
        lines.append(f"input in0 {k} {v} {r.randint(1, 500)}")
    return lines + [f"store st0 {'window' if seed % 2 else 'kv'}"]


def cached_cases(count: int, seed: int, run: str, per_trigger: int) -> list[Case]:
    """``count`` count scenarios from ``seed`` on, as cases of a Spark run (Java's answer
    not filled in yet: ``spark_host.with_java``)."""
    cases = [case_of(count_scenario(s), s, run, per_trigger) for s in range(seed, seed + count)]
    assert all(isinstance(c, Case) for c in cases), cases
    return cases  # type: ignore[return-value]


def _per_key(records: list[str]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for line in records:
        _, topic, key, value, ts = line.split(" ")
        out.setdefault((topic, key), []).append((value, ts))
    return out


def collapsed_of(spark: list[str], java: list[str]) -> bool:
    """Whether ``spark``'s output records are ``java``'s with updates left out: the same
    keys, each key's last record equal, each key's records a subsequence of Java's."""
    mine, theirs = _per_key(spark), _per_key(java)
    if mine.keys() != theirs.keys():
        return False
    for key, seq in mine.items():
        updates = iter(theirs[key])
        if seq[-1] != theirs[key][-1] or not all(x in updates for x in seq):
            return False
    return True


def cached_disagreements(cases: list[Case]) -> list[Case]:
    """The cases whose stores differ from Java's or whose output is not Java's collapsed."""
    return [c for c in cases if rows_differ(c) or not collapsed_of(c.spark, c.java)]
