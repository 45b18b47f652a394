"""Quix Streams: Application + StreamingDataFrame (runs in the peers' virtualenv).

W1: JSON deserializer, ``filter`` + ``apply``, JSON serializer. W2: a stateful ``apply``
keeping the count in Quix's RocksDB state (changelog topic on, Quix's default). The app
counts the input records it has seen and calls ``app.stop()`` after the last one.
"""

import sys
from pathlib import Path

from quixstreams import Application

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from workload import cli, enrich, long_bytes, passes  # noqa: E402


def main() -> None:
    a = cli()
    app = Application(broker_address=a.bootstrap, consumer_group=f"quix-{a.dst}",
                      auto_offset_reset="earliest", state_dir=str(Path(a.workdir) / "state"),
                      loglevel="WARNING")
    fmt = "json" if a.workload == "w1" else "bytes"
    src = app.topic(a.src, key_deserializer="bytes", value_deserializer=fmt)
    dst = app.topic(a.dst, key_serializer="bytes", value_serializer=fmt)
    sdf = app.dataframe(src)

    seen = 0

    def tick(_value) -> None:
        nonlocal seen
        seen += 1
        if seen == a.records:
            app.stop()  # the current record still runs through; then Quix commits and exits

    sdf = sdf.update(tick)
    if a.workload == "w1":
        sdf = sdf.filter(passes).apply(enrich)
    else:
        def count(_value, state) -> bytes:
            n = state.get("n", 0) + 1
            state.set("n", n)
            return long_bytes(n)

        sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(dst)
    app.run()


if __name__ == "__main__":
    main()
