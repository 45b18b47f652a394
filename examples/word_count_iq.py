"""A word count served over HTTP: interactive queries from a plain Python handler.

Start a local broker first (after ``make setup``, from the project's root):

    . .venv/bin/activate
    kspark broker start       # Kafka on 127.0.0.1:9092
    python examples/word_count_iq.py
    curl http://127.0.0.1:8000/count/kafka      # in another shell: {"word": "kafka", "count": 3}

It creates a topic of its own, ``lines-<run>``, writes a few lines of text, and runs a word
count (``flat_map_values`` -> ``group_by`` -> ``count(Materialized.as_("word-counts"))``) as
a streaming application on Spark. An HTTP server on ``--port`` answers ``GET /count/<word>``
with a ``store()`` lookup: the Spark worker holding the word's task answers from what it
last committed. ``POST /lines`` with a line of text in the body adds it to the topic.
Ctrl-C stops it. ``--once``: look up the example's words once, print them, and stop (what
the project's test does).

Elsewhere: ``--bootstrap-servers`` (or the environment variable ``KSPARK_BOOTSTRAP_SERVERS``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kspark import (KafkaStreams, Materialized, QueryableStoreTypes, Serdes,
                    StoreQueryParameters, StreamsBuilder)
from kspark.errors import StateStoreNotAvailableError

S = Serdes.String()
LINES = ["kafka streams on spark", "spark runs kafka streams", "kafka kafka"]


def topology(topic: str):
    b = StreamsBuilder()
    (b.stream(topic, key_serde=S, value_serde=S)
      .flat_map_values(lambda line: line.lower().split())
      .group_by(lambda _, word: word, key_serde=S, value_serde=S)
      .count(Materialized.as_("word-counts")))
    return b.build()


def handler(counts, producer: Producer, topic: str):
    """A request handler class answering from ``counts`` (a read-only store)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            prefix = "/count/"
            if not self.path.startswith(prefix):
                return self._send(404, {"error": "GET /count/<word>"})
            word = self.path[len(prefix):].lower()
            try:
                return self._send(200, {"word": word, "count": counts.get(word) or 0})
            except StateStoreNotAvailableError as e:  # restoring or moving: ask again
                return self._send(503, {"error": str(e)})

        def do_POST(self) -> None:  # noqa: N802
            line = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            producer.produce(topic, value=line.encode())
            producer.flush(10)
            self._send(202, {"added": line})

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:
            pass

    return Handler


def wait_for(counts, words: dict[str, int], timeout_s: float = 120) -> None:
    """Until the store holds ``words``' counts (the lines are processed and committed)."""
    deadline = time.monotonic() + timeout_s
    while any(counts.get(w) != n for w, n in words.items()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the counts did not reach {words}")
        time.sleep(0.2)


def main(argv: list[str] | None = None, spark=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers",
                    default=os.environ.get("KSPARK_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--once", action="store_true")
    a = ap.parse_args(argv)
    run = uuid.uuid4().hex[:8]
    topic = f"lines-{run}"
    admin = AdminClient({"bootstrap.servers": a.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": a.bootstrap_servers})
    for line in LINES:
        producer.produce(topic, value=line.encode())
    producer.flush(10)
    streams = KafkaStreams(topology(topic), {
        "application.id": f"word-count-{run}", "bootstrap.servers": a.bootstrap_servers,
        "state.dir": tempfile.mkdtemp(prefix="word-count-"), "commit.interval.ms": 200},
        spark=spark)
    streams.start()
    counts = streams.store(StoreQueryParameters.from_name_and_type(
        "word-counts", QueryableStoreTypes.key_value_store()))
    server = ThreadingHTTPServer(("127.0.0.1", a.port), handler(counts, producer, topic))
    try:
        wait_for(counts, {"kafka": 4, "spark": 2, "streams": 2})
        if a.once:
            for word in ("kafka", "spark", "streams", "python"):
                print(f"{word}: {counts.get(word) or 0}")
            return 0
        print(f"serving http://127.0.0.1:{server.server_port}/count/<word> (Ctrl-C stops)")
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        streams.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
