"""Pure planning: how a topology runs as Spark stages and tasks; imports no pyspark and runs
no Spark job, so it is unit-tested, printed (``kspark describe``) and reasoned about alone.

- ``plan.py``: :func:`plan`, the ``QueryPlan`` (stages, exchanges, sources, tasks);
- ``passes.py``: its named passes (fusion, layout, shuffle keys, task counts);
- ``options.py``: ``SourceOptions``, each Kafka source's typed options;
- ``describe.py``: what ``kspark describe`` prints;
- ``placement.py``: where each task of a micro-batch runs (sticky, state-first).
"""

__all__: list[str] = []
