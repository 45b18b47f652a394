"""A worker's interactive-query endpoint (``_iq/endpoint.py``) answers only what
carries its token, on its one path, and never shows the token."""

import json
import urllib.error
import urllib.request

import pytest

from kspark._iq.endpoint import MAX_BODY, QueryEndpoint
from kspark._iq.routes import Route


def _post(ep, body=b"{}", token=None, path="/v1/query", method="POST"):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(f"http://{ep.address}{path}", data=body, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


@pytest.fixture
def endpoint():
    with QueryEndpoint("127.0.0.1", lambda body: {"status": "ok", "got": body}) as ep:
        yield ep


def test_a_request_with_the_token_is_answered(endpoint):
    assert _post(endpoint, b'{"a": 1}', endpoint.token) == (200, {"status": "ok",
                                                                   "got": {"a": 1}})


def test_a_request_without_the_right_token_is_refused(endpoint):
    assert _post(endpoint)[0] == 401
    assert _post(endpoint, token=endpoint.token + "x")[0] == 401


def test_only_its_path_and_post(endpoint):
    assert _post(endpoint, token=endpoint.token, path="/other")[0] == 404
    assert _post(endpoint, None, endpoint.token, method="GET")[0] == 405


def test_a_body_that_is_not_a_json_object_or_too_big_is_refused(endpoint):
    assert _post(endpoint, b"[1, 2]", endpoint.token)[0] == 400
    try:  # refused unread: the client may see the answer, or the connection closed
        status = _post(endpoint, b"x" * (MAX_BODY + 1), endpoint.token)[0]
    except (urllib.error.URLError, ConnectionError):
        status = 413
    assert status == 413
    assert _post(endpoint, b"{}", endpoint.token)[0] == 200  # and it goes on


def test_an_answer_that_raises_is_an_error_answer_and_the_endpoint_goes_on():
    def boom(body):
        raise RuntimeError("bad")

    with QueryEndpoint("127.0.0.1", boom) as ep:
        assert _post(ep, token=ep.token) == (200, {"status": "error",
                                                   "message": "RuntimeError: bad"})
        assert _post(ep, token=ep.token)[0] == 200


def test_the_token_never_shows(endpoint):
    route = Route("0_1", ("s",), endpoint.address, endpoint.token, "active", "h:/d")
    assert endpoint.token not in repr(endpoint) and endpoint.token not in repr(route)
    assert endpoint.token not in str(route)
