"""``kspark run``: run an application from the command line, for a scheduler (cron, Airflow,
a Spark job scheduler) to drive.

The application is ``module:attr`` (importable from the current directory or the Python
path) or ``path/to/file.py:attr``, where ``attr`` is a
``Topology``, a ``StreamsBuilder``, or a function of no arguments returning either. Its
config comes from a properties file (``key=value`` lines; ``#`` and ``!`` start comments)
and ``--set key=value`` overrides, checked as every StreamsConfig is.

Exit codes: 0 when a batch run (``autostop.at=eol``) finished, that is reached its stop
offsets; 2 when the application could not start or failed; 130 when interrupted (Ctrl-C:
the batch run stays unfinished and the next start resumes it). A line per completed
micro-batch shows progress; the last line sums the run up.

Example:
    >>> parse_properties("# job\\napplication.id = hourly\\nmax.offsets.per.trigger=5000\\n")
    {'application.id': 'hourly', 'max.offsets.per.trigger': '5000'}
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kspark._kafka.stopoffsets import format_offsets
from kspark.config import StreamsConfig, parse_properties
from kspark.errors import ConfigError
from kspark.processor.topology import Topology

__all__ = ["run_application", "load_topology", "parse_properties"]


def load_topology(spec: str) -> Topology:
    """The topology named by ``module:attr`` or ``file.py:attr``."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ConfigError(f"application {spec!r} is not 'module:attr' or 'file.py:attr'")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ConfigError(f"application file {where!r} does not exist")
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[path.stem] = module
        mod_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))  # as `python -m`: modules of the current directory
        module = importlib.import_module(where)
    if not hasattr(module, attr):
        raise ConfigError(f"{where!r} has no attribute {attr!r}")
    obj = getattr(module, attr)
    if callable(obj) and not isinstance(obj, Topology) and not hasattr(obj, "build"):
        obj = obj()
    if hasattr(obj, "build") and not isinstance(obj, Topology):
        obj = obj.build()
    if not isinstance(obj, Topology):
        raise ConfigError(f"{spec!r} is a {type(obj).__name__}, not a Topology, a StreamsBuilder "
                          "or a function returning one")
    return obj


def run_application(spec: str, config_file: Path | None, overrides: list[str],
                    out: Callable[[str], None] = print) -> int:
    """Run the application until its batch run finishes (or, streaming, until interrupted)."""
    from kspark.streams import KafkaStreams

    props: dict[str, Any] = parse_properties(config_file.read_text()) if config_file else {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r} is not 'key=value'")
        props[key.strip()] = value.strip()
    config = StreamsConfig(props)
    app = config["application.id"]
    topology = load_topology(spec)
    streams = KafkaStreams(topology, config)
    started = time.monotonic()
    streams.start()
    mode = "batch run" if config["autostop.at"] == "eol" else "streaming"
    out(f"kspark run: application {app!r} started ({mode}); stop offsets "
        f"{format_offsets(streams.stop_offsets())}" if mode == "batch run"
        else f"kspark run: application {app!r} started (streaming; Ctrl-C stops it)")
    shown = 0
    try:
        while not streams.await_termination(0.5):
            shown = _show(streams, shown, out)
    except KeyboardInterrupt:
        streams.close()
        out(f"kspark run: application {app!r} interrupted after {time.monotonic() - started:.1f} s"
            + ("; the batch run is unfinished and the next start resumes it"
               if mode == "batch run" else ""))
        return 130
    _show(streams, shown, out)
    p = streams.progress()
    streams.close()
    if mode != "batch run":
        out(f"kspark run: application {app!r} stopped")
        return 0
    out(f"kspark run: application {app!r} finished its batch run: {p['records_in']} records in, "
        f"{p['records_out']} records out, {time.monotonic() - started:.1f} s; stop offsets "
        f"reached: {format_offsets(streams.stop_offsets())}")
    return 0


def _show(streams: Any, shown: int, out: Callable[[str], None]) -> int:
    if streams.config["execution.mode"] == "real_time":
        return _show_live(streams, shown, out)
    p = streams.progress()
    if p["batches"] != shown:
        out(f"kspark run: micro-batch {p['batches']} done: {p['records_in']} records in, "
            f"{p['records_out']} records out so far")
    return p["batches"]


_LIVE_EVERY_S = 2.0
_last_live = [0.0]


def _show_live(streams: Any, shown: int, out: Callable[[str], None]) -> int:
    """Real-time mode: the threads' live counts, lag, rate and commit latency, at most every
    2 s and only when records came in; ``shown``: the records-in count last shown."""
    now = time.monotonic()
    if now - _last_live[0] < _LIVE_EVERY_S:
        return shown
    p = streams.progress()
    if p["records_in"] == shown:
        return shown
    _last_live[0] = now
    threads = streams.metrics().get("stream_threads", {}).values()
    rate = sum(m["process_rate"] for m in threads)
    commit = max((m["commit_latency_max_ms"] for m in threads), default=0.0)
    out(f"kspark run: {p['records_in']} records in, {p['records_out']} out, lag {p['lag']}, "
        f"{rate:.0f} records/s, commit {commit:.0f} ms (real-time epoch {p['batches'] + 1})")
    return int(p["records_in"])
