"""kspark: Kafka Streams for Python, executed on Apache Spark.

Example:
    >>> from kspark import StreamsBuilder, Serdes
    >>> b = StreamsBuilder()
    >>> b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()).to("out")
    >>> topology = b.build()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kspark.config import StreamsConfig
    from kspark.dsl import (
        AutoOffsetReset,
        Branched,
        Consumed,
        Grouped,
        Named,
        Printed,
        Produced,
        Repartitioned,
        TableJoined,
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
    from kspark.processor import KeyValue, Topology, TopologyDescription
    from kspark.state import Stores
    from kspark.serde import Serde, Serdes
    from kspark.metrics import Metric, MetricName, Metrics
    from kspark.streams import KafkaStreams, StreamThreadExceptionResponse, spark_session
    from kspark.state.queryable import QueryableStoreTypes, StoreQueryParameters
    from kspark.streams_metadata import HostInfo, KeyQueryMetadata, StreamsMetadata

__all__ = [
    "AutoOffsetReset",
    "Branched",
    "Consumed",
    "Grouped",
    "KeyValue",
    "Named",
    "Printed",
    "Produced",
    "Repartitioned",
    "Stores",
    "TableJoined",
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
    "TopologyDescription",
    "Window",
    "Windowed",
    "spark_session",
    "Metric",
    "MetricName",
    "Metrics",
    "StreamThreadExceptionResponse",
    "StoreQueryParameters",
    "QueryableStoreTypes",
    "HostInfo",
    "KeyQueryMetadata",
    "StreamsMetadata",
    "LagInfo",
]

# Where each public name lives. They load on first use (PEP 562): `import kspark` alone stays
# cheap for the Python processes Spark starts to plan kspark's data source, which import
# kspark._spark.source and so this package, but need none of the DSL.
_HOME = {
    "StreamsConfig": "kspark.config",
    "KSparkError": "kspark.errors",
    "Topology": "kspark.processor",
    "TopologyDescription": "kspark.processor",
    "KeyValue": "kspark.processor",
    "Stores": "kspark.state",
    "Serde": "kspark.serde",
    "Serdes": "kspark.serde",
    "KafkaStreams": "kspark.streams",
    "spark_session": "kspark.streams",
    "StreamThreadExceptionResponse": "kspark.streams",
    "Metric": "kspark.metrics",
    "MetricName": "kspark.metrics",
    "Metrics": "kspark.metrics",
    "StoreQueryParameters": "kspark.state.queryable",
    "QueryableStoreTypes": "kspark.state.queryable",
    "HostInfo": "kspark.streams_metadata",
    "KeyQueryMetadata": "kspark.streams_metadata",
    "StreamsMetadata": "kspark.streams_metadata",
    "LagInfo": "kspark.streams_metadata",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use.

    >>> import kspark
    >>> kspark.Serdes.String().__class__.__name__
    'StringSerde'
    """
    if name not in __all__:
        raise AttributeError(f"module 'kspark' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME.get(name, "kspark.dsl")), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
__version__ = "0.1.0"
