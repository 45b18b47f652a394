"""What real-time mode runs, and what it refuses (naming the alternative), at start.

>>> from kspark.errors import ConfigError
>>> threads_for(None, tasks=4, slots=2)
2
>>> threads_for(8, tasks=4, slots=8)  # no thread without a task
4
>>> try:
...     threads_for(3, tasks=4, slots=2)
... except ConfigError as e:
...     print(str(e)[:95])
execution.mode=real_time runs every stream thread as a Spark task at once: num.stream.threads=3
"""

from __future__ import annotations

from typing import Any

from kspark._plan.plan import Member, QueryPlan
from kspark.errors import ConfigError

__all__ = ["real_time_members", "threads_for", "free_slots"]


def real_time_members(query: QueryPlan, graph: Any, config: Any) -> list[Member]:
    """The sub-topologies real-time mode runs: all of them (a key of the micro-batch mode
    alone is refused when the config is made: ``config.py``, each key's ``modes``)."""
    return query.members()


def threads_for(wanted: int | None, tasks: int, slots: int) -> int:
    """How many stream threads to run: ``num.stream.threads`` (``wanted``, capped at the
    task count), else the smaller of tasks and Spark's task slots; more than the slots is
    refused, since every thread must run at once."""
    threads = min(wanted or min(tasks, slots), tasks)
    if threads > slots:
        raise ConfigError(
            "execution.mode=real_time runs every stream thread as a Spark task at once: "
            f"num.stream.threads={wanted} needs {threads} free task slots, and Spark offers "
            f"{slots} (spark.default.parallelism). Lower num.stream.threads, give the "
            "application more executor cores, or use execution.mode=micro_batch")
    return max(threads, 1)


def free_slots(slots: int, spark_sinks: Any, batch_run: bool = False) -> int:
    """The task slots the stream threads may take: all of them, but one for the Spark
    sinks' queries when the topology has any and runs streaming (beside the long-running
    threads, the sinks need a slot of their own). A batch run (``autostop.at=eol``) leaves
    them all to the threads: the sinks write once the threads are done, before the run
    finishes, which is sooner on few slots than both sharing them all along.

    >>> free_slots(4, {}), free_slots(4, {"s": None}), free_slots(2, {"s": None}, True)
    (4, 3, 2)
    """
    if not spark_sinks or batch_run:
        return slots
    if slots < 2:
        raise ConfigError(
            f"execution.mode=real_time with Spark sinks {sorted(spark_sinks)} needs a task "
            f"slot for the sinks' queries beside the stream threads, and Spark offers {slots} "
            "(spark.default.parallelism): give the application more executor cores, use "
            "autostop.at=eol (a batch run) or execution.mode=micro_batch")
    return slots - 1
