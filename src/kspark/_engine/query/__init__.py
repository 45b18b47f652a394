"""Interactive queries in the engine: kspark-internal query types the read-only (IQv1)
stores need (``internal``), one partition's store answering a query (``evaluate``), which
store a QueryableStoreType accepts (``types``), the read-only stores over a query function
(``facades``, ``window_facades``), versioned reads with ``valid_to`` (``read_versions``)
and the JSON wire codec of queries and results (``codec`` over ``wire``, ``codec_queries``
and ``codec_results``)."""
