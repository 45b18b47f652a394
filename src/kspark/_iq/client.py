"""The querying side of interactive queries: a request for a store's partitions goes to
the endpoint of the worker holding each partition's task (``_iq/routes.py``),
and comes back decoded with the store's own serdes.

A partition whose task cannot answer now (restoring, moving, its worker starting or gone)
is asked again, following the newest route, until ``query.timeout.ms``; then it fails
with the reason the worker gave (``StateStoreNotAvailableError`` for the read-only
stores, a ``NOT_ACTIVE`` failure in an IQv2 result). Over TLS when given a client context
(``tls.py``): a certificate not verified, or an endpoint that does not speak TLS, fails at
once with what to do. Nothing here imports pyspark: it runs in the driver, on a Spark Connect
client and in ``kspark store``.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from kspark._engine.partitioner import default_partition
from kspark._iq.codec import decode_result, encode_query
from kspark._engine.state.bytes_stores import InMemoryBytesStore
from kspark._iq.endpoint import PATH
from kspark._iq.messages import position_map
from kspark._iq.routes import Route, RouteTable
from kspark._iq.tls import handshake_failure
from kspark.errors import InvalidStateStoreError, StateStoreNotAvailableError
from kspark.query import FailureReason, QueryResult, StateQueryRequest, StateQueryResult
from kspark.streams_metadata import HostInfo, KeyQueryMetadata, StreamsMetadata
from kspark._graph.instantiate import resolve_store
from kspark._plan.describe import partition_counts_for
from kspark._plan.plan import plan
from kspark._engine.query.types import unknown_store

__all__ = ["StoreInfo", "store_catalog", "QueryClient"]

log = logging.getLogger("kspark")
RETRY_S = 0.05  # the first pause before asking a partition again (doubling, up to 1 s)


class StoreInfo(NamedTuple):
    """A store as the querying side knows it: its sub-topology, task count, changelog and a
    typed store over nothing (its serdes and kind, for the codec)."""

    name: str
    sub_topology: int
    tasks: int
    changelog: str | None
    codec: Any

    def task(self, partition: int) -> str:
        return f"{self.sub_topology}_{partition}"


def store_catalog(graph: Any, config: Any, counts: Mapping[str, int] | None = None
                  ) -> dict[str, StoreInfo]:
    """Every state store of ``graph`` (its plan, with the topics' partition counts from
    the broker unless ``counts`` are given)."""
    found = dict(counts) if counts is not None else partition_counts_for(graph, config, {}, True)[0]
    out = {}
    for s in plan(graph, found, config).stores:
        builder = resolve_store(graph.stores[s.name][0], config)
        out[s.name] = StoreInfo(s.name, s.sub_topology, s.tasks, s.changelog,
                                builder.typed_store(InMemoryBytesStore(s.name)))
    return out


class QueryClient:
    """Asks application ``app_id``'s workers; ``catalog``: its stores (None: a client
    without the topology, as ``kspark store``, which asks for rendered answers); ``tls``: a
    client ``ssl.SSLContext`` when the endpoints serve HTTPS (``tls.client_context``)."""

    def __init__(self, settings: Any, app_id: str, catalog: dict[str, StoreInfo] | None,
                 timeout_ms: int = 10000, tls: ssl.SSLContext | None = None):
        self.app_id, self.catalog, self.tls = app_id, catalog, tls
        self.timeout_s = timeout_ms / 1000
        self.routes = RouteTable(settings, app_id)
        self._local = threading.local()

    def info(self, name: str) -> StoreInfo:
        """The store ``name``; an UnknownStateStoreError listing the stores if none."""
        if self.catalog is None or name not in self.catalog:
            raise unknown_store(name, self.catalog or self.routes.stores())
        return self.catalog[name]

    # -- IQv2 -------------------------------------------------------------------------------

    def query(self, request: StateQueryRequest, stale: bool = False) -> StateQueryResult:
        """Each requested partition's answer (all partitions when none are named)."""
        info = self.info(request.get_store_name())
        query, bound = request.get_query(), request.get_position_bound()
        wanted = request.get_partitions()
        parts = sorted(range(info.tasks) if wanted is None else wanted)
        payload = {"store": info.name, "query": encode_query(query, info.codec),
                   "bound": None if bound.is_unbounded() else position_map(bound.position()),
                   "stale": stale}
        out = StateQueryResult()
        for p in parts:
            if not 0 <= p < info.tasks:
                out.add_result(p, QueryResult.for_failure(
                    FailureReason.DOES_NOT_EXIST, f"store {info.name!r} has partitions 0 to "
                    f"{info.tasks - 1}, not {p}"))
                continue
            try:
                answer = self.ask(info.name, info.task(p), p, payload)
            except StateStoreNotAvailableError as e:
                out.add_result(p, QueryResult.for_failure(FailureReason.NOT_ACTIVE, str(e)))
                continue
            out.add_result(p, decode_result(answer["result"], query, info.codec))
        return out

    def ask(self, store: str, task: str, partition: int, payload: Mapping[str, Any]
            ) -> dict[str, Any]:
        """The worker's ``ok`` answer for one partition, asked until it can give one."""
        deadline, pause, why = time.monotonic() + self.timeout_s, RETRY_S, "no worker has it"
        self.routes.refresh()
        while True:
            route = self.routes.routes.get(task)
            routes = [] if route is None or store not in route.stores else [(route, False)]
            if payload.get("stale"):  # a standby copy answers when the task cannot
                routes += [(r, True) for r in self.routes.standbys.get(task, {}).values()
                           if store in r.stores]
            for r, standby in routes:
                answer = self._post(r, {**payload, "app": self.app_id, "task": task,
                                        "partition": partition, "standby": standby})
                status = answer.get("status")
                if status == "ok":
                    return answer
                if status == "error":
                    raise InvalidStateStoreError(f"store {store!r} partition {partition} "
                                                 f"(task {task}): {answer.get('message')}")
                why = str(answer.get("message"))
            if time.monotonic() + pause > deadline:
                raise StateStoreNotAvailableError(
                    f"store {store!r} partition {partition} (task {task} of application "
                    f"{self.app_id!r}) cannot be queried now: {why}. It did not become "
                    f"queryable within query.timeout.ms ({self.timeout_s * 1000:.0f} ms); "
                    "ask again, or allow stale reads (StoreQueryParameters."
                    "enable_stale_stores())")
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
            self.routes.catch_up(min(2.0, max(0.1, deadline - time.monotonic())))

    def _post(self, route: Route, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``route``'s endpoint; a connection that fails is an
        ``unavailable`` answer (the worker is gone or not started: routes will tell), a TLS
        handshake that fails an ``error`` (asking again would not help)."""
        conns = self._local.__dict__.setdefault("conns", {})
        data = json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {route.token}", "Content-Type": "application/json"}
        for attempt in (0, 1):  # a kept connection the worker closed: once more, anew
            conn = conns.get(route.endpoint)
            if conn is None:
                conn = conns[route.endpoint] = self._connect(route.endpoint)
            try:
                conn.request("POST", PATH, data, headers)
                reply = conn.getresponse()
                text = reply.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conns.pop(route.endpoint, None)
                if isinstance(e, ssl.SSLError) and not isinstance(
                        e, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
                    return {"status": "error", "message": handshake_failure(route.endpoint, e)}
                if attempt:
                    return {"status": "unavailable", "message": f"its worker at "
                            f"{route.endpoint} is not reachable ({type(e).__name__})"}
                continue
            if reply.status != 200:
                return {"status": "error", "message": f"the worker at {route.endpoint} "
                        f"refused the query (HTTP {reply.status}: {_refusal(text)})"}
            return dict(json.loads(text))
        return {"status": "unavailable", "message": "unreachable"}  # pragma: no cover

    def _connect(self, endpoint: str) -> http.client.HTTPConnection:
        """A connection to ``endpoint`` (host:port): HTTPS, its certificate checked against
        the host name, when the client has a TLS context."""
        host, _, port = endpoint.rpartition(":")
        timeout = max(self.timeout_s, 1.0)
        if self.tls is None:
            return http.client.HTTPConnection(host, int(port), timeout=timeout)
        return http.client.HTTPSConnection(host, int(port), timeout=timeout, context=self.tls)

    # -- metadata -----------------------------------------------------------------------------

    def metadata_for_key(self, store: str, key: Any, serializer: Any) -> KeyQueryMetadata:
        """Where ``key`` of ``store`` lives (the default partitioner over its bytes)."""
        info = self.info(store)
        raw = serializer.serialize(info.changelog or store, key)
        partition = default_partition(raw, info.tasks)
        self.routes.refresh()
        task = info.task(partition)
        route = self.routes.routes.get(task)
        host = None if route is None else HostInfo.build_from_endpoint(route.endpoint)
        copies = {HostInfo.build_from_endpoint(e) for e, r in
                  self.routes.standbys.get(task, {}).items() if store in r.stores}
        return KeyQueryMetadata(host, copies, partition)

    def all_metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """One StreamsMetadata per endpoint holding a partition of ``store``."""
        info = self.info(store)
        self.routes.refresh()
        held: dict[str, tuple[set, set, set, set]] = {}  # endpoint -> names, tps (active, copy)
        for p in range(info.tasks):
            route = self.routes.routes.get(info.task(p))
            copies = [r for r in self.routes.standbys.get(info.task(p), {}).values()
                      if store in r.stores]
            for r, i in ([(route, 0)] if route and store in route.stores else []) + \
                    [(r, 2) for r in copies]:
                entry = held.setdefault(r.endpoint, (set(), set(), set(), set()))
                entry[i].update(r.stores)
                entry[i + 1].add((info.changelog or store, p))
        return [StreamsMetadata(HostInfo.build_from_endpoint(e), *map(frozenset, sets))
                for e, sets in sorted(held.items())]

    def close(self) -> None:
        self.routes.close()
        for conn in self._local.__dict__.get("conns", {}).values():
            conn.close()


def _refusal(text: bytes) -> str:
    """An endpoint's refusal as its ``error`` says it (else the body's start).

    >>> _refusal(b'{"error": "a valid token is required"}'), _refusal(b"<html>")
    ('a valid token is required', "b'<html>'")
    """
    try:
        return str(json.loads(text)["error"])
    except (ValueError, KeyError, TypeError):
        return repr(text[:200])
