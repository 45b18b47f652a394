"""The task runtime: one task lifecycle for every execution mode; imports no pyspark.

- ``task.py``: :class:`HostedTask`, the lifecycle (open, acquire, begin, feed, punctuate,
  commit, abort, release), driven by the micro-batch driver (``_spark/task_batch.py``) and
  the real-time loop (``_spark/realtime/stream_thread.py``);
- ``rules.py``: its decisions (the kept-task rule, the commit order), pure;
- ``port.py``: ``TaskIO``, its only door to Kafka; ``kafka_io.py`` implements it;
- ``context.py``: ``HostContext``, what a sub-topology's tasks share, made once;
- ``metrics.py``, ``progress.py``: ``TaskMetrics`` and the one ``progress()`` shape;
- ``runner.py``: the ``Runner`` protocol ``KafkaStreams`` drives;
- ``state.py``, ``restore.py``, ``hooks.py``: what the host keeps of a task, its restore
  and checkpoint, and the hooks tests inject.
"""

__all__: list[str] = []
