"""Kafka Streams' metrics (``KafkaStreams.metrics()``): names, what a task records, and the
mapping the driver builds from it.

- :mod:`.names`: :class:`MetricName`, :class:`Metric` and the recording levels;
- :mod:`.stats`: what a task records while it processes (:class:`TaskStats`), as additive
  counts that travel from executors to the driver and sum there;
- :mod:`.catalog`: which Java metric (name, group, tags, level, description) each count
  becomes, and :func:`build_metrics`, the driver's ``{MetricName: Metric}``.
"""
