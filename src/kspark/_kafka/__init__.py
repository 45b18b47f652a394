"""Kafka clients, admin helpers and the local broker kspark manages."""


class QuietLogger:
    """A ``logging.Logger`` stand-in for librdkafka clients: drops connection chatter.

    Failures still surface: through delivery reports, error callbacks and exceptions.
    """

    def log(self, *args: object, **kwargs: object) -> None:
        pass
