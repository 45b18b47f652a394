"""``KafkaStreams``' interactive queries (Java's ``store``, ``query``,
``queryMetadataForKey``, ``streamsMetadataForStore``), answered by the workers holding
each task's state (``client.py``; docs/interactive-queries.md), and for a global store by
this process's own copy of it (``global_copy.py``)."""

from __future__ import annotations

from typing import Any

from kspark.errors import InvalidStateStoreError, StreamsError
from kspark._engine.query.types import unknown_store
from kspark._iq.tls import client_context
from kspark._kafka.settings import as_settings

__all__ = ["InteractiveQueries"]


class InteractiveQueries:
    """The query methods of :class:`~kspark.streams.KafkaStreams` (a mixin: it reads the
    client's ``config``, ``_topology`` and ``_app``)."""

    config: Any
    _topology: Any
    _app: Any
    _query_client: Any = None
    _global_copy: Any = None

    def _queries(self, store: str | None = None) -> Any:
        """The query client; with ``store``, an UnknownStateStoreError (listing every store,
        the global ones too) if the topology has no such store."""
        self._require_started_for_queries()
        if self._query_client is None:
            from kspark._iq.client import QueryClient, store_catalog

            catalog = store_catalog(self._topology._graph, self.config)  # noqa: SLF001
            self._query_client = QueryClient(as_settings(self.config),
                                             self.config["application.id"], catalog,
                                             int(self.config["query.timeout.ms"]),
                                             client_context(self.config))
        client = self._query_client
        if store is not None and store not in client.catalog:
            raise unknown_store(store, [*client.catalog, *self._global_names()])
        return client

    def _require_started_for_queries(self) -> None:
        if self._app is None:
            raise StreamsError("interactive queries need a started application: call "
                               "start() first (Java's StreamsNotStartedException)")

    def _global_names(self) -> list[str]:
        return sorted(self._topology._graph.global_stores)  # noqa: SLF001

    def _globals(self) -> Any:
        """This process's copy of the global stores (made at the first global read)."""
        self._require_started_for_queries()
        if self._global_copy is None:
            from kspark._iq.global_copy import GlobalCopy

            self._global_copy = GlobalCopy(self._topology._graph, self.config)  # noqa: SLF001
        return self._global_copy

    def _close_queries(self) -> None:
        client, self._query_client = self._query_client, None
        copy, self._global_copy = self._global_copy, None
        if client is not None:
            client.close()
        if copy is not None:
            copy.close()

    def store(self, parameters: Any) -> Any:
        """A read-only view of a state store across all its partitions (IQv1), as Java's
        ``KafkaStreams.store(StoreQueryParameters)``: each read is answered by the tasks
        holding the store, wherever Spark placed them, from what they last committed.

        ``parameters``: ``StoreQueryParameters.from_name_and_type(name,
        QueryableStoreTypes.key_value_store())`` (or ``timestamped_key_value_store``,
        ``window_store``, ``timestamped_window_store``, ``session_store``,
        ``versioned_key_value_store``); ``.with_partition(p)`` reads one partition;
        ``.enable_stale_stores()`` also reads tasks that are restoring. An unknown name
        raises UnknownStateStoreError listing the stores; another type, an
        InvalidStateStoreError naming the store's type. A global store (``global_table``,
        ``add_global_store``) is read from this process's own copy, brought to the global
        topics' ends at each read (every partition: ``with_partition`` is ignored).

        Example (needs a running application, so not run)::

            counts = streams.store(StoreQueryParameters.from_name_and_type(
                "counts", QueryableStoreTypes.key_value_store()))
            counts.get("alice"), list(counts.all())
        """
        from kspark._iq.facade import remote_store

        if parameters.store_name() in self._global_names():
            return self._globals().store(parameters)
        return remote_store(self._queries(parameters.store_name()), parameters)

    def query(self, request: Any) -> Any:
        """IQv2: ``StateQueryRequest.in_store(name).with_query(KeyQuery.with_key(k))``
        answered per partition (a ``StateQueryResult``), as Java's ``KafkaStreams.query``.
        Each partition's result carries the position it reflects; a partition whose task
        cannot answer within ``query.timeout.ms`` is a ``NOT_ACTIVE`` failure saying why,
        one behind the request's ``PositionBound`` a ``NOT_UP_TO_BOUND`` failure. As in Java,
        a standby copy (or a restoring task) may answer unless the request
        ``require_active()``: its position says how fresh the answer is. As in Java (and
        the TopologyTestDriver), a global store answers a global result failing with
        ``UNKNOWN_QUERY_TYPE``: read it with :meth:`store`."""
        name = request.get_store_name()
        if name in self._global_names():
            from kspark._iq.global_copy import global_query_refused

            self._require_started_for_queries()
            return global_query_refused()
        return self._queries(name).query(request, stale=not request.is_require_active())

    def query_metadata_for_key(self, store_name: str, key: Any, key_serializer: Any) -> Any:
        """Where ``key`` of ``store_name`` lives: its partition (the default partitioner over
        ``key_serializer``'s bytes) and the endpoint of the worker holding that task."""
        return self._partitioned(store_name).metadata_for_key(store_name, key, key_serializer)

    def streams_metadata_for_store(self, store_name: str) -> list[Any]:
        """One ``StreamsMetadata`` per worker endpoint holding a partition of the store."""
        return self._partitioned(store_name).all_metadata_for_store(store_name)

    def _partitioned(self, store_name: str) -> Any:
        """The query client, for a store kept in partitions (not a global one)."""
        if store_name in self._global_names():
            raise InvalidStateStoreError(
                f"store {store_name!r} is a global store: this process keeps a whole copy "
                "of it (read it with store()), so it has no partition or worker to look up")
        return self._queries(store_name)

    all_metadata_for_store = streams_metadata_for_store  # Java's name before 3.0
