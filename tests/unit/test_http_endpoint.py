"""The metrics HTTP endpoint (``_client/metrics_endpoint.py``): real requests over a socket."""

from __future__ import annotations

from kspark.metrics import MetricName

import logging
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from kspark._client.metrics_endpoint import MetricsEndpoint, label_name, prometheus_name

TIMEOUT_S = 5


Name = MetricName  # the real one: name, group, description, tags


@dataclass
class Value:
    value: object

    def metric_value(self):
        return self.value


def get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """``(status, headers, body)`` of one request, whatever its status."""
    request = urllib.request.Request(url, method=method, data=b"x" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, dict(e.headers), e.read()


@pytest.fixture
def serve():
    """``serve(metrics=..., live=..., ready=...)``: a started endpoint, stopped afterwards."""
    started = []

    def start(metrics=dict, live=lambda: True, ready=lambda: True):
        ep = MetricsEndpoint(metrics, live=live, ready=ready)
        ep.start()
        started.append(ep)
        return ep

    yield start
    for ep in started:
        ep.stop()


def scrape(ep: MetricsEndpoint) -> str:
    status, headers, body = get(f"http://127.0.0.1:{ep.port}/metrics")
    assert status == 200 and headers["Content-Type"] == CONTENT_TYPE_LATEST
    return body.decode()


def test_names_and_labels_are_prometheus_ones():
    assert (prometheus_name("stream-task-metrics", "dropped-records-total")
            == "kafka_streams_stream_task_metrics_dropped_records_total")
    assert prometheus_name("a.b c/d", "e:f") == "kafka_streams_a_b_c_d_e_f"
    assert (label_name("thread-id"), label_name("task-id")) == ("thread_id", "task_id")
    assert label_name("1st") == "_1st"


def test_a_metric_is_exposed_with_its_name_labels_help_and_type(serve):
    name = Name("dropped-records-total", "stream-task-metrics", "The total dropped records.",
                {"thread-id": "app-StreamThread-1", "task-id": "0_1"})
    body = scrape(serve(lambda: {name: Value(7)}))
    full = "kafka_streams_stream_task_metrics_dropped_records_total"
    assert f"# HELP {full} The total dropped records.\n" in body
    assert f"# TYPE {full} gauge\n" in body
    assert f'{full}{{task_id="0_1",thread_id="app-StreamThread-1"}} 7.0\n' in body


def test_several_tag_sets_are_one_family(serve):
    metrics = {Name("process-rate", "stream-thread-metrics", "Records/s.",
                    {"thread-id": f"t-{i}"}): Value(i + 0.5) for i in range(3)}
    body = scrape(serve(lambda: metrics))
    full = "kafka_streams_stream_thread_metrics_process_rate"
    assert body.count(f"# HELP {full} ") == 1 and body.count(f"# TYPE {full} ") == 1
    for i in range(3):
        assert f'{full}{{thread_id="t-{i}"}} {i + 0.5}\n' in body


def test_a_short_text_is_a_label_of_one_and_no_value_or_a_long_text_is_left_out(serve):
    """Java's text-valued client metrics (``state``, ``version``) as Prometheus serves an
    enum or an info metric; a topology's description (long) and None are not served."""
    metrics = {Name("version", "app-info"): Value("4.3.0"), Name("nothing", "g"): Value(None),
               Name("topology-description", "g"): Value("Topologies:\n" + "x" * 100),
               Name("commit-total", "g"): Value(2)}
    body = scrape(serve(lambda: metrics))
    assert 'kafka_streams_app_info_version{version="4.3.0"} 1.0\n' in body
    assert "nothing" not in body and "topology" not in body
    assert "kafka_streams_g_commit_total 2.0\n" in body


def test_the_registry_is_private_no_process_or_platform_metrics(serve):
    body = scrape(serve(dict))
    assert body == ""
    assert "process_" not in body and "python_" not in body


def test_metrics_are_read_at_every_scrape(serve):
    value = Value(1)
    ep = serve(lambda: {Name("n", "g"): value})
    assert "kafka_streams_g_n 1.0" in scrape(ep)
    value.value = 5
    assert "kafka_streams_g_n 5.0" in scrape(ep)


def test_probes_follow_their_callables(serve):
    state = {"live": False, "ready": False}
    ep = serve(live=lambda: state["live"], ready=lambda: state["ready"])
    url = f"http://127.0.0.1:{ep.port}"
    assert get(url + "/health/live")[0] == 503 and get(url + "/health/ready")[0] == 503
    state["live"] = True
    assert get(url + "/health/live")[::2] == (200, b"live")
    assert get(url + "/health/ready")[0] == 503
    state["ready"] = True
    assert get(url + "/health/ready")[::2] == (200, b"ready")
    state["live"] = False
    assert get(url + "/health/live")[0] == 503


def test_a_probe_that_raises_is_not_healthy(serve):
    def broken():
        raise RuntimeError("cannot tell")

    ep = serve(ready=broken)
    assert get(f"http://127.0.0.1:{ep.port}/health/ready")[0] == 503


@pytest.mark.parametrize("path", ["/", "/metric", "/metrics/x", "/health", "/health/other",
                                  "/../etc/passwd", "/health/live/"])
def test_other_paths_are_404(serve, path):
    ep = serve()
    assert get(f"http://127.0.0.1:{ep.port}{path}")[0] == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_other_methods_are_405(serve, method):
    ep = serve()
    status, headers, _ = get(f"http://127.0.0.1:{ep.port}/metrics", method)
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def test_head_answers_headers_only(serve):
    ep = serve(lambda: {Name("n", "g"): Value(1)})
    status, headers, body = get(f"http://127.0.0.1:{ep.port}/metrics", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


def test_metrics_that_raise_answer_500_without_the_error(serve, caplog):
    def leaky():
        raise ValueError("cannot connect with sasl.jaas.config password=hunter2")

    ep = serve(leaky)
    with caplog.at_level(logging.WARNING, logger="kspark"):
        status, headers, body = get(f"http://127.0.0.1:{ep.port}/metrics")
    assert status == 500 and headers["Content-Type"].startswith("text/plain")
    assert b"hunter2" not in body and b"password" not in body and b"Traceback" not in body
    assert body.count(b"\n") == 1
    assert "hunter2" not in caplog.text


def test_a_metric_value_that_raises_answers_500(serve):
    class Broken:
        def metric_value(self):
            raise RuntimeError("password=hunter2")

    ep = serve(lambda: {Name("n", "g"): Broken()})
    status, _, body = get(f"http://127.0.0.1:{ep.port}/metrics")
    assert status == 500 and b"hunter2" not in body


def test_port_0_binds_a_free_port_on_loopback_by_default(caplog):
    ep = MetricsEndpoint(dict, live=lambda: True, ready=lambda: True)
    assert (ep.host, ep.port) == ("127.0.0.1", 0)
    with caplog.at_level(logging.INFO, logger="kspark"):
        ep.start()
    try:
        assert ep.port > 0
        assert get(f"http://127.0.0.1:{ep.port}/health/live")[0] == 200
        assert (f"metrics endpoint on http://127.0.0.1:{ep.port} "
                "(/metrics, /health/live, /health/ready)") in caplog.text
    finally:
        ep.stop()


def test_stop_frees_the_port_and_is_idempotent():
    ep = MetricsEndpoint(dict, live=lambda: True, ready=lambda: True)
    ep.stop()  # never started: nothing to do
    ep.start()
    port = ep.port
    ep.stop()
    ep.stop()
    with socket.create_server(("127.0.0.1", port)):  # the port is free again
        pass
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S).close()


def test_an_asked_port_is_bound():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with MetricsEndpoint(dict, lambda: True, lambda: True, port=port) as ep:
        assert ep.port == port
        assert get(f"http://127.0.0.1:{port}/health/ready")[0] == 200


def test_starting_twice_is_refused(serve):
    ep = serve()
    with pytest.raises(RuntimeError):
        ep.start()


def test_requests_are_not_logged(serve, capfd, caplog):
    ep = serve()
    with caplog.at_level(logging.DEBUG):
        get(f"http://127.0.0.1:{ep.port}/health/live")
        get(f"http://127.0.0.1:{ep.port}/nowhere")
    assert "GET" not in capfd.readouterr().err and "GET" not in caplog.text
