"""Interactive queries on the worker that holds a task's state, in both execution modes.

Each Python worker holding tasks with state stores keeps, in one :class:`QueryHost`, what
it can answer for, and serves it on its endpoint (``endpoint.py``):

- a task it runs or keeps (real-time: for the epoch; micro-batch: during the batch, and a
  task of in-memory stores kept for the next one): read from its stores *below the write
  buffer*, which hold exactly what the task's last commit wrote (the batch's writes reach
  them only in the commit, under the task's lock, before the transaction commits and the
  checkpoint is written; a read takes the same lock, so it sees one whole commit);
- a task whose persistent stores it closed (micro-batch: after each batch): its RocksDB
  databases opened read-only, only while the task's checkpoint file is valid and the same
  before and after the read (a commit removes it before writing and rewrites it after);
  the entries of its in-memory stores, which close with it, are moved aside and kept
  until the task opens again;
- a task that is restoring: nothing, unless the query allows stale stores;
- a standby copy of a task another worker runs (``num.standby.replicas``): its databases
  opened read-only as a closed task's, for queries that allow stale stores, at the
  changelog offsets of the copy's last update (its checkpoint).

A result carries the position it reflects: the changelog end offsets after the commit
(what a read_committed reader sees as the changelog's end) and, per input partition, the
offset of the last record that commit covered (as Kafka Streams' ``Position``).

Example:
    >>> host = QueryHost()
    >>> host.answer({"app": "a", "task": "0_0", "store": "s"})["status"]
    'unavailable'
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kspark._engine.state.build import task_store_dir
from kspark._engine.state.checkpoint import read_checkpoint, read_progress
from kspark._engine.state.layers import WriteBuffer
from kspark._iq.routes import Route, RouteAnnouncer
from kspark._iq.endpoint import QueryEndpoint
from kspark._iq.tls import TLS_KEYS, server_context
from kspark._engine.state.bytes_stores import ReadOnlyRocksDBBytesStore

__all__ = ["QueryHost", "query_host", "committed_view", "Held"]

log = logging.getLogger("kspark")
DISK_TRIES = 5  # reads of a closed task's databases a commit may spoil before giving up


def committed_view(store: Any) -> Any:
    """``store`` as the last commit left it: the typed store over the layer under its write
    buffer (itself when it has none).

    >>> from kspark import Serdes
    >>> from kspark.state import Stores
    >>> from kspark._engine.state.build import build_store
    >>> b = Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"),
    ...                                    Serdes.String(), Serdes.Long())
    >>> s = build_store(b, batch_buffer=True); s.put("k", 1)
    >>> committed_view(s).get("k"), s.get("k")
    (None, 1)
    >>> s.flush(); committed_view(s).get("k")
    1
    """
    buffer = store.layer(WriteBuffer)
    if buffer is None:
        return store
    view = copy.copy(store)
    view.inner = buffer.inner
    return view


@dataclass
class Held:
    """What a worker can answer for one task: ``stores`` (live: committed views) or
    ``disk`` (its closed databases, with ``builders``), at ``position``."""

    task_id: str
    lock: Any
    stores: dict[str, Any] = field(default_factory=dict)
    position: dict[tuple[str, int], int] = field(default_factory=dict)
    state: str = "active"
    disk: Path | None = None
    builders: dict[str, Any] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)  # every store of the task
    # a closed task's databases as last opened, by store: (checkpoint stamp, store)
    opened: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    opening: Any = field(default_factory=threading.Lock)

    def close_opened(self) -> None:
        """Close the databases opened read-only (the task opens again, or moved)."""
        with self.opening:
            for _, store in self.opened.values():
                store.close()
            self.opened.clear()


class QueryHost:
    """This worker process's queryable tasks and its endpoint (started when first needed)."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], Held] = {}
        self._mine: dict[tuple[str, str], str] = {}  # the producer of this worker's last commit
        self._taken: dict[tuple[str, str], Any] = {}  # announced here, not committed here yet
        self._standby: dict[tuple[str, str], Held] = {}  # copies kept here (stale reads)
        # by (host, TLS keys): applications of one Spark session share worker processes, and
        # each is served as its own config says (never over plain HTTP if it sets TLS)
        self._endpoints: dict[tuple[Any, ...], QueryEndpoint] = {}
        self._guard = threading.Lock()

    # -- what the task lifecycle tells it -------------------------------------------------

    def hold(self, hosted: Any, task: Any = None, restoring: bool = False) -> None:
        """``hosted``'s task (or ``task``, while it restores: for stale queries, and not
        announced) answers from here now. Announced unless this worker announced it already
        and made its last commit (else another worker may have announced it since)."""
        task = task if task is not None else hosted.task
        ctx = hosted.ctx
        if not task.stores or not ctx.query_enabled:
            return
        held = Held(hosted.task_id, hosted.host.lock,
                    {name: committed_view(s) for name, s in task.stores.items()},
                    dict(hosted.host.position or hosted.host.changelog_offsets),
                    "restoring" if restoring else "active")
        self._replace((ctx.app_id, hosted.task_id), held)
        if not restoring:
            moved = not self.made_last_commit(hosted)
            if self._announce(hosted, held, moved) and moved:
                self._taken[(ctx.app_id, hosted.task_id)] = hosted

    def made_last_commit(self, hosted: Any) -> bool:
        """Whether this worker made the task's last commit (the marker ``hosted`` opened with
        names the producer of a commit made here)."""
        marker = hosted.marker
        mine = self._mine.get((hosted.ctx.app_id, hosted.task_id))
        return marker is not None and mine is not None and marker.producer == mine

    def committed(self, hosted: Any) -> None:
        """After a commit (under the task's lock): the position it reflects."""
        if hosted.host.marker is not None:
            self._mine[(hosted.ctx.app_id, hosted.task_id)] = hosted.host.marker.producer
        self._taken.pop((hosted.ctx.app_id, hosted.task_id), None)
        held = self._held.get((hosted.ctx.app_id, hosted.task_id))
        if held is not None and held.disk is None:
            held.position = dict(hosted.host.position)

    def to_disk(self, hosted: Any, task: Any) -> None:
        """``hosted``'s ``task`` is closing its persistent stores: answer from their files."""
        key = (hosted.ctx.app_id, hosted.task_id)
        held = self._held.get(key)
        if held is None:
            return
        from kspark._graph.instantiate import resolve_store

        config = hosted.ctx.config
        builders = {name: resolve_store(hosted.ctx.builders[name], config) for name in held.stores}
        kept = {}  # its in-memory stores close with it: their entries are kept here
        for name, store in task.stores.items():
            bottom = store.bottom()
            if name in held.stores and hasattr(bottom, "detach"):
                kept[name] = copy.copy(held.stores[name])
                kept[name].inner = bottom.detach()
        self._replace(key, Held(
            held.task_id, held.lock, kept, held.position, "active",
            task_store_dir(hosted.ctx.state_dir, hosted.ctx.app_id, hosted.task_id),
            {name: b for name, b in builders.items() if b.supplier.persistent},
            set(held.stores)))

    def hold_standby(self, ctx: Any, task_id: str, directory: Path, builders: dict[str, Any],
                     here: str) -> None:
        """A standby copy of ``task_id`` (its persistent stores' ``builders``, in
        ``directory``) answers stale reads from here; announced once while kept."""
        key = (ctx.app_id, task_id)
        if not ctx.query_enabled or not builders or key in self._standby:
            return
        self._standby[key] = Held(task_id, threading.Lock(), {}, {}, "standby", directory,
                                  dict(builders), set(builders))

        endpoint = self._start(ctx)
        try:
            RouteAnnouncer.of(ctx.settings, ctx.app_id).announce(Route(
                task_id, tuple(sorted(builders)), endpoint.address, endpoint.token, "standby",
                here), True)
        except Exception as e:  # noqa: BLE001 - stale reads go to the active meanwhile
            log.warning("standby task %s: its query route could not be announced: %s",
                        task_id, e)

    def drop_standby(self, app_id: str, task_id: str) -> None:
        """The copy of ``task_id`` is no longer kept here (or becomes the task's stores)."""
        held = self._standby.pop((app_id, task_id), None)
        if held is not None:
            held.close_opened()

    def drop(self, app_id: str, task_id: str) -> None:
        """The task's stores close: nothing is answered for it here any more. A task this
        worker took over and never committed is withdrawn: queries go back to the worker
        that made its last commit."""
        self._replace((app_id, task_id), None)
        hosted = self._taken.pop((app_id, task_id), None)
        if hosted is not None:
            self._announce(hosted, Held(task_id, None, dict.fromkeys(hosted.ctx.builders),
                                        state="withdrawn"), True)

    def _replace(self, key: tuple[str, str], held: Held | None) -> None:
        old = self._held.pop(key, None) if held is None else self._held.get(key)
        if held is not None:
            self._held[key] = held
        if old is not None and old is not held:
            old.close_opened()

    def _announce(self, hosted: Any, held: Held, moved: bool = False) -> bool:
        """Announce where ``held`` is answered (``moved``: even if said before); whether a
        route was sent."""
        endpoint = self._start(hosted.ctx)
        route = Route(held.task_id, tuple(sorted(held.stores)), endpoint.address,
                      endpoint.token, held.state, hosted.here)
        try:
            RouteAnnouncer.of(hosted.ctx.settings, hosted.ctx.app_id).announce(route, moved)
            return True
        except Exception as e:  # noqa: BLE001 - queries wait for the next announcement
            log.warning("task %s: its query route could not be announced: %s", held.task_id, e)
            return False

    def _start(self, ctx: Any) -> Any:
        """The endpoint of ``ctx``'s host and TLS keys, started at the first call for them."""
        key = (ctx.query_host, *(ctx.config.get(k) for k in TLS_KEYS))
        with self._guard:
            if key not in self._endpoints:
                endpoint = QueryEndpoint(ctx.query_host, self.answer, server_context(ctx.config))
                endpoint.start()
                self._endpoints[key] = endpoint
            return self._endpoints[key]

    # -- answering ---------------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request (see ``_iq/messages.py`` for its fields)."""
        from kspark._iq.messages import answer_with, unavailable

        app, task, name = str(body.get("app")), str(body.get("task")), str(body.get("store"))
        if body.get("standby"):
            return self._from_standby(app, task, name, body)
        held = self._held.get((app, task))
        if held is None:
            return unavailable(f"task {task} of application {app!r} is not held by this "
                               "worker now (it moved, or its worker is starting it)")
        stale = bool(body.get("stale"))
        if held.state == "restoring" and not stale:
            return unavailable(f"task {task} is restoring its stores from their changelogs")
        if held.disk is not None and name not in held.stores:
            return self._from_disk(held, name, body, stale)
        with held.lock:
            if self._held.get((app, task)) is not held:
                return unavailable(f"task {task} closed while the query waited")
            store = held.stores.get(name)
            return answer_with(body, store, held.position, held.stores)

    def _from_standby(self, app: str, task: str, name: str, body: dict[str, Any]
                      ) -> dict[str, Any]:
        from kspark._iq.messages import unavailable

        held = self._standby.get((app, task))
        if held is None:
            return unavailable(f"no standby copy of task {task} of application {app!r} is "
                               "kept by this worker now")
        if not body.get("stale"):
            return unavailable(f"a standby copy of task {task} answers only stale reads "
                               "(StoreQueryParameters.enable_stale_stores())")
        return self._from_disk(held, name, body, False)

    def _from_disk(self, held: Held, name: str, body: dict[str, Any], stale: bool
                   ) -> dict[str, Any]:
        from kspark._iq.messages import answer_with, unavailable

        if name not in held.builders:
            return answer_with(body, None, held.position, held.names)
        assert held.disk is not None
        mark = held.disk / ".checkpoint"
        for _ in range(DISK_TRIES):
            before = _stamp(mark)
            if before is None and not stale:
                time.sleep(0.05)  # a commit is writing the stores down
                continue
            with held.opening:
                store = self._opened(held, name, before)
                try:
                    position = {**held.position, **(read_checkpoint(mark) or {})}
                    out = answer_with(body, store, position, held.builders)
                finally:
                    if before is None:  # a stale read of a database being written
                        store.close()
            if stale or _stamp(mark) == before:
                return out
        return unavailable(f"task {held.task_id} is committing: its stores on disk change "
                           "under every read")


    @staticmethod
    def _opened(held: Held, name: str, stamp: Any) -> Any:
        """Store ``name`` of a closed task, opened read-only: the database opened at this
        checkpoint already, else opened now (and kept while the checkpoint stays)."""
        assert held.disk is not None
        cached = held.opened.pop(name, None)
        if cached is not None and cached[0] == stamp and stamp is not None:
            held.opened[name] = cached
            return cached[1]
        if cached is not None:
            cached[1].close()
        store = open_read_only(held.builders[name], held.disk, name)
        if stamp is not None:
            held.opened[name] = (stamp, store)
        return store


def _stamp(path: Path) -> tuple[int, int, bytes] | None:
    """What tells one checkpoint file from the next (None: no valid one)."""
    try:
        st = os.stat(path)
        text = path.read_bytes()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, text) if read_checkpoint(path) is not None else None


def open_read_only(builder: Any, task_dir: Path, name: str) -> Any:
    """Store ``name`` of a closed task, typed as its ``builder`` types it, read-only, with
    the stream time its retention needs (from the task's ``.progress``)."""
    store = builder.typed_store(ReadOnlyRocksDBBytesStore(name, task_dir / name))
    observed = (read_progress(task_dir / ".progress") or {}).get("stores", {}).get(name)
    if observed is not None and hasattr(store, "resume_observed"):
        store.resume_observed(int(observed))
    return store


_HOST = QueryHost()


def query_host() -> QueryHost:
    """This process's query host."""
    return _HOST
