"""spark_session() prepares kspark's data source in the background only for micro-batch mode
(real-time mode reads no data source: Spark's planning processes would only compete with
its threads' start-up; docs/performance.md, "Start-up")."""

from __future__ import annotations

from typing import Any

import pytest

import kspark._spark.session as session
from kspark import spark_session
from kspark.config import StreamsConfig


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict, bool]]:
    calls: list[tuple[dict, bool]] = []

    def build(spark_conf: Any = None, prepare_source: bool = True) -> str:
        calls.append((dict(spark_conf or {}), prepare_source))
        return "session"

    monkeypatch.setattr(session, "build_session", build)
    return calls


def test_the_default_mode_real_time_starts_no_data_source_processes(built):
    assert spark_session() == "session"
    assert built == [({}, False)]


def test_micro_batch_prepares_the_source_and_passes_only_spark_keys(built):
    spark_session({"execution.mode": "micro_batch", "spark.master": "local[1]"})
    assert built == [({"spark.master": "local[1]"}, True)]


def test_a_streams_config_gives_its_mode(built):
    spark_session(StreamsConfig({"application.id": "a", "bootstrap.servers": "b:9092",
                                 "execution.mode": "micro_batch"}))
    spark_session(StreamsConfig({"application.id": "a", "bootstrap.servers": "b:9092",
                                 "execution.mode": "real_time"}))
    assert [prepared for _, prepared in built] == [True, False]
