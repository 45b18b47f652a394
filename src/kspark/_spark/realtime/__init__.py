"""Real-time execution mode (``execution.mode=real_time``): long-running Spark tasks.

Each Spark task of an *epoch* (one Spark job, ``real_time.epoch.ms`` long) is a stream
thread: it hosts a fixed set of kspark tasks and runs Kafka Streams' own loop over them —
poll, process, produce, and commit every ``commit.interval.ms`` — until the epoch ends or
the application stops. Kafka is the only truth for progress: a thread resumes from its
consumer group's committed offsets and each task's marker.

- ``polled.py``: what a thread holds of a task's input between polls;
- ``stream_thread.py``: :func:`run_stream_thread`, the loop of one thread;
- ``query.py``: :class:`RealTimeQuery`, the driver side (epochs, stop, progress);
- ``layout.py``: every task of every sub-topology, and the repartition topics between them;
- ``thread_metrics.py``: the threads' live metrics, and the driver's sum of them;
- ``batch_end.py``: when a batch run (``autostop.at=eol``) is over;
- ``checks.py``: what the mode runs, and what it refuses (with the alternative).
"""

__all__: list[str] = []
