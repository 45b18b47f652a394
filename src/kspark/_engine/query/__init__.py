"""Interactive queries in the engine: kspark-internal query types the read-only (IQv1)
stores need (``internal``), one partition's store answering a query (``evaluate``), which
store a QueryableStoreType accepts (``types``), the read-only stores over a query function
(``facades``, ``window_facades``) and versioned reads with ``valid_to`` (``read_versions``):
pure and host-neutral; the JSON wire codec of queries and results is ``kspark._iq``'s."""
