"""Interactive queries between processes: where a query goes, how it travels (the
codec and the HTTP messages) and the endpoint that answers it from a worker's stores.

The evaluation against a store stays host-neutral and pure in ``_engine/query``; this
package imports it and ``_kafka``; ``_host`` imports this (the query host hears of each task);
never ``_spark``.
"""

__all__: list[str] = []
