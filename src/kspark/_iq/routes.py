"""Where each task's state can be queried: the workers announce it in the application's
control topic (key ``route``), and whoever queries follows the topic.

A worker announces a task (``active``) with its query endpoint's address and token and
the names of the task's stores when it takes the task over from another worker (the task's
last commit is not its own), and again hourly. A worker keeping a task from one micro-batch
or epoch to the next says nothing new. The latest announcement of a task wins (one
partition: offset order is the order they were made in), except a ``withdrawn`` one: a
worker that took a task over and failed before committing it gives the task back to the
route before (whose worker made the task's last commit).

Who may query is who may read the control topic (the token is in it): the same principals
that may read the application's changelogs, which hold the same data.

Example (needs a broker, so not run)::

    RouteAnnouncer.of(settings, "app").announce(Route("0_1", ("counts",), "127.0.0.1:4100",
                                                      "t0ken", "active", "host:/state"))
    table = RouteTable(settings, "app"); table.catch_up(); table.routes["0_1"].endpoint
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kspark._kafka.factory import new_consumer, new_producer
from kspark._kafka.settings import ClientSettings, as_settings
from kspark._graph.resources import control_topic, routes_group

__all__ = ["Route", "RouteAnnouncer", "RouteTable", "ROUTE_KEY", "route_of"]

log = logging.getLogger("kspark")
ROUTE_KEY = b"route"
STATES = ("restoring", "active", "withdrawn", "standby")
HISTORY = 4  # routes kept per task, newest first: a withdrawn one gives way to the one before
REANNOUNCE_S = 3600.0  # a route held this long is said again when the task is next held
_ANNOUNCERS: dict[tuple[str, str], RouteAnnouncer] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Route:
    """Task ``task`` (holding ``stores``) is queryable at ``endpoint`` (host:port) with
    ``token``; ``state``: restoring, active, withdrawn, or standby (a warm copy, for stale
    reads); ``where``: the host and state directory."""

    task: str
    stores: tuple[str, ...]
    endpoint: str
    token: str
    state: str
    where: str

    @property
    def partition(self) -> int:
        """The task's partition (the number after its sub-topology's).

        >>> Route("1_3", (), "h:1", "t", "active", "").partition
        3
        """
        return int(self.task.split("_", 1)[1])

    def __repr__(self) -> str:  # the token never shows
        return f"Route({self.task}, {self.stores}, {self.endpoint}, {self.state})"


def route_of(raw: bytes) -> Route | None:
    """The route a control-topic record announces, or None if it is not a valid one (JSON
    only: nothing in it runs).

    >>> r = Route("0_1", ("s",), "127.0.0.1:9", "t", "active", "h:/d")
    >>> route_of(json.dumps(asdict(r)).encode()) == r, route_of(b"[1]")
    (True, None)
    """
    try:
        d = json.loads(raw)
        route = Route(str(d["task"]), tuple(str(s) for s in d["stores"]), str(d["endpoint"]),
                      str(d["token"]), str(d["state"]), str(d["where"]))
        route.partition  # noqa: B018 - a task id of the form <sub-topology>_<partition>
        return route if route.state in STATES else None
    except (ValueError, TypeError, KeyError, IndexError):
        return None


class RouteAnnouncer:
    """A worker process's announcer of routes (one producer per application, kept)."""

    def __init__(self, settings: ClientSettings, app_id: str):
        self.app_id, self.topic = app_id, control_topic(app_id)
        self._producer = new_producer(settings.conf("producer", "routes", {
            "acks": "all", "linger.ms": 0}), "control topic")
        self._said: dict[str, tuple[Route, float]] = {}

    @classmethod
    def of(cls, where: ClientSettings | str, app_id: str) -> RouteAnnouncer:
        settings = as_settings(where)
        with _LOCK:
            key = (settings.bootstrap, app_id)
            if key not in _ANNOUNCERS:
                _ANNOUNCERS[key] = cls(settings, app_id)
            return _ANNOUNCERS[key]

    def announce(self, route: Route, force: bool = False, timeout_s: float = 10.0) -> None:
        """Announce ``route`` unless this process said the same within the last hour and
        ``force`` is not set (another worker may have announced the task since: it made the
        task's last commit). Waits for delivery: a route must be known before the task
        commits what a query may ask about; said again hourly, so that the control topic's
        retention never takes it away."""
        said = self._said.get(route.task)
        if (not force and said is not None and said[0] == route
                and time.monotonic() - said[1] < REANNOUNCE_S):
            return
        self._producer.produce(self.topic, key=ROUTE_KEY, value=json.dumps(asdict(route)).encode())
        if self._producer.flush(timeout_s):
            log.warning("application %r: task %s's query route was not delivered to %r within "
                        "%.0f s: queries reach it once it is", self.app_id, route.task,
                        self.topic, timeout_s)
            return
        self._said[route.task] = (route, time.monotonic())


