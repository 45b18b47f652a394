"""Consumer and producer plumbing used inside tasks, gathered from the modules that hold it:
read an offset range (:mod:`~kspark._kafka.range_reader`), write with a task's producer
(:mod:`~kspark._kafka.task_producer`), commit and read the group's offsets
(:mod:`~kspark._kafka.group_offsets`), check the client settings at start
(:mod:`~kspark._kafka.client_check`).

Example:
    >>> from kspark._kafka.clients import read_range, task_producer
    >>> read_range.__module__, task_producer.__module__
    ('kspark._kafka.range_reader', 'kspark._kafka.task_producer')
"""

from __future__ import annotations

from kspark._kafka.client_check import check_client_configs
from kspark._kafka.group_offsets import commit_offsets, committed_offsets, group_reader
from kspark._kafka.range_reader import read_range
from kspark._kafka.task_producer import TaskProducer, task_producer

__all__ = ["read_range", "TaskProducer", "task_producer", "group_reader", "commit_offsets",
           "committed_offsets", "check_client_configs"]
