"""A Kafka source's settings as one typed object, travelling as one JSON data source option.

The planner (``plan.py``) makes one :class:`SourceOptions` per Kafka-reading sub-topology;
``planner.build`` sets it as the option :data:`OPTION`; the source (``source.py``) reads it
back. Client settings (credentials) never travel here: see ``source.source_for``.

Example:
    >>> o = SourceOptions(("in",), "localhost:9092", 1000, 30000, 60000, stop={"in": {"0": 5}})
    >>> SourceOptions.from_json(o.to_json()) == o
    True
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields

from kspark.errors import TopologyError

__all__ = ["SourceOptions", "OPTION", "Offsets"]

Offsets = dict[str, dict[str, int]]  # {topic: {partition: offset}}

OPTION = "kspark"  # the one data source option holding a SourceOptions as JSON


@dataclass(frozen=True)
class SourceOptions:
    """What one Kafka source reads and how.

    ``topics``: read from Kafka (one task per partition index). ``resets``: the offset reset
    policy of topics that have one. ``start``: the query's first offsets where pinned (see
    ``_spark/resume.py``). ``stop``: an incremental batch run's stop offsets (KIP-95), None
    otherwise. ``global_topics``: the global stores' topics whose ends this source pins with
    every micro-batch. ``clock_ms``: the pinned clock's granularity (0: no clock, see
    ``source.CLOCK``). ``max_offsets``: records per micro-batch at most. ``timeout_ms``: the
    admin client's timeout; ``read_timeout_ms``: a range read's. ``emit``: "records", or
    "ranges" (a task marker with the task's ranges, the stage reads the records).
    ``looped``: those of ``topics`` the application writes itself and reads back in a later
    micro-batch (a cycle's back edge, ``QueryPlan.looped``): they have no stop offsets, and
    every micro-batch (an incremental batch run's too) reads them to their end.
    """

    topics: tuple[str, ...]
    bootstrap: str
    max_offsets: int
    timeout_ms: int
    read_timeout_ms: int
    resets: dict[str, str] = field(default_factory=dict)
    start: Offsets = field(default_factory=dict)
    stop: Offsets | None = None
    global_topics: tuple[str, ...] = ()
    clock_ms: int = 0
    emit: str = "records"
    looped: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The options as one JSON object (see :meth:`from_json`)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SourceOptions:
        """The options :meth:`to_json` wrote; TopologyError names what is missing or unknown."""
        data = json.loads(text)
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls)
                    if f.default is MISSING and f.default_factory is MISSING}
        if not isinstance(data, dict) or set(data) - names or required - set(data):
            raise TopologyError(f"the Kafka source's {OPTION!r} option is not SourceOptions "
                                f"(fields {sorted(names)}): {text[:200]!r}")
        data["topics"] = tuple(data["topics"])
        data["global_topics"] = tuple(data.get("global_topics", ()))
        data["looped"] = tuple(data.get("looped", ()))
        return cls(**data)

