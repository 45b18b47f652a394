"""The iteration orders of Java's HashSet and TreeSet, so text Java prints from them can be
reproduced exactly (Kafka Streams' ``TopologyDescription.toString()`` prints both).

A ``HashSet<String>`` iterates its buckets in index order (the spread ``String.hashCode()``
masked by the table size) and each bucket in insertion order. A ``TreeSet`` iterates its
red-black tree in order; when the comparator reads fields that change after insertion (as
Kafka Streams' node comparator reads sub-tree sizes), the order depends on the tree's shape,
so :class:`TreeSet` replays ``java.util.TreeMap``'s insertion, rotations included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["java_hash", "java_compare", "hash_order", "added_capacity", "copied_capacity",
           "TreeSet"]

T = TypeVar("T")


def java_hash(s: str) -> int:
    """``String.hashCode()``: 31-based over the UTF-16 code units, as a signed 32-bit int.

    Example:
        >>> java_hash("in"), java_hash("KSTREAM-SOURCE-0000000000"), java_hash("é😀")
        (3365, 1861603632, 1996812)
    """
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_compare(a: str, b: str) -> int:
    """``a.compareTo(b)``'s sign: UTF-16 code units compared in order."""
    ua, ub = a.encode("utf-16-be"), b.encode("utf-16-be")
    return (ua > ub) - (ua < ub)


def _bucket(s: str, capacity: int) -> int:
    h = java_hash(s) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def added_capacity(n: int) -> int:
    """The table size of a ``new HashSet<>()`` after ``n`` adds (16, doubled past 3/4 full)."""
    capacity = 16
    while n > capacity * 3 // 4:
        capacity *= 2
    return capacity


def copied_capacity(n: int) -> int:
    """The table size of ``new HashSet<>(collection)`` for ``n`` elements."""
    wanted, capacity = max(int(n / 0.75) + 1, 16), 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def hash_order(items: Iterable[str], capacity: int) -> list[str]:
    """The order a Java HashSet/HashMap of table size ``capacity`` iterates ``items`` (given
    in insertion order; duplicates dropped).

    Example:
        >>> hash_order(["in2", "in0", "zz", "aa"], copied_capacity(4))
        ['zz', 'aa', 'in0', 'in2']
    """
    unique = list(dict.fromkeys(items))
    return sorted(unique, key=lambda s: _bucket(s, capacity))  # stable: insertion order kept


class _Entry:
    __slots__ = ("key", "left", "right", "parent", "black")

    def __init__(self, key: Any, parent: _Entry | None):
        self.key, self.parent = key, parent
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.black = True


class TreeSet(Generic[T]):
    """``new TreeSet<>(comparator)``: ``add`` as ``java.util.TreeMap.put`` (descend comparing
    with each entry's key as it is now, insert, rebalance), iteration in tree order.

    Example:
        >>> s = TreeSet(lambda a, b: a - b)
        >>> [s.add(x) for x in (3, 1, 2, 1)], list(s)
        ([True, True, True, False], [1, 2, 3])
    """

    def __init__(self, compare: Callable[[T, T], int]):
        self._compare = compare
        self._root: _Entry | None = None

    def add(self, key: T) -> bool:
        """Insert ``key`` unless the comparator finds it equal to an entry on its way down."""
        t, parent, cmp = self._root, None, 0
        if t is None:
            self._root = _Entry(key, None)
            return True
        while t is not None:
            parent, cmp = t, self._compare(key, t.key)
            if cmp == 0:
                return False
            t = t.left if cmp < 0 else t.right
        e = _Entry(key, parent)
        if cmp < 0:
            parent.left = e  # type: ignore[union-attr]
        else:
            parent.right = e  # type: ignore[union-attr]
        self._fix_after_insertion(e)
        return True

    def __iter__(self) -> Iterator[T]:
        stack: list[_Entry] = []
        node = self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key
            node = node.right

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def _fix_after_insertion(self, x: _Entry | None) -> None:
        x.black = False  # type: ignore[union-attr]
        while x is not None and x is not self._root and not _black(x.parent):
            p = x.parent
            g = p.parent if p is not None else None
            left = p is (g.left if g is not None else None)
            y = (g.right if left else g.left) if g is not None else None
            if not _black(y):
                p.black, y.black = True, True  # type: ignore[union-attr]
                if g is not None:
                    g.black = False
                x = g
                continue
            if x is (p.right if left else p.left):  # type: ignore[union-attr]
                x = p
                self._rotate(x, left)
            p = x.parent  # type: ignore[union-attr]
            if p is not None:
                p.black = True
                if p.parent is not None:
                    p.parent.black = False
                    self._rotate(p.parent, not left)
        self._root.black = True  # type: ignore[union-attr]

    def _rotate(self, p: _Entry | None, left: bool) -> None:
        """``rotateLeft(p)`` when ``left``, else ``rotateRight(p)``."""
        if p is None:
            return
        r = p.right if left else p.left
        assert r is not None
        inner = r.left if left else r.right
        if left:
            p.right = inner
        else:
            p.left = inner
        if inner is not None:
            inner.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        if left:
            r.left = p
        else:
            r.right = p
        p.parent = r


def _black(e: _Entry | None) -> bool:
    return e is None or e.black
