"""``kspark.spark.read_topic``: a kspark topic as a DataFrame (``topic_source.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame

from kspark._interop.rows import TopicRows
from kspark._kafka.settings import ClientSettings
from kspark._spark.session import ensure_registered
from kspark._spark.topic_source import TopicRead, topic_source_for

__all__ = ["read_topic", "topic_read"]


def topic_read(topic: str, key_serde: Any, value_serde: Any, config: Any, **more: Any
               ) -> TopicRead:
    """The :class:`TopicRead` of ``topic`` with the serdes (None: the config's defaults)
    and the clients of ``config`` (a StreamsConfig)."""
    from kspark._graph.instantiate import resolve_serde

    rows = TopicRows(resolve_serde(key_serde, config, "key", f"read_topic({topic!r})"),
                     resolve_serde(value_serde, config, "value", f"read_topic({topic!r})"))
    return TopicRead(topic, rows, ClientSettings.from_config(config),
                     config["errors.dead.letter.queue.topic.name"],
                     max_offsets=int(config["max.offsets.per.trigger"]),
                     timeout_ms=int(config["request.timeout.ms"]),
                     read_timeout_ms=int(config["source.read.timeout.ms"]), **more)


def read_topic(spark: Any, topic: str, key_serde: Any = None, value_serde: Any = None,
               streaming: bool = False, config: Mapping[str, Any] | None = None) -> DataFrame:
    """See :func:`kspark.spark.read_topic`."""
    from kspark.config import StreamsConfig

    props = {"application.id": "kspark-read-topic", "bootstrap.servers": "127.0.0.1:9092",
             **(config or {})}
    read = topic_read(topic, key_serde, value_serde, StreamsConfig(props))
    ensure_registered(spark)
    fmt = topic_source_for(spark, read)
    return (spark.readStream if streaming else spark.read).format(fmt).load()
