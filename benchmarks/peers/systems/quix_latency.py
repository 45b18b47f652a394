"""Quix Streams as a passthrough for ``benchmarks/latency.py`` (runs in the peers' virtualenv).

Copies every record of ``--src`` to ``--dst`` unchanged (bytes in, bytes out) with Quix's
defaults (at-least-once, commit every 5 s), until the runner stops it (SIGTERM).

    python quix_latency.py --bootstrap HOST:PORT --src IN --dst OUT --workdir DIR
"""

import argparse
from pathlib import Path

from quixstreams import Application


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--bootstrap", "--src", "--dst", "--workdir"):
        ap.add_argument(name, required=True)
    a = ap.parse_args()
    app = Application(broker_address=a.bootstrap, consumer_group=f"quix-lat-{a.dst}",
                      auto_offset_reset="earliest", state_dir=str(Path(a.workdir) / "state"),
                      loglevel="WARNING")
    src = app.topic(a.src, key_deserializer="bytes", value_deserializer="bytes")
    dst = app.topic(a.dst, key_serializer="bytes", value_serializer="bytes")
    app.dataframe(src).to_topic(dst)
    app.run()  # Quix stops cleanly on SIGTERM


if __name__ == "__main__":
    main()
