"""``KafkaStreams``' interactive queries (Java's ``store``, ``query``,
``queryMetadataForKey``, ``streamsMetadataForStore``), answered by the workers holding
each task's state (``client.py``; docs/interactive-queries.md)."""

from __future__ import annotations

from typing import Any

from kspark.errors import StreamsError
from kspark._kafka.settings import as_settings

__all__ = ["InteractiveQueries"]


class InteractiveQueries:
    """The query methods of :class:`~kspark.streams.KafkaStreams` (a mixin: it reads the
    client's ``config``, ``_topology`` and ``_app``)."""

    config: Any
    _topology: Any
    _app: Any
    _query_client: Any = None

    def _queries(self) -> Any:
        if self._app is None:
            raise StreamsError("interactive queries need a started application: call "
                               "start() first (Java's StreamsNotStartedException)")
        if self._query_client is None:
            from kspark._iq.client import QueryClient, store_catalog

            catalog = store_catalog(self._topology._graph, self.config)  # noqa: SLF001
            self._query_client = QueryClient(as_settings(self.config),
                                             self.config["application.id"], catalog,
                                             int(self.config["query.timeout.ms"]))
        return self._query_client

    def _close_queries(self) -> None:
        client, self._query_client = self._query_client, None
        if client is not None:
            client.close()

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
        InvalidStateStoreError naming the store's type.

        Example (needs a running application, so not run)::

            counts = streams.store(StoreQueryParameters.from_name_and_type(
                "counts", QueryableStoreTypes.key_value_store()))
            counts.get("alice"), list(counts.all())
        """
        from kspark._iq.facade import remote_store

        return remote_store(self._queries(), parameters)

    def query(self, request: Any) -> Any:
        """IQv2: ``StateQueryRequest.in_store(name).with_query(KeyQuery.with_key(k))``
        answered per partition (a ``StateQueryResult``), as Java's ``KafkaStreams.query``.
        Each partition's result carries the position it reflects; a partition whose task
        cannot answer within ``query.timeout.ms`` is a ``NOT_ACTIVE`` failure saying why,
        one behind the request's ``PositionBound`` a ``NOT_UP_TO_BOUND`` failure. As in Java,
        a standby copy (or a restoring task) may answer unless the request
        ``require_active()``: its position says how fresh the answer is."""
        return self._queries().query(request, stale=not request.is_require_active())

    def query_metadata_for_key(self, store_name: str, key: Any, key_serializer: Any) -> Any:
        """Where ``key`` of ``store_name`` lives: its partition (the default partitioner over
        ``key_serializer``'s bytes) and the endpoint of the worker holding that task."""
        return self._queries().metadata_for_key(store_name, key, key_serializer)

    def streams_metadata_for_store(self, store_name: str) -> list[Any]:
        """One ``StreamsMetadata`` per worker endpoint holding a partition of the store."""
        return self._queries().all_metadata_for_store(store_name)

    all_metadata_for_store = streams_metadata_for_store  # Java's name before 3.0
