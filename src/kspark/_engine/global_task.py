"""Global stores: the global state task that keeps them, and the read-only view tasks get.

A global store holds every partition of its topic. Its processor (for a GlobalKTable, a
table source that upserts and deletes on tombstones) is the only writer; every processor of
every task may read it through ``context.get_state_store(name)`` without being connected,
and any write there fails. The topic is the store's changelog: a global store has none.

Example:
    >>> from kspark import Serdes, StreamsBuilder
    >>> from kspark._engine.nodes import RawRecord
    >>> b = StreamsBuilder()
    >>> _ = b.global_table("countries", key_serde=Serdes.String(), value_serde=Serdes.String())
    >>> from kspark._graph.instantiate import build_global_task
    >>> g = build_global_task(b.build()._graph, {"application.id": "a", "state.dir": "/tmp"})
    >>> g.update(RawRecord("countries", 0, 0, 5, b"fr", b"France", ()))
    >>> g.stores["countries-STATE-STORE-0000000000"].get("fr")
    ValueAndTimestamp(value='France', timestamp=5)
    >>> g.offsets
    {('countries', 0): 1}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kspark._engine.api import Processor, ProcessorContext, Record, RecordMetadata
from kspark._engine.nodes import RawRecord, deserialize_record
from kspark._engine.state.build import build_store
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark.errors import ProcessorError, StateStoreError, TopologyError
from kspark._engine.state.build import private_state_dir, bottom
from kspark._engine.timestamps import ConsumerRecord

__all__ = ["GlobalStateTask", "GlobalFeed", "ReadOnlyStore", "GlobalTableSourceProcessor",
           "global_store_dir"]

log = logging.getLogger("kspark")
_WRITES = ("put", "put_if_absent", "put_all", "delete", "flush", "close", "init")


def global_store_dir(state_dir: str, app_id: str) -> Path:
    """``<state.dir>/<application.id>/global``, as Kafka Streams names it."""
    private_state_dir(state_dir)
    return Path(state_dir, app_id, "global")


class ReadOnlyStore:
    """A global store as a task's processors see it: reads pass through, writes fail."""

    def __init__(self, store: Any, name: str):
        self._store = store
        self._name = name

    def name(self) -> str:
        return self._name

    def __getattr__(self, attr: str) -> Any:
        if attr in _WRITES:
            def refuse(*args: Any, **kwargs: Any) -> Any:
                raise StateStoreError(
                    f"global store {self._name!r} is read only: {attr}() is not allowed from a "
                    "task's processor; only the global store's own processor updates it, "
                    "from its topic")
            return refuse
        return getattr(self._store, attr)


class GlobalTableSourceProcessor(Processor):
    """A GlobalKTable's processor: a value upserts its key (with the record's timestamp), a
    tombstone deletes it, a null key is skipped with a warning (as Java's KTableSource)."""

    def __init__(self, store_name: str):
        self.store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(self.store_name)

    def process(self, record: Record) -> None:
        if record.key is None:
            meta = self.context.record_metadata()
            where = ("no input record" if meta is None else
                     f"topic {meta.topic!r}, partition {meta.partition}, offset {meta.offset}")
            log.warning("global store %r skips a record with a null key (%s)", self.store_name,
                        where)
            return
        if record.value is None:
            self.store.delete(record.key)
        else:
            self.store.put(record.key, ValueAndTimestamp(record.value, record.timestamp))


