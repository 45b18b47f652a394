"""What ``KafkaStreams`` runs: one protocol for every execution mode (and every host).

``kspark._spark.app.SparkApplication`` implements it; the execution mode is a driver behind
it (``_spark/modes.py``), never a branch in the application.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Runner"]


class Runner(Protocol):
    """A running application: start it, wait for it, stop it, and read its progress (one
    shape: ``_host/progress.py``) and metrics (``KafkaStreams.metrics()``'s mapping)."""

    stop_offsets: dict[tuple[str, int], int] | None  # a batch run's (KIP-95), else None
    finished: bool  # a batch run reached its stop offsets

    def start(self) -> None: ...

    def await_termination(self, timeout_s: float | None) -> bool: ...

    def stop(self, timeout_s: float | None) -> None: ...

    def progress(self) -> dict[str, int]: ...

    def metrics(self) -> Any: ...  # a Metrics: {MetricName: Metric}

    def ready(self) -> bool: ...  # RUNNING: the tasks are open and restored

    def store_lags(self) -> dict[str, dict[int, Any]]: ...  # {store: {partition: LagInfo}}
