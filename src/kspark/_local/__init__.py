"""Local development infrastructure kspark starts on this machine: a KRaft broker,
a three-node cluster, TLS material, Kafka's jars and a schema registry.

Imported by the tests, the CLI, the demo and the Spark Connect launcher; never by a task.
"""

__all__: list[str] = []
