"""The KStream DSL.

Example:
    >>> from kspark.dsl import StreamsBuilder
    >>> b = StreamsBuilder()
"""

from kspark.dsl.builder import StreamsBuilder
from kspark.dsl.kstream import KStream

__all__ = ["StreamsBuilder", "KStream"]
