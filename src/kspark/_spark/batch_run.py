"""An incremental batch run (KIP-95, ``autostop.at=eol``) of one application, on the driver.

At start, the run's stop offsets are read back from the metadata topic (a run that failed
or was stopped resumes with the same offsets) or, for a new run, taken from the input
topics' read_committed ends and written there first (see ``_control/stop_offsets.py``). The
query's source stops at them (AvailableNow). A whole topology is one query, and a
micro-batch commits only when every stage downstream of the source tasks has processed its
rows, so when the last batch commits, repartitions and ``through()`` topics are drained too:
intermediate topics need no stop offsets of their own. A cycle's back edge (micro-batch
mode's looped topics, ``QueryPlan.looped``) is read from Kafka in a later micro-batch than
the one writing it: it has no stop offset, every batch reads it to its end, and the query
ends only when a batch finds nothing new in it either (``source.py``); :meth:`BatchRun.finish`
checks that it was read to its end.

A streaming start deletes the stop offsets, so the next batch run is a new one.

Example (needs a broker, so not run)::

    run = BatchRun.at_start(config, admin, ["orders"], {"orders": 2})
    stop = run.stop_offsets()        # {"orders": {"0": 120, "1": 98}}
    ...                              # the query runs to them
    run.finish(checkpoint)           # checks they were reached; writes the finished marker
                                     # (real-time mode: run.finish_at(committed offsets))
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kspark._kafka.admin import Admin
from kspark._control.stop_offsets import StopOffsets, format_offsets
from kspark._spark.checkpoint import Offsets, SparkCheckpoint
from kspark.config import StreamsConfig
from kspark.errors import StreamsError

__all__ = ["BatchRun"]

log = logging.getLogger("kspark")
TP = tuple[str, int]


class BatchRun:
    """The stop offsets of the running batch run, and how to end it."""

    def __init__(self, meta: StopOffsets, stop: dict[TP, int], resumed: bool,
                 admin: Admin | None = None, drained: list[TP] | None = None):
        self.meta, self.stop, self.resumed = meta, stop, resumed
        self.admin, self.drained = admin, drained or []

    @classmethod
    def at_start(cls, c: StreamsConfig, admin: Admin, topics: list[str],
                 counts: Mapping[str, int], drained: list[TP] | None = None
                 ) -> "BatchRun | None":
        """Resume or begin the batch run (None when streaming, after deleting stop offsets).
        ``drained``: partitions without stop offsets that the run must leave read to their
        end (micro-batch mode's looped topics: the application writes them itself)."""
        meta = StopOffsets(admin.settings, c["application.id"], c["request.timeout.ms"],
                           c["replication.factor"])
        meta.create()
        state = meta.read()
        app = c["application.id"]
        if c["autostop.at"] != "eol":
            if meta.delete(state):
                log.info("application %r starts streaming: the stop offsets of its last batch "
                         "run were deleted from %r; the next batch run is a new one", app,
                         meta.topic)
            return None
        tps = [(t, p) for t in topics for p in range(counts[t])]
        if state.resumable:
            missing = [tp for tp in tps if tp not in state.offsets]
            if missing:
                t, p = missing[0]
                raise StreamsError(
                    f"application {app!r} has an unfinished batch run whose stop offsets (topic "
                    f"{meta.topic!r}) do not cover topic {t!r} partition {p}: the topology or "
                    "the partitions changed since it began. Finish it with the previous "
                    "topology, or delete its stop offsets (kspark reset --application-id "
                    f"{app} --delete-stopoffsets ...) to begin a new run")
            stop = {tp: state.offsets[tp] for tp in tps}
            log.info("application %r resumes its unfinished batch run; stop offsets %s",
                     app, format_offsets(stop))
            return cls(meta, stop, True, admin, drained)
        stop = meta.begin_run(state, admin.end_offsets(tps))
        log.info("application %r begins a batch run; stop offsets %s", app, format_offsets(stop))
        return cls(meta, stop, False, admin, drained)

    def stop_offsets(self) -> Offsets:
        """As the source takes them: ``{topic: {partition: offset}}``."""
        out: Offsets = {}
        for (t, p), o in self.stop.items():
            out.setdefault(t, {})[str(p)] = o
        return out

    def finish(self, checkpoint: SparkCheckpoint) -> None:
        """The query ended by itself: check that it reached every stop offset, then write the
        finished marker. Raises StreamsError (the run stays unfinished) if it fell short."""
        committed = checkpoint.last_committed()
        reached = checkpoint.offsets(committed) if committed is not None else {}
        start = checkpoint.pinned_start() or {}
        at = {(t, p): at for (t, p) in [*self.stop, *self.drained]
              if (at := reached.get(t, {}).get(str(p), start.get(t, {}).get(str(p)))) is not None}
        self._check_drained(at)
        self.finish_at(at)

    def _check_drained(self, reached: Mapping[TP, int]) -> None:
        """Every ``drained`` partition was read to its read_committed end (the query ends
        only when a batch finds nothing new in them, so this holds unless a writer outside
        the application wrote to them meanwhile)."""
        if not self.drained or self.admin is None:
            return
        ends = self.admin.end_offsets(self.drained)
        for tp in sorted(self.drained):
            if reached.get(tp, 0) < ends[tp]:
                raise StreamsError(
                    f"application {self.meta.app_id!r}: the batch run ended at offset "
                    f"{reached.get(tp)} of topic {tp[0]!r} partition {tp[1]}, whose end is "
                    f"{ends[tp]}: records the application wrote to it are not processed yet; "
                    "the run stays unfinished and the next start resumes it")

    def finish_at(self, reached: Mapping[TP, int]) -> None:
        """The run ended having reached ``reached`` (real-time mode: the consumer group's
        committed offsets): check every stop offset, then write the finished marker."""
        for (t, p), o in sorted(self.stop.items()):
            at = reached.get((t, p))
            if at is None and o <= 0:  # an empty partition: nothing to read, nothing committed
                continue
            if at is None or at < o:
                raise StreamsError(
                    f"application {self.meta.app_id!r}: the batch run ended at offset {at} of "
                    f"topic {t!r} partition {p}, before its stop offset {o}; it stays "
                    "unfinished and the next start resumes it")
        self.meta.finish()
        log.info("application %r finished its batch run at %s", self.meta.app_id,
                 format_offsets(self.stop))
