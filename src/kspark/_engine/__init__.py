"""The one engine: tasks, processor nodes, stream time. Hosted by the test driver and by Spark.

At the top level: the task and what runs it (``task``, ``nodes``, ``context``,
``partition_group``, ``punctuation``, ``collector``, ``timestamps``, ``partitioner``,
``progress``, ``documents``, ``global_task``), the Processor API the engine calls
(``api``) and the stateless operators (``operators``, ``values``). Grouped by concern below
it: ``tables``, ``aggregates``, ``joins``, ``async_`` and ``state``.
"""
