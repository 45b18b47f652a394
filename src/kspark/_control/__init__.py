"""What a kspark application keeps in Kafka about itself: its control topic's
messages (assignment, stop, metrics reports), the stop offsets of a batch run, the
instance guard and the reset tool.

Imports ``_kafka`` (clients, admin) and the engine's values; imported by the hosts.
"""

__all__: list[str] = []
