"""The ``KafkaStreams`` client's own machinery: its state machine, the supervisor
that moves it as the run does, and the metrics HTTP endpoint.

Imports ``_host`` (the run's protocol); imported by ``streams.py`` and ``_spark``.
"""

__all__: list[str] = []
