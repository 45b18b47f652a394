"""``kspark run``: run an application from the command line, for a scheduler (cron, Airflow,
a Spark job scheduler) to drive.

The application is ``module:attr`` (importable from the current directory or the Python
path) or ``path/to/file.py:attr``, where ``attr`` is a
``Topology``, a ``StreamsBuilder``, or a function of no arguments returning either. Its
config comes from a properties file (``key=value`` lines; ``#`` and ``!`` start comments)
and ``--set key=value`` overrides, checked as every StreamsConfig is.

Exit codes: 0 when a batch run (``autostop.at=eol``) finished, that is reached its stop
offsets; 2 when the application could not start or failed; 130 when interrupted (Ctrl-C:
the batch run stays unfinished and the next start resumes it). Output, the same in both
execution modes (see ``_cli/live_view.py``): a start line; every ``--every`` seconds (default
5, 0: none) a live line with the client's state, records in and out (total and per
second), lag per input topic, commits, restores, task moves and dropped records; a summary
line when the run ends, saying how it ended (finished its batch run, stopped, interrupted,
failed).

Example:
    >>> parse_properties("# job\\napplication.id = hourly\\nmax.offsets.per.trigger=5000\\n")
    {'application.id': 'hourly', 'max.offsets.per.trigger': '5000'}
"""

from __future__ import annotations

import importlib
import importlib.util
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from time import monotonic

from kspark._control.stop_offsets import format_offsets
from kspark._cli.live_view import DEFAULT_EVERY_S, LiveView, Reading, read, summary
from kspark._cli.properties import read_config_file
from kspark.config import StreamsConfig, parse_properties
from kspark.errors import ConfigError
from kspark.processor.topology import Topology

__all__ = ["run_application", "load_topology", "parse_properties"]

_POLL_S = 0.5  # how often the run checks whether it ended and whether a line is due


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
                    out: Callable[[str], None] = print, every: float = DEFAULT_EVERY_S) -> int:
    """Run the application until its batch run finishes (or, streaming, until interrupted),
    a live line every ``every`` seconds (0: none) and a summary at the end."""
    from kspark.streams import KafkaStreams

    config = _config(config_file, overrides)
    app, batch = config["application.id"], config["autostop.at"] == "eol"
    streams = KafkaStreams(load_topology(spec), config)
    started = monotonic()
    streams.start()
    _plain_ctrl_c()
    out(f"kspark run: application {app!r} started (batch run); stop offsets "
        f"{format_offsets(streams.stop_offsets())}" if batch
        else f"kspark run: application {app!r} started (streaming; Ctrl-C stops it)")
    if streams.metrics_http_port() is not None:
        out(f"kspark run: metrics on http://{config['metrics.http.host']}:"
            f"{streams.metrics_http_port()}/metrics (/health/live, /health/ready)")
    view = LiveView(every, read(streams, monotonic()) or Reading(started, None))

    def end(ended: str, tail: str = "") -> None:
        now = monotonic()
        last = read(streams, now) or view.last
        out(summary(app, ended, last, now - started) + tail)

    try:
        while not streams.await_termination(_POLL_S):
            text = view.tick(monotonic(), lambda: read(streams, monotonic()))
            if text is not None:
                out(text)
    except KeyboardInterrupt:
        streams.close()
        end("interrupted", "; the batch run is unfinished and the next start resumes it"
            if batch else "")
        return 130
    except Exception:
        end("failed")
        raise
    end("finished its batch run" if batch else "stopped",
        f"; stop offsets reached: {format_offsets(streams.stop_offsets())}" if batch else "")
    streams.close()
    return 0


def _plain_ctrl_c() -> None:
    """Ctrl-C raises KeyboardInterrupt, and nothing else: PySpark's own SIGINT handler
    (installed with the SparkContext) first cancels every Spark job, which a real-time
    thread's supervisor may see, before ``close()`` runs, as its thread failing: the run
    would then end with an error instead of stopping cleanly through ``close()``."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _config(config_file: Path | None, overrides: list[str]) -> StreamsConfig:
    """The properties file's keys, then the ``--set key=value`` overrides, checked."""
    props = read_config_file(config_file)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r} is not 'key=value'")
        props[key.strip()] = value.strip()
    return StreamsConfig(props)
