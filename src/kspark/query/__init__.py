"""Interactive queries (IQv2, Java's ``org.apache.kafka.streams.query``): ask a store a
:class:`Query` through a :class:`StateQueryRequest`; each partition answers a
:class:`QueryResult`, together a :class:`StateQueryResult`.

Example:
    >>> from kspark import Materialized, Serdes, StreamsBuilder
    >>> from kspark.testing import TopologyTestDriver
    >>> b = StreamsBuilder()
    >>> _ = b.stream("in", key_serde=Serdes.String(), value_serde=Serdes.String()) \\
    ...  .group_by_key().count(Materialized.as_("counts"))
    >>> with TopologyTestDriver(b.build()) as d:
    ...     d.create_input_topic("in", Serdes.String(), Serdes.String()).pipe_input("a", "x")
    ...     r = d.query(StateQueryRequest.in_store("counts").with_query(KeyQuery.with_key("a")))
    >>> r.get_only_partition_result().get_result()
    1
"""

from kspark.query.position import Position, PositionBound, dominates
from kspark.query.queries import (
    KeyQuery,
    Query,
    RangeQuery,
    ResultOrder,
    TimestampedKeyQuery,
    TimestampedRangeQuery,
)
from kspark.query.request import StateQueryRequest
from kspark.query.results import FailureReason, QueryResult, StateQueryResult
from kspark.query.time_queries import (
    MultiVersionedKeyQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)

__all__ = ["Position", "PositionBound", "dominates", "Query", "ResultOrder", "KeyQuery",
           "TimestampedKeyQuery", "RangeQuery", "TimestampedRangeQuery", "WindowKeyQuery",
           "WindowRangeQuery", "VersionedKeyQuery", "MultiVersionedKeyQuery",
           "StateQueryRequest", "FailureReason", "QueryResult", "StateQueryResult"]
