"""The task runtime: one task lifecycle for every execution mode and its supervision.

Imports the engine, ``_kafka``, ``_control`` and ``_iq``'s query host; never ``_spark`` or
pyspark (the drivers in ``_spark`` import it).

- ``task.py``: :class:`HostedTask`, the lifecycle (open, acquire, begin, feed, punctuate,
  commit, abort, release), driven by the micro-batch driver (``_spark/task_batch.py``) and
  the real-time loop (``_spark/realtime/stream_thread.py``);
- ``task_manager.py``: :class:`TaskManager`, one per worker: keeps the worker's tasks and
  hands each ``HostedTask`` its collaborators;
- ``supervision.py``: ``RunHandle`` (what both drivers' runs offer the application) and
  ``Restarts`` (the one restart decision, its bound and back-off);
- ``rules.py``: its decisions (the kept-task rule, the commit order), pure;
- ``port.py``: ``TaskIO``, its only door to Kafka; ``kafka_io.py`` implements it;
- ``context.py``: ``HostContext``, what a sub-topology's tasks share, made once;
- ``metrics.py``, ``progress.py``: ``TaskMetrics`` and the one ``progress()`` shape;
- ``runner.py``: the ``Runner`` protocol ``KafkaStreams`` drives;
- ``state.py``, ``restore.py``, ``hooks.py``: what the host keeps of a task, its restore
  and checkpoint, and the hooks tests inject;
- ``standby.py``, ``start_offsets.py``, ``lags.py``: standby copies, where a task starts,
  and the local stores' lags.
"""

__all__: list[str] = []
