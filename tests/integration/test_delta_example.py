"""examples/delta_sink.py runs against a broker, writes its per-minute counts to a Delta
table, reads the table back with ``spark.read`` and the Kafka topic with ``read_topic``, and
prints them (issue 44)."""

from __future__ import annotations

import pathlib
import runpy

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "delta_sink.py"


def test_the_delta_example_prints_the_counts_from_the_table_and_the_topic(broker, spark,
                                                                          capsys, tmp_path):
    example = runpy.run_path(str(EXAMPLE), run_name="delta_sink_example")
    table = str(tmp_path / "page_counts")
    assert example["main"](["--bootstrap-servers", broker, "--table", table], spark=spark) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"Delta table {table} (version ")
    # each view's count update, in window order (no cache: every update is a row)
    assert [line.strip().split(" ", 1)[0] + " " + line.strip().rsplit(" ", 1)[1]
            for line in lines[1:7]] == ["/docs 1", "/docs 2", "/home 1",
                                        "/docs 1", "/docs 2", "/home 1"]
    assert lines[7].endswith(": 6 counts, the same rows")
