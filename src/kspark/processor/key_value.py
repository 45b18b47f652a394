"""KeyValue: the pair a ``map``, ``flat_map`` or table ``group_by`` function returns, as
Java's ``KeyValue``. A plain ``(key, value)`` tuple works as well.

It is the ``KeyValue`` that store iterators return (:mod:`kspark.state`), with Java's
``KeyValue.pair``: one named 2-tuple, equal to the tuple ``(key, value)``.

Example:
    >>> from kspark.processor import KeyValue
    >>> kv = KeyValue.pair("user-1", 3)
    >>> kv, kv.key, kv == ("user-1", 3)
    (KeyValue(key='user-1', value=3), 'user-1', True)
"""

from __future__ import annotations

from kspark._engine.state.kv import KeyValue

__all__ = ["KeyValue"]
