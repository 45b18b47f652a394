"""Test utilities: the TopologyTestDriver runs topologies in-process, in milliseconds.

It imports neither pyspark nor confluent_kafka.

Example:
    >>> from kspark.testing import TopologyTestDriver
"""

from kspark.testing.driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver

__all__ = ["TopologyTestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord"]
