"""examples/word_count_iq.py runs a streaming word count and answers lookups of its store
from a plain HTTP handler (issue 45)."""

from __future__ import annotations

import json
import pathlib
import runpy
import threading
import urllib.request

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "word_count_iq.py"


def test_the_word_count_example_answers_lookups(broker, spark, capsys):
    example = runpy.run_path(str(EXAMPLE), run_name="word_count_iq_example")
    assert example["main"](["--bootstrap-servers", broker, "--once", "--port", "0"],
                           spark=spark) == 0
    assert capsys.readouterr().out.splitlines() == [
        "kafka: 4", "spark: 2", "streams: 2", "python: 0"]


def test_the_handler_answers_from_the_store():
    """The HTTP handler itself, over a store that answers as the running one would."""
    from http.server import ThreadingHTTPServer

    example = runpy.run_path(str(EXAMPLE), run_name="word_count_iq_example")

    class Counts:
        def get(self, word):
            return {"kafka": 4}.get(word)

    server = ThreadingHTTPServer(("127.0.0.1", 0), example["handler"](Counts(), None, "t"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/count/"
        assert json.load(urllib.request.urlopen(url + "Kafka", timeout=10)) == {
            "word": "kafka", "count": 4}
        assert json.load(urllib.request.urlopen(url + "flink", timeout=10))["count"] == 0
    finally:
        server.shutdown()
        server.server_close()
