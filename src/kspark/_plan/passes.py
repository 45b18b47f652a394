"""The named passes that turn sub-topologies into Spark stages (see ``plan.py``).

Each is a function over plain data, without Spark: :func:`task_counts`,
:func:`fuse_stages`, :func:`lay_out` and :func:`shuffle_keys` (with :func:`spark_hash`,
Spark's Murmur3 of an int). A new Spark-side optimisation is a new pass here, called from
``plan.plan``.
"""

from __future__ import annotations

from kspark._graph.graph import TopologyGraph
from kspark._graph.subtopology import SubTopology
from kspark.errors import TopologyError

__all__ = ["task_counts", "fuse_stages", "lay_out", "shuffle_keys", "spark_hash", "back_edges",
           "cut_back_edges"]


def spark_hash(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an int column (Murmur3_x86_32.hashInt, seed 42), a signed int.

    Example:
        >>> spark_hash(0), spark_hash(1), spark_hash(-7)
        (933211791, -559580957, -1618159745)
    """
    def mul(a: int, b: int) -> int:
        return (a * b) & 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = rotl(mul(value & 0xFFFFFFFF, 0xCC9E2D51), 15)
    h1 = (seed & 0xFFFFFFFF) ^ mul(k1, 0x1B873593)
    h1 = (mul(rotl(h1, 13), 5) + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4  # the length in bytes
    h1 = mul(h1 ^ (h1 >> 16), 0x85EBCA6B)
    h1 = mul(h1 ^ (h1 >> 13), 0xC2B2AE35)
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def shuffle_keys(n: int) -> list[int]:
    """For each partition p < n, the smallest int k >= 0 whose Spark hash partitioning
    (``pmod(hash(k), n)``) sends it to p.

    Example:
        >>> shuffle_keys(4)
        [12, 6, 2, 0]
    """
    keys: dict[int, int] = {}
    for k in range(64 * n):
        keys.setdefault(spark_hash(k) % n, k)  # Python's % of a positive n is Spark's pmod
        if len(keys) == n:
            break
    if len(keys) != n:
        raise TopologyError(f"could not find shuffle keys for {n} partitions")
    return [keys[p] for p in range(n)]


def task_counts(graph: TopologyGraph, subs: list[SubTopology], partition_counts: dict[str, int],
                internal: set[str]) -> tuple[dict[int, int], dict[str, int]]:
    """Tasks per sub-topology and partitions per fed topic (spec name), upstream first: a
    sub-topology's ids do not follow the data (a table's source may come before the stream
    whose repartition it joins)."""
    tasks: dict[int, int] = {}
    # a topic partitioned like a user topic is known at once: so a foreign-key join's two
    # topics, where each side reads what the other writes (a cycle, as in Kafka Streams)
    fed_count = {t: partition_counts[like] for t, like in graph.partitions_like.items()
                 if like in partition_counts and t not in graph.partition_counts}
    pending = list(subs)
    while pending:
        ready = [st for st in pending if all(t in fed_count for t in st.fed_topics)
                 and all(graph.partitions_like.get(t) in (None, *partition_counts, *fed_count)
                         for t in st.feeds)]
        if not ready:
            raise TopologyError("the sub-topologies' repartition topics form a cycle: "
                                f"{sorted(t for st in pending for t in st.fed_topics)}")
        for st in ready:
            counts = ([partition_counts[t] for t in st.user_topics]
                      + [fed_count[t] for t in st.fed_topics])
            tasks[st.id] = max(counts)
            for t in st.feeds:
                like = graph.partitions_like.get(t)
                if t in graph.partition_counts:  # Repartitioned.with_number_of_partitions
                    fed_count[t] = graph.partition_counts[t]
                elif like is not None:
                    fed_count[t] = (partition_counts[like] if like in partition_counts
                                    else fed_count[like])
                else:
                    fed_count[t] = tasks[st.id] if t in internal else partition_counts[t]
            pending.remove(st)
    return tasks, fed_count


def fuse_stages(subs: list[SubTopology]) -> list[list[SubTopology]]:
    """Stages as lists of sub-topologies, upstream first. The sub-topologies that read what
    one stage writes share a stage (and its exchange), so that every stage's output is
    consumed exactly once."""
    readers = {t: st for st in subs for t in st.fed_topics}
    root = {st.id: st.id for st in subs}

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    changed = True
    while changed:  # merge the readers of each group's output, until nothing changes
        changed = False
        outputs: dict[int, set[int]] = {}
        for st in subs:
            outputs.setdefault(find(st.id), set()).update(find(readers[t].id) for t in st.feeds)
        for consumers in outputs.values():
            if not consumers:
                continue
            first, *rest = sorted(consumers)
            for other in rest:
                if find(other) != find(first):
                    root[find(other)] = find(first)
                    changed = True
    by_root: dict[int, list[SubTopology]] = {}
    for st in subs:
        by_root.setdefault(find(st.id), []).append(st)
    order: list[list[SubTopology]] = []
    seen: set[int] = set()

    def visit(r: int) -> None:  # upstream groups first
        if r in seen:
            return
        seen.add(r)
        for m in by_root[r]:
            for up in subs:
                if set(up.feeds) & set(m.fed_topics):
                    visit(find(up.id))
        order.append(by_root[r])

    for r in by_root:
        visit(r)
    return order


def lay_out(members: list[SubTopology], tasks: dict[int, int]) -> tuple[dict[int, int], int]:
    """Each member's first partition in its stage, in member order, and the stage's size."""
    first: dict[int, int] = {}
    pos = 0
    for m in members:
        first[m.id] = pos
        pos += tasks[m.id]
    return first, pos


def back_edges(subs: list[SubTopology]) -> set[str]:
    """The fed topics that close a cycle of sub-topologies (a foreign-key join's, as in
    Kafka Streams): those written by a sub-topology of a stage at or after the stage of
    their reader, in :func:`fuse_stages`' order. Micro-batch mode carries them through
    Kafka (:func:`cut_back_edges`); every other fed topic goes forward. Upstream first
    from the lowest id, the order puts a cycle's lowest-numbered sub-topology last: its
    topic into the cycle is the back edge (a foreign-key join's registration topic when the
    joining table's sub-topology comes first, so the other table's changes are answered
    within the micro-batch).

    Example:
        >>> from kspark._graph.subtopology import SubTopology as S
        >>> back_edges([S(0, (), ("in",), ("b",), ("a",)), S(1, (), (), ("a",), ("b",))])
        {'a'}
    """
    order = {st.id: i for i, ms in enumerate(fuse_stages(subs)) for st in ms}
    readers = {t: st for st in subs for t in st.fed_topics}
    return {t for st in subs for t in st.feeds if order[st.id] >= order[readers[t].id]}


def cut_back_edges(subs: list[SubTopology], back: set[str]) -> list[SubTopology]:
    """``subs`` with each topic of ``back`` read from Kafka by its reader (a user topic of
    it, by its spec name) and no longer fed by its writer: the sub-topologies then form no
    cycle, and :func:`fuse_stages` orders them.

    Example:
        >>> from kspark._graph.subtopology import SubTopology as S
        >>> cut = cut_back_edges([S(0, (), ("in",), ("b",), ("a",)),
        ...                       S(1, (), (), ("a",), ("b",))], {"a"})
        >>> [(s.user_topics, s.fed_topics, s.feeds) for s in cut]
        [(('in',), ('b',), ()), (('a',), (), ('b',))]
    """
    from dataclasses import replace

    return [replace(st, user_topics=st.user_topics + tuple(t for t in st.fed_topics if t in back),
                    fed_topics=tuple(t for t in st.fed_topics if t not in back),
                    feeds=tuple(t for t in st.feeds if t not in back)) for st in subs]
