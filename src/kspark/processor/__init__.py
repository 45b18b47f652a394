"""The Processor API: write your own processors and wire them into a Topology.

Example:
    >>> from kspark.processor import Processor, Record
    >>> class Double(Processor):
    ...     def init(self, context):
    ...         self.context = context
    ...     def process(self, record: Record):
    ...         self.context.forward(record.with_value(record.value * 2))
"""

from kspark._engine.api import Processor, ProcessorContext, Record, RecordMetadata
from kspark._engine.async_.processor import AsyncProcessor
from kspark._engine.async_.runtime import RetryPolicy
from kspark._engine.punctuation import Cancellable, PunctuationType
from kspark.processor.description import TopologyDescription
from kspark.processor.key_value import KeyValue
from kspark.processor.topology import Topology

__all__ = ["AsyncProcessor", "Cancellable", "KeyValue", "Processor", "ProcessorContext",
           "PunctuationType", "Record", "RecordMetadata", "RetryPolicy", "Topology",
           "TopologyDescription"]