class _GlobalContext(ProcessorContext):
    """What a global store's processor sees: its stores (writable), no forwarding, no
    stream time, no punctuation."""

    def __init__(self, task: "GlobalStateTask", processor: str, store: str):
        self._task, self._processor, self._store = task, processor, store

    def forward(self, record: Record, child_name: str | None = None) -> None:
        raise TopologyError(
            f"processor {self._processor!r} of global store {self._store!r} forwarded a record: "
            "a global store's processor only updates its store, it has no children (use a "
            "regular source and processor to produce records)")

    def record_metadata(self) -> RecordMetadata | None:
        raw = self._task.current
        return None if raw is None else RecordMetadata(raw.topic, raw.partition, raw.offset)

    def task_id(self) -> str:
        return "-1_-1"  # as Java's global task

    def application_id(self) -> str:
        return self._task.config["application.id"]

    def app_config(self) -> Mapping[str, Any]:
        return self._task.config

    def current_stream_time_ms(self) -> int:
        raise TopologyError("there is no stream time for a global store's processor "
                            f"({self._processor!r})")

    def current_system_time_ms(self) -> int:
        import time

        return int(time.time() * 1000)

    def commit(self) -> None:
        """Nothing to do: the global task keeps its own offsets."""

    def get_state_store(self, name: str) -> Any:
        store = self._task.stores.get(name)
        if store is None:
            raise TopologyError(f"processor {self._processor!r} of a global store asked for "
                                f"store {name!r}, which is not a global store")
        return store

    def schedule(self, interval_ms: int, punctuation_type: Any, callback: Any) -> Any:
        raise TopologyError(f"processor {self._processor!r} of global store {self._store!r} "
                            "cannot schedule punctuation")


class GlobalFeed(NamedTuple):
    """How one global topic updates its store: serdes, extractor and processor."""

    store: str
    key_serde: Any
    value_serde: Any
    extractor: Any
    processor_name: str
    supplier: Any


class GlobalStateTask:
    """Keeps every global store of a topology from its topic, record by record.

    ``builders``: the stores' resolved builders by name; ``feeds``: by topic.
    ``offsets``: the next offset of every global topic-partition applied so far.
    ``directory``: where persistent global stores live (default: a temporary directory).
    """

    def __init__(self, config: Mapping[str, Any], builders: Mapping[str, Any],
                 feeds: Mapping[str, GlobalFeed], directory: Path | None = None):
        self.config = config
        self.offsets: dict[tuple[str, int], int] = {}
        self.topic_ids: dict[str, str] = {}  # of the topics the offsets are in (a host's)
        self.current: RawRecord | None = None
        self.stores = {name: build_store(b, directory) for name, b in builders.items()}
        self._by_topic: dict[str, tuple[Any, Any, Any, Any, str]] = {}
        self._stores_by_topic = {topic: f.store for topic, f in feeds.items()}
        for topic, f in feeds.items():
            processor = f.supplier()
            processor.init(_GlobalContext(self, f.processor_name, f.store))
            self._by_topic[topic] = (f.key_serde, f.value_serde, f.extractor, processor,
                                     f.processor_name)

    @property
    def topics(self) -> list[str]:
        return list(self._by_topic)

    def store_of(self, topic: str) -> str:
        """The global store ``topic`` feeds."""
        return self._stores_by_topic[topic]

    def wipe(self, topic: str) -> None:
        """Empty the store ``topic`` feeds and forget its offsets (it is rebuilt from the topic)."""
        bottom(self.stores[self._stores_by_topic[topic]]).wipe()
        self.offsets = {tp: o for tp, o in self.offsets.items() if tp[0] != topic}

    def flush(self) -> None:
        for store in self.stores.values():
            store.flush()

    def update(self, raw: RawRecord) -> None:
        """Apply one record of a global topic to its store."""
        ks, vs, extractor, processor, name = self._by_topic[raw.topic]
        self.current = raw
        key, value = deserialize_record(raw, ks, vs, f"global store {name!r}")
        ts = raw.timestamp
        if extractor is not None:
            view = ConsumerRecord(raw.topic, raw.partition, raw.offset, raw.timestamp, key,
                                  value, raw.headers)
            ts = int(extractor.extract(view, -1) if hasattr(extractor, "extract")
                     else extractor(view, -1))
        try:
            processor.process(Record(key, value, ts, raw.headers))
        except (TopologyError, StateStoreError):
            raise
        except Exception as e:
            raise ProcessorError(
                f"processor {name!r} of a global store failed on global topic {raw.topic!r} "
                f"partition {raw.partition} offset {raw.offset}: {type(e).__name__}: {e}") from e
        finally:
            self.current = None
        self.offsets[(raw.topic, raw.partition)] = raw.offset + 1

    def read_only(self) -> dict[str, ReadOnlyStore]:
        """The stores as tasks see them."""
        return {name: ReadOnlyStore(store, name) for name, store in self.stores.items()}

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
