"""A worker's interactive-query endpoint: ``POST /v1/query`` with a JSON body, answered
from the state the worker holds (see ``host.py``).

It binds ``query.endpoint.host`` (loopback unless configured) on a free port, serves HTTPS
when given a TLS context (``tls.py``: a plain-HTTP request then gets a 400 saying so, over
plain HTTP, and a failed handshake just closes the connection), and answers only requests
that carry its token (``Authorization: Bearer <token>``, compared in
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
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kspark._iq.tls import plain_refusal

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

    def finish_request(self, request: Any, client_address: Any) -> None:
        """One connection, in its own thread: over TLS if the endpoint has a context (the
        handshake here, not in the accepting thread)."""
        tls = self.endpoint.tls
        if tls is None:
            return super().finish_request(request, client_address)
        request.settimeout(REQUEST_TIMEOUT_S)
        try:
            first = request.recv(1, socket.MSG_PEEK)
            if first and first != b"\x16":  # not a TLS handshake record: plain HTTP
                _PlainRefusal(request, client_address, self)
                return None
            conn = tls.wrap_socket(request, server_side=True)
        except OSError:  # ssl.SSLError too: a client that does not trust the certificate
            return None
        try:
            _Handler(conn, client_address, self)
        finally:
            conn.close()
        return None


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


class _PlainRefusal(_Handler):
    """A plain-HTTP request to an endpoint serving HTTPS: a 400 saying so (its body read
    first, so that the client gets the answer rather than a reset connection)."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches POST to
        self.close_connection = True
        try:
            size = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            size = -1
        if 0 < size <= MAX_BODY:
            self.rfile.read(size)
        self._send(400, {"error": plain_refusal(self.server.endpoint.address)})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self.do_POST
        raise AttributeError(name)


class QueryEndpoint:
    """Serves ``answer(body) -> dict`` at ``host`` on a free port from daemon threads, over
    HTTPS if ``tls`` (a server ``ssl.SSLContext``) is given; ``token``: a random secret a
    request must carry (never logged)."""

    def __init__(self, host: str, answer: Callable[[dict[str, Any]], dict[str, Any]],
                 tls: ssl.SSLContext | None = None):
        self.host, self.answer, self.tls = host, answer, tls
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
        log.info("interactive-query endpoint on %s (%s)", self.address,
                 "HTTP" if self.tls is None else "HTTPS")

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
