"""The metrics HTTP endpoint: ``/metrics`` for Prometheus and two health probes.

:class:`MetricsEndpoint` serves, from a daemon thread of the driver:

- ``/metrics``: every metric of a ``metrics()`` mapping (Kafka's ``MetricName`` ->
  ``Metric`` shape) in the Prometheus text format, made by prometheus-client over a
  registry of its own (never the global one: no process or platform collectors);
- ``/health/live`` and ``/health/ready``: 200 while ``live()`` / ``ready()`` answer true,
  else 503.

Nothing else: any other path is 404, any method but GET and HEAD 405; no request is
logged and no configuration value is ever shown. A ``metrics()`` (or a ``metric_value()``)
that raises answers 500 with one line that names no detail of the error (its message may
hold a secret).

Example:
    >>> import urllib.request
    >>> class Name:
    ...     name, group, description = "commit-total", "stream-thread-metrics", "Commits."
    ...     tags = {"thread-id": "t-1"}
    >>> class Value:
    ...     def metric_value(self):
    ...         return 3
    >>> with MetricsEndpoint(lambda: {Name(): Value()}, lambda: True, lambda: True) as ep:
    ...     url = f"http://127.0.0.1:{ep.port}"
    ...     body = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    ...     ready = urllib.request.urlopen(url + "/health/ready", timeout=10).read()
    >>> print(body.strip())
    # HELP kafka_streams_stream_thread_metrics_commit_total Commits.
    # TYPE kafka_streams_stream_thread_metrics_commit_total gauge
    kafka_streams_stream_thread_metrics_commit_total{thread_id="t-1"} 3.0
    >>> ready
    b'ready'
"""

from __future__ import annotations

import logging
import re
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from prometheus_client.samples import Sample

__all__ = ["MetricsEndpoint", "MetricNameLike", "MetricLike", "prometheus_name", "label_name"]

log = logging.getLogger("kspark")

PREFIX = "kafka_streams"
PATHS = ("/metrics", "/health/live", "/health/ready")
REQUEST_TIMEOUT_S = 10.0  # a client that sends nothing does not hold a thread longer
_TEXT = "text/plain; charset=utf-8"
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


