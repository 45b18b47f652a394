"""Metrics, as Kafka's ``org.apache.kafka.common.MetricName`` and ``Metric``:
``KafkaStreams.metrics()`` and ``TopologyTestDriver.metrics()`` return a :class:`Metrics`
(``{MetricName: Metric}``). What each metric means on Spark: docs/operations.md.

Example:
    >>> from kspark.metrics import MetricName
    >>> MetricName("process-rate", "stream-task-metrics", "", {"task-id": "0_0"}).tags
    {'task-id': '0_0'}
"""

from __future__ import annotations

from kspark._engine.metrics.names import Metric, MetricName, Metrics

__all__ = ["MetricName", "Metric", "Metrics"]
