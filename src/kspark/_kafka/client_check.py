"""Check the application's Kafka client settings at start: build each kind of client once,
so a bad librdkafka setting fails naming its keys, not in the first task.

Example:
    >>> from kspark.errors import ConfigError
    >>> try:
    ...     check_client_configs({"application.id": "app", "bootstrap.servers": "localhost:1",
    ...                           "producer.linger.ms": "soon"})
    ... except ConfigError as e:
    ...     print(str(e).split(":")[0])
    invalid Kafka client setting for kspark's producer clients among ['producer.linger.ms']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer

from kspark._graph.resources import check_group
from kspark._kafka import QuietLogger
from kspark._kafka.settings import as_settings
from kspark.errors import ConfigError

__all__ = ["check_client_configs"]


def check_client_configs(config: Mapping[str, Any]) -> None:
    """Build each kind of client once from the application's settings, so a bad librdkafka
    setting fails at start, naming the keys, not in the first task."""
    from confluent_kafka.admin import AdminClient


    settings = as_settings(config)
    for kind, make, owned in (("producer", Producer, {}),
                              ("consumer", Consumer, {"group.id": check_group(settings.app_id)}),
                              ("restore.consumer", Consumer,
                               {"group.id": check_group(settings.app_id)}),
                              ("admin", AdminClient, {})):
        conf = settings.conf(kind, "config-check", owned)
        try:
            client = make({**conf, "logger": QuietLogger()})
        except (KafkaException, ValueError, TypeError) as e:
            detail = e.args[0].str() if isinstance(e, KafkaException) else str(e)
            keys = sorted(k for k in config if k.startswith(f"{kind}.") or
                          k in dict(settings.common))
            raise ConfigError(f"invalid Kafka client setting for kspark's {kind} clients "
                              f"among {keys}: {detail}") from None
        if isinstance(client, Consumer):
            client.close()
