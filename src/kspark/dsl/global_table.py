"""GlobalKTable: a table every task sees in full, for joins without repartitioning."""

from __future__ import annotations

from typing import Any

__all__ = ["GlobalKTable"]


class GlobalKTable:
    """A table of every partition of a topic, kept in a global store that every task reads.

    Made by :meth:`~kspark.dsl.StreamsBuilder.global_table`; join a stream with it through
    ``KStream.join(global_table, key_selector, joiner)`` (or ``left_join``).

    Example:
        >>> from kspark import Serdes, StreamsBuilder
        >>> b = StreamsBuilder()
        >>> countries = b.global_table("countries", key_serde=Serdes.String(),
        ...                            value_serde=Serdes.String())
        >>> countries.store_name, countries.queryable_store_name()
        ('countries-STATE-STORE-0000000000', None)
    """

    def __init__(self, store_name: str, key_serde: Any, value_serde: Any, queryable: bool):
        self.store_name = store_name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._queryable = queryable

    def queryable_store_name(self) -> str | None:
        """The store's name if the user named it (``Materialized.as_``), else None."""
        return self.store_name if self._queryable else None