class RouteTable:
    """The routes of application ``app_id`` as announced so far, read from the control
    topic's start on demand (:meth:`catch_up`; :meth:`refresh` when the last read is older
    than ``max_age_s``). One thread at a time reads (a Kafka consumer is not thread-safe)."""

    def __init__(self, where: ClientSettings | str, app_id: str, max_age_s: float = 1.0):
        from confluent_kafka import TopicPartition

        self.app_id, self.max_age_s = app_id, max_age_s
        self.routes: dict[str, Route] = {}
        self.history: dict[str, list[Route]] = {}  # per task, newest first, one per endpoint
        # per task, the workers keeping a standby copy of it (by endpoint; stale reads only)
        self.standbys: dict[str, dict[str, Route]] = {}
        self._tp = TopicPartition(control_topic(app_id), 0, 0)
        self._consumer = new_consumer(as_settings(where).conf("consumer", "routes", {
            "group.id": routes_group(app_id), "enable.auto.commit": False,
            "fetch.wait.max.ms": 10}), "control topic")
        self._consumer.assign([self._tp])
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._closed = False

    def refresh(self) -> None:
        """Catch up if the last read is older than ``max_age_s``."""
        if time.monotonic() - self._read_at > self.max_age_s:
            self.catch_up()

    def catch_up(self, timeout_s: float = 5.0) -> bool:
        """Read up to the control topic's end as of now; whether it got there in time."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self._closed:
                return False
            try:
                _, end = self._consumer.get_watermark_offsets(self._tp, timeout=timeout_s)
                while (left := end - self._position()) > 0 and time.monotonic() < deadline:
                    self._read(min(left, 1000), 0.5)  # returns once those are read
            except Exception as e:  # noqa: BLE001 - KafkaException: a broker restarting
                log.info("application %r: query routes not read now (%s)", self.app_id, e)
                return False
            self._read_at = time.monotonic()
            return self._position() >= end

    def _read(self, n: int, timeout_s: float) -> None:
        for m in self._consumer.consume(n, timeout_s):
            if m.error() is not None:
                continue
            route = route_of(m.value()) if m.key() == ROUTE_KEY else None
            if route is not None:
                self._take(route)

    def _take(self, route: Route) -> None:
        """A route read: the task's route now; a withdrawn one gives the task back to the
        route before it (a worker that took the task and failed before committing it)."""
        if route.state == "standby":
            self.standbys.setdefault(route.task, {})[route.endpoint] = route
            return
        self.standbys.get(route.task, {}).pop(route.endpoint, None)  # its copy became it
        older = [r for r in self.history.get(route.task, ()) if r.endpoint != route.endpoint]
        if route.state == "withdrawn":
            self.history[route.task] = older
            if older:
                self.routes[route.task] = older[0]
            else:
                self.routes.pop(route.task, None)
            return
        self.routes[route.task] = route
        self.history[route.task] = [route, *older][:HISTORY]

    def _position(self) -> int:
        """The next offset to read (past transaction markers, which no record shows)."""
        (tp,) = self._consumer.position([self._tp])
        return max(tp.offset, 0)

    def for_store(self, store: str) -> dict[int, Route]:
        """The latest route of each partition of ``store``."""
        return {r.partition: r for r in list(self.routes.values()) if store in r.stores}

    def stores(self) -> list[str]:
        """Every store some route names."""
        return sorted({s for r in list(self.routes.values()) for s in r.stores})

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._consumer.close()

    def __enter__(self) -> RouteTable:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
