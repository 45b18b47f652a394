"""kspark and Spark: a kspark topic as a DataFrame (``read_topic``); the Spark sinks of a
topology are ``KStream.to_spark`` and ``KStream.foreach_batch`` (docs/spark-interop.md).

Example (needs Spark and a broker, so not run)::

    from kspark import Serdes
    from kspark.spark import read_topic

    counts = read_topic(spark, "counts", Serdes.String(), Serdes.Long(),
                        config={"bootstrap.servers": "127.0.0.1:9092"})
    counts.where("value > 10").show()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["read_topic"]


def read_topic(spark: Any, topic: str, key_serde: Any = None, value_serde: Any = None,
               streaming: bool = False, config: Mapping[str, Any] | None = None) -> Any:
    """A DataFrame of ``topic``'s records, read with read_committed, the key and value
    decoded by kspark's serdes (None: ``default.key.serde``/``default.value.serde`` of
    ``config``) into typed columns: ``key`` (with ``window_start`` and ``window_end`` for
    a windowed key), ``value``, ``topic``, ``partition``, ``offset``, ``timestamp`` and
    ``headers``. ``Long`` is a bigint, ``String`` a string; Avro (with a schema or record
    type) and JSON Schema with a record type are structs; JSON without a schema is JSON
    text. ``streaming``: a streaming DataFrame (``spark.readStream``) instead of what the
    topic holds now. ``config``: kspark's client settings (``bootstrap.servers``,
    ``security.protocol``, ``sasl.*``, ``consumer.*``, ``schema.registry.*``...;
    default ``bootstrap.servers`` 127.0.0.1:9092). A record the serdes cannot read fails
    the read, naming it, unless ``errors.dead.letter.queue.topic.name`` is set (it goes
    there). Works on classic and Spark Connect sessions.
    """
    from kspark._spark.read_topic import read_topic as read

    return read(spark, topic, key_serde, value_serde, streaming, config)
