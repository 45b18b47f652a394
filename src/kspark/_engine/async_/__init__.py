"""Async processing (KIP-311): the processors whose calls run concurrently and retire in
order (``processor``), the runtimes the calls run on with their retry policy (``runtime``),
and the processors' counters (``metrics``)."""
