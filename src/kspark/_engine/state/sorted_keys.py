"""The keys of a dict listed in byte order, kept sorted lazily: noting an added or removed
key is O(1); the sorted list is brought up to date only when a range needs it (a record
cache's keys, as its store ranges them)."""

from __future__ import annotations

import bisect
from typing import Any

__all__ = ["SortedKeys"]

# up to this many changes since the last sort are applied one by one (a binary search and a
# list shift each); more are merged in one pass
_FEW = 16


class SortedKeys:
    """The keys of the dict ``of``, listed sorted on demand (:meth:`sorted`); its owner
    tells each key it adds to the dict (:meth:`add`) or removes (:meth:`remove`).

    Changes since the last :meth:`sorted` are held (a key added then removed cancels out);
    once they outnumber half the keys, the list is rebuilt from the dict instead, so they
    never take more memory than the keys themselves.

    Example:
        >>> d: dict = {}; s = SortedKeys(d)
        >>> for k in (b"c", b"a", b"b"):
        ...     d[k] = 1; s.add(k)
        >>> del d[b"b"]; s.remove(b"b"); s.sorted()
        [b'a', b'c']
        >>> d[b"b"] = 1; s.add(b"b"); s.sorted()
        [b'a', b'b', b'c']
    """

    def __init__(self, of: dict[bytes, Any]) -> None:
        self._of = of
        self._keys: list[bytes] = []  # sorted, as of the last sync
        self._changes: dict[bytes, bool] = {}  # since then: True added, False removed
        self._rebuild = False  # the list is stale as a whole: sort the dict's keys again

    def add(self, key: bytes) -> None:
        """Note ``key`` added to the dict (absent until now)."""
        self._change(key, True)

    def remove(self, key: bytes) -> None:
        """Note ``key`` removed from the dict (present until now)."""
        self._change(key, False)

    def _change(self, key: bytes, added: bool) -> None:
        if self._rebuild:
            return
        changes = self._changes
        if changes.get(key) is (not added):  # undoes a change not yet applied
            del changes[key]
            return
        changes[key] = added
        if len(changes) > _FEW and 2 * len(changes) > len(self._of):
            self._rebuild = True
            self._changes = {}
            self._keys = []

    def sorted(self) -> list[bytes]:
        """The dict's keys in byte order (the list itself: do not change it).

        >>> d = {bytes([i]): None for i in range(40, 0, -1)}; s = SortedKeys(d)
        >>> for k in d:
        ...     s.add(k)
        >>> s.sorted() == sorted(d)
        True
        """
        if self._rebuild:
            self._keys = sorted(self._of)
            self._rebuild = False
        elif self._changes:
            self._apply()
        return self._keys

    def _apply(self) -> None:
        keys, changes = self._keys, self._changes
        self._changes = {}
        if len(changes) <= _FEW:
            for k, added in changes.items():
                if added:
                    bisect.insort(keys, k)
                else:
                    del keys[bisect.bisect_left(keys, k)]
            return
        if not all(changes.values()):
            keys = [k for k in keys if changes.get(k, True)]
        keys.extend(k for k, added in changes.items() if added)
        keys.sort()  # a sorted run and the new keys: merged in about one pass
        self._keys = keys

    def clear(self) -> None:
        """Forget every key (the dict was emptied)."""
        self._keys, self._changes, self._rebuild = [], {}, False
