"""Kafka clients and admin: the one factory every client comes from, its settings,
transactions, offsets and the readers of ranges and changelogs.

Imports only the engine's values and ``config``; imported by every host package."""


class QuietLogger:
    """A ``logging.Logger`` stand-in for librdkafka clients: drops connection chatter.

    Failures still surface: through delivery reports, error callbacks and exceptions.
    """

    def log(self, *args: object, **kwargs: object) -> None:
        pass
