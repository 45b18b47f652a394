"""A worker's interactive-query endpoint: ``POST /v1/query`` with a JSON body, answered
from the state the worker holds (see ``host.py``).

It binds ``query.endpoint.host`` (loopback unless configured) on a free port, and answers
only requests that carry its token (``Authorization: Bearer <token>``, compared in
constant time); anything else is 401, another path 404, another method 405, a body over
1 MiB 413. Bodies are JSON only (nothing in them runs). No request is logged, and an
answer never holds a configuration value.

Example:
    >>> import json, urllib.request
    >>> with QueryEndpoint("127.0.0.1", lambda body: {"echo": body["x"]}) as ep:
    ...     req = urllib.request.Request(f"http://{ep.address}/v1/query", method="POST",
    ...         data=b'{"x": 1}', headers={"Authorization": "Bearer " + ep.token})
    ...     json.load(urllib.request.urlopen(req, timeout=10))
    {'echo': 1}
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["QueryEndpoint", "PATH", "advertised_host"]

log = logging.getLogger("kspark")
PATH = "/v1/query"
MAX_BODY = 1 << 20
REQUEST_TIMEOUT_S = 30.0


def advertised_host(bind: str) -> str:
    """The host name a worker announces for an endpoint bound to ``bind``: the bound address,
    or this machine's name when it binds every interface.

    >>> advertised_host("127.0.0.1"), advertised_host("0.0.0.0") == socket.getfqdn()
    ('127.0.0.1', True)
    """
    return socket.getfqdn() if bind in ("0.0.0.0", "::", "") else bind


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], endpoint: QueryEndpoint) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.endpoint = endpoint
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_S
    server_version = "kspark"
    sys_version = ""
    protocol_version = "HTTP/1.1"  # keep-alive: a client asking often reuses its connection
    # headers and body leave in two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK (40 ms a query, measured)
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches POST to
        ep = self.server.endpoint
        if self.path != PATH:
            return self._send(404, {"error": "not found"})
        given = self.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {ep.token}".encode()):
            return self._send(401, {"error": "a valid token is required"})
        try:
            size = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            size = -1
        if not 0 <= size <= MAX_BODY:  # not read: the connection closes after the answer
            self.close_connection = True
            return self._send(413, {"error": f"the body must be at most {MAX_BODY} bytes"})
        try:
            body = json.loads(self.rfile.read(size))
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            return self._send(400, {"error": f"the body is not a JSON object: {e}"})
        try:
            answer = ep.answer(body)
        except Exception as e:  # noqa: BLE001 - the worker must keep serving
            log.warning("interactive query failed: %s: %s", type(e).__name__, e)
            answer = {"status": "error", "message": f"{type(e).__name__}: {e}"}
        self._send(200, answer)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return lambda: self._send(405, {"error": "only POST"})
        raise AttributeError(name)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no request is logged."""


class QueryEndpoint:
    """Serves ``answer(body) -> dict`` at ``host`` on a free port from daemon threads;
    ``token``: a random secret a request must carry (never logged)."""

    def __init__(self, host: str, answer: Callable[[dict[str, Any]], dict[str, Any]]):
        self.host, self.answer = host, answer
        self.token = secrets.token_urlsafe(24)
        self._server: _Server | None = None
        self._port = 0

    @property
    def address(self) -> str:
        """``host:port`` as announced (the host name when bound to every interface)."""
        return f"{advertised_host(self.host)}:{self._port}"

    def start(self) -> None:
        self._server = _Server((self.host, 0), self)
        self._port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, args=(0.2,), daemon=True,
                         name="kspark-query-endpoint").start()
        log.info("interactive-query endpoint on %s", self.address)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> QueryEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:  # the token never shows
        return f"QueryEndpoint({self.address})"
