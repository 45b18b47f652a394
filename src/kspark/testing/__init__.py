"""Test utilities: the TopologyTestDriver runs topologies in-process, in milliseconds.

It imports neither pyspark nor confluent_kafka.

Example:
    >>> from kspark.testing import TopologyTestDriver
"""

from kspark.testing.driver import TopologyTestDriver
from kspark.testing.records import NoSuchElementError, TestRecord
from kspark.testing.topics import TestInputTopic, TestOutputTopic

__all__ = ["TopologyTestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord",
           "NoSuchElementError"]