class MetricNameLike(Protocol):
    """What the endpoint reads of a metric's name (Kafka's ``MetricName``)."""

    @property
    def name(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def tags(self) -> Mapping[str, str]: ...


class MetricLike(Protocol):
    """What the endpoint reads of a metric (Kafka's ``Metric``): its current value; None
    or a value that is not a number leaves the metric out."""

    def metric_value(self) -> Any: ...


def prometheus_name(group: str, name: str) -> str:
    """The Prometheus name of the metric ``name`` of ``group``: ``kafka_streams_<group>_
    <name>``, every character Prometheus does not allow (``-``, ``.``, ...) made ``_``.

    Example:
        >>> prometheus_name("stream-task-metrics", "dropped-records-total")
        'kafka_streams_stream_task_metrics_dropped_records_total'
        >>> prometheus_name("kafka.consumer", "records-lag.max")
        'kafka_streams_kafka_consumer_records_lag_max'
    """
    return f"{PREFIX}_{_INVALID.sub('_', group)}_{_INVALID.sub('_', name)}"


def label_name(tag: str) -> str:
    """The Prometheus label name of the tag ``tag``: invalid characters made ``_``, a
    leading digit prefixed by ``_`` and a leading ``__`` (reserved) cut to one ``_``.

    Example:
        >>> label_name("thread-id"), label_name("task-id"), label_name("client.id")
        ('thread_id', 'task_id', 'client_id')
        >>> label_name("0-partition"), label_name("__name__"), label_name("")
        ('_0_partition', '_name__', '_')
    """
    label = _INVALID.sub("_", tag)
    if not label or label[0].isdigit():
        label = "_" + label
    return re.sub("^_+", "_", label) if label.startswith("__") else label


TEXT_MAX = 64  # a longer text value (a topology's description) is not served


def _sample(name: str, labels: dict[str, str], value: Any, label: str) -> Sample | None:
    """``value``'s sample: a number as itself; a short text (the client's ``state``, its
    ``version``) as Prometheus serves an enum or an info metric, 1 with the text in the
    label ``label`` (the metric's own name: ``..._state{state="RUNNING"} 1``); None for
    anything else (None, a long text).

    >>> _sample("x_state", {}, "RUNNING", "state").labels, _sample("x", {}, None, "x")
    ({'state': 'RUNNING'}, None)
    """
    if isinstance(value, str):
        if len(value) > TEXT_MAX:
            return None
        return Sample(name, {**labels, label: value}, 1.0)
    if isinstance(value, (int, float)):
        return Sample(name, labels, float(value))
    return None


class _Collector:
    """A prometheus-client collector over a ``metrics()`` mapping, read at every scrape:
    one gauge family per Prometheus name, one sample per tag set (the first of two that
    would be the same series wins)."""

    def __init__(self, metrics: Callable[[], Mapping[Any, Any]]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        for metric_name, metric in self._metrics().items():
            name = prometheus_name(metric_name.group, metric_name.name)
            labels = {label_name(k): str(v) for k, v in (metric_name.tags or {}).items()}
            sample = _sample(name, labels, metric.metric_value(), label_name(metric_name.name))
            if sample is None:
                continue
            series = (name, tuple(sorted(labels.items())))
            if series in seen:
                continue
            seen.add(series)
            family = families.get(name)
            if family is None:
                family = families[name] = GaugeMetricFamily(name, metric_name.description or "")
            # a sample of its own labels: tag sets of one family may differ in their keys
            family.samples.append(sample)
        yield from families.values()


class _Server(ThreadingHTTPServer):
    """The driver's small HTTP server: daemon handler threads, an address it may rebind
    at once, and no reverse DNS lookup of its own address on bind."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], endpoint: MetricsEndpoint) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.endpoint = endpoint
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    """GET and HEAD of the three paths, plain text; every other method 405."""

    server: _Server
    timeout = REQUEST_TIMEOUT_S
    server_version = "kspark"
    sys_version = ""
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def do_GET(self) -> None:
        status, content_type, body = self.server.endpoint.answer(self.path)
        self._send(status, content_type, body, with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802 - the name http.server dispatches HEAD to
        status, content_type, body = self.server.endpoint.answer(self.path)
        self._send(status, content_type, body, with_body=False)

    def __getattr__(self, name: str) -> Any:
        """``do_POST``, ``do_PUT``, ...: any other method is refused with 405."""
        if name.startswith("do_"):
            return self._refuse
        raise AttributeError(name)

    def _refuse(self) -> None:
        self._send(405, _TEXT, b"method not allowed\n", with_body=True,
                   extra={"Allow": "GET, HEAD"})

    def _send(self, status: int, content_type: str, body: bytes, with_body: bool,
              extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for header, value in {"Content-Type": content_type, "Content-Length": str(len(body)),
                              "Cache-Control": "no-store", **(extra or {})}.items():
            self.send_header(header, value)
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a scrape every few seconds is not worth a log line."""


class MetricsEndpoint:
    """``/metrics``, ``/health/live`` and ``/health/ready`` on ``host:port`` (port 0: a
    free port, read back from :attr:`port` once started), served from daemon threads.

    ``metrics`` is read at every scrape; ``live`` and ``ready`` at every probe.
    :meth:`start` binds and serves, :meth:`stop` shuts down and frees the port (twice is
    harmless); as a context manager it does both.

    Example:
        >>> ep = MetricsEndpoint(dict, live=lambda: True, ready=lambda: False)
        >>> ep.start()
        >>> ep.port > 0, ep.host
        (True, '127.0.0.1')
        >>> ep.stop(); ep.stop()
    """

    def __init__(self, metrics: Callable[[], Mapping[MetricNameLike, MetricLike]],
                 live: Callable[[], bool], ready: Callable[[], bool],
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._live, self._ready = live, ready
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(metrics))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port once started (before: the port asked for, maybe 0)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port`` of the endpoint (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    def start(self) -> None:
        """Bind ``host:port`` and serve from a daemon thread; logs the address at INFO."""
        with self._lock:
            if self._server is not None:
                raise RuntimeError("the metrics endpoint is started already")
            self._server = _Server((self.host, self._port), self)
            self._port = int(self._server.server_address[1])
            self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,),
                                            name="kspark-metrics-http", daemon=True)
            self._thread.start()
        log.info("metrics endpoint on %s (%s)", self.url, ", ".join(PATHS))

    def stop(self) -> None:
        """Stop serving and close the socket; a no-op when not serving."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5.0)

    def __enter__(self) -> MetricsEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` of a GET of ``path`` (its query ignored).

        Example:
            >>> ep = MetricsEndpoint(dict, live=lambda: True, ready=lambda: False)
            >>> ep.answer("/health/live"), ep.answer("/health/ready")[0], ep.answer("/")[0]
            ((200, 'text/plain; charset=utf-8', b'live'), 503, 404)
        """
        route = path.split("?", 1)[0].split("#", 1)[0]
        if route == "/metrics":
            return self._scrape()
        if route == "/health/live":
            return _probe(self._live, "live")
        if route == "/health/ready":
            return _probe(self._ready, "ready")
        return 404, _TEXT, b"not found\n"

    def _scrape(self) -> tuple[int, str, bytes]:
        try:
            return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)
        except Exception as e:  # noqa: BLE001 - one line, no detail: it may hold a secret
            log.warning("metrics endpoint: computing /metrics failed (%s)", type(e).__name__)
            return 500, _TEXT, b"metrics unavailable\n"



def _probe(check: Callable[[], bool], word: str) -> tuple[int, str, bytes]:
    """200 ``word`` when ``check()`` is true; 503 when false or when it raises."""
    try:
        ok = bool(check())
    except Exception as e:  # noqa: BLE001 - a probe that cannot tell is not healthy
        log.warning("metrics endpoint: /health/%s check failed (%s)", word, type(e).__name__)
        ok = False
    return (200, _TEXT, word.encode()) if ok else (503, _TEXT, f"not {word}".encode())
