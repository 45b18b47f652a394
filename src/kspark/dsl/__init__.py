"""The KStream DSL.

Example:
    >>> from kspark.dsl import StreamsBuilder
    >>> b = StreamsBuilder()
"""

from kspark.dsl.builder import StreamsBuilder
from kspark.dsl.grouped import KGroupedStream
from kspark.dsl.global_table import GlobalKTable
from kspark.dsl.kstream import KStream
from kspark.dsl.grouped_table import KGroupedTable
from kspark.dsl.ktable import KTable
from kspark.dsl.cogrouped import CogroupedKStream
from kspark.dsl.joined import Joined, StreamJoined
from kspark.dsl.materialized import Materialized
from kspark.dsl.branched import Branched
from kspark.dsl.named import Grouped, Named, Printed, TableJoined
from kspark.dsl.topic_options import AutoOffsetReset, Consumed, Produced, Repartitioned
from kspark._engine.aggregates.emit import EmitStrategy
from kspark._engine.joins.stream_stream import JoinWindows
from kspark._engine.tables.suppress import BufferConfig, Suppressed
from kspark._engine.aggregates.windows import (
    SessionWindowedSerde,
    SessionWindows,
    SlidingWindows,
    TimeWindowedSerde,
    TimeWindows,
    Window,
    Windowed,
)

__all__ = ["StreamsBuilder", "KStream", "KTable", "KGroupedStream", "KGroupedTable",
           "Materialized", "TimeWindows", "TimeWindowedSerde", "Window", "Windowed",
           "SessionWindows", "SlidingWindows", "SessionWindowedSerde", "Suppressed", "BufferConfig",
           "JoinWindows", "CogroupedKStream", "EmitStrategy", "Joined", "StreamJoined",
           "GlobalKTable", "Branched", "Grouped", "Named", "Printed", "TableJoined",
           "AutoOffsetReset", "Consumed", "Produced", "Repartitioned"]
