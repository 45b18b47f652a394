"""Global stores for interactive queries: the querying process's own read-only copy.

A global store holds every partition of its topic on every instance (as in Kafka Streams,
where any instance answers any key of a global store from its local copy). On Spark the
workers' copies live in Python worker processes that change from batch to batch, so the
process that queries (the driver, a Spark Connect client) keeps a copy of its own: built
at the first read of a global store, from the global topics with the same code the workers
use (``_engine/state/global_recovery.py``, KIP-406 included), in a temporary directory under
``<state.dir>/<application.id>/`` (removed at close) for a persistent store.

**Freshness:** each read first brings the copy to the global topics' read_committed ends as
of that read (one ListOffsets request; records are read only when the ends moved). So a
read sees every global record committed before it, possibly more than the application's
tasks have used so far (a micro-batch uses the ends its batch pinned). The answer's
position (IQv1 does not show it) is each global partition's last applied offset.

Example (needs a broker, so not run)::

    copy = GlobalCopy(topology._graph, config)
    copy.store(StoreQueryParameters.from_name_and_type(
        "countries-store", QueryableStoreTypes.key_value_store())).get("fr")
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kspark._engine.global_task import global_store_dir
from kspark._engine.query.evaluate import evaluate
from kspark._engine.query.facades import ReadOnlyStore
from kspark._engine.query.types import check_store_type
from kspark._engine.query.window_facades import make_facade
from kspark._engine.state.global_recovery import catch_up_globals, global_reset_policy
from kspark._graph.instantiate import build_global_task
from kspark._kafka.admin import Admin
from kspark._kafka.changelog_reader import KafkaChangelogReader
from kspark._kafka.settings import as_settings
from kspark.errors import StateStoreNotAvailableError
from kspark.query import FailureReason, Position, QueryResult, StateQueryResult

__all__ = ["GlobalCopy", "global_query_refused"]

log = logging.getLogger("kspark")


def global_query_refused() -> StateQueryResult:
    """IQv2's answer for a global store, as Kafka Streams' ``KafkaStreams.query`` (and the
    TopologyTestDriver) gives it: a global result failing with UNKNOWN_QUERY_TYPE.

    >>> global_query_refused().get_global_result().get_failure_reason().name
    'UNKNOWN_QUERY_TYPE'
    """
    out = StateQueryResult()
    out.set_global_result(QueryResult.for_failure(
        FailureReason.UNKNOWN_QUERY_TYPE, "Global stores do not yet support the query API "
        "(StateQueryRequest), as in Kafka Streams. Read them with "
        "KafkaStreams.store(StoreQueryParameters)."))
    return out


class GlobalCopy:
    """This process's copy of ``graph``'s global stores, for ``config``'s application."""

    def __init__(self, graph: Any, config: Mapping[str, Any]):
        self.graph, self.config = graph, config
        self.names = sorted(graph.global_stores)
        self._settings = as_settings(config)
        self._lock = threading.Lock()
        self._state: Any = None
        self._directory: Path | None = None
        self._admin: Admin | None = None
        self._partitions: list[tuple[str, int]] | None = None
        self._caught_up = False

    def store(self, parameters: Any) -> ReadOnlyStore:
        """The read-only store ``parameters`` (StoreQueryParameters) names: every read
        answered here, from the copy caught up to the global topics' ends. The partition
        ``parameters`` may name is ignored (a global store has all of them, as in Java)."""
        name, store_type = parameters.store_name(), parameters.query_type()
        with self._lock:
            check_store_type(name, self._built().stores[name], store_type)

        def ask(query: Any, partitions: set[int] | None) -> StateQueryResult:
            out = StateQueryResult()
            out.set_global_result(self.evaluate(name, query))
            return out

        return make_facade(store_type, ask, name)

    def evaluate(self, name: str, query: Any) -> QueryResult:
        """``query`` answered by global store ``name``, caught up first, at its position."""
        with self._lock:
            self._catch_up(name)
            state = self._state
            topic = next(t for t in state.topics if state.store_of(t) == name)
            position = Position.empty()
            for (t, p), next_offset in sorted(state.offsets.items()):
                if t == topic and next_offset > 0:
                    position.with_component(t, p, next_offset - 1)
            return evaluate(query, state.stores[name], position)

    def _built(self) -> Any:
        """The global stores (empty until the first catch-up), made at the first call."""
        if self._state is None:
            app_dir = global_store_dir(self.config["state.dir"],
                                       self.config["application.id"]).parent
            app_dir.mkdir(parents=True, exist_ok=True)
            self._directory = Path(tempfile.mkdtemp(prefix="query-copy-", dir=app_dir))
            self._state = build_global_task(self.graph, self.config, self._directory)
        return self._state

    def _catch_up(self, name: str) -> None:
        """Apply the global topics' records up to their read_committed ends; a failure after
        a first catch-up is logged and the copy answers as it is (as a Java instance's
        global store whose thread is behind); before one, the store is not available."""
        state = self._built()
        try:
            if self._admin is None:
                self._admin = Admin(self._settings, int(self.config["request.timeout.ms"]))
            ends = self._admin.end_offsets(self._global_partitions(self._admin))
            if not self._caught_up or any(state.offsets.get(tp) != e for tp, e in ends.items()):
                pins: dict[str, dict[str, int]] = {}
                for (t, p), end in ends.items():
                    pins.setdefault(t, {})[str(p)] = end
                reader = KafkaChangelogReader(self._admin, self._settings,
                                              int(self.config["source.read.timeout.ms"]))
                catch_up_globals(state, reader, pins, self._reset_policy)
            self._caught_up = True
        except Exception as e:  # noqa: BLE001 - a broker unreachable: say so, or answer as is
            if not self._caught_up:
                raise StateStoreNotAvailableError(
                    f"global store {name!r} cannot be read now: its copy could not read the "
                    f"global topics ({type(e).__name__}: {e}); ask again once the brokers "
                    "answer") from e
            log.warning("global store %r: its copy could not catch up now (%s: %s); it "
                        "answers with what it has", name, type(e).__name__, e)

    def _global_partitions(self, admin: Admin) -> list[tuple[str, int]]:
        """Every partition of the global topics (kept once all of them were found)."""
        if self._partitions is None:
            counts = admin.partition_counts()
            topics = self.graph.global_topics()
            found = [(t, p) for t in topics if t in counts for p in range(counts[t])]
            if all(t in counts for t in topics):
                self._partitions = found
            return found
        return self._partitions

    def _reset_policy(self, topic: str) -> str:
        """The topic's ``offset_reset``, else ``global.consumer.auto.offset.reset``."""
        offset_reset = next((g.source.offset_reset for g in self.graph.global_stores.values()
                             if g.source.topics[0] == topic and g.source.offset_reset), None)
        configured = self.config.get("global.consumer.auto.offset.reset")
        return global_reset_policy(offset_reset, configured)

    def close(self) -> None:
        """Close the stores and remove the copy's directory."""
        with self._lock:
            state, self._state = self._state, None
            if state is not None:
                state.close()
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
                self._directory = None
