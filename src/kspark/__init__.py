"""kspark: Kafka Streams for Python, executed on Apache Spark.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    >>> topology = b.build()
"""

from kspark.config import StreamsConfig
from kspark.dsl import (
    BufferConfig,
    EmitStrategy,
    Joined,
    StreamJoined,
    JoinWindows,
    Suppressed,
    KGroupedStream,
    GlobalKTable,
    KStream,
    KTable,
    Materialized,
    SessionWindowedSerde,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindowedSerde,
    TimeWindows,
    Window,
    Windowed,
)
from kspark.errors import KSparkError
from kspark.processor import Topology
from kspark.serde import Serde, Serdes
from kspark.streams import KafkaStreams, spark_session

__all__ = [
    "BufferConfig",
    "EmitStrategy",
    "Joined",
    "StreamJoined",
    "JoinWindows",
    "Suppressed",
    "KafkaStreams",
    "KSparkError",
    "KGroupedStream",
    "GlobalKTable",
    "KStream",
    "KTable",
    "Materialized",
    "Serde",
    "Serdes",
    "SessionWindowedSerde",
    "SessionWindows",
    "SlidingWindows",
    "StreamsBuilder",
    "StreamsConfig",
    "TimeWindowedSerde",
    "TimeWindows",
    "Topology",
    "Window",
    "Windowed",
    "spark_session",
]
__version__ = "0.1.0"
