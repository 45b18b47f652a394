"""``kspark reset``'s arguments: every option of Kafka's ``kafka-streams-application-reset``
that applies to kspark, and kspark's own (``--state-dir``, ``--checkpoint-location``,
``--delete-stopoffsets``). The reset itself is ``_control/reset.py``.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser(); add_reset(p.add_subparsers(dest="command"))
    >>> args = p.parse_args(["reset", "--application-id", "a", "--shift-by", "-5"])
    >>> reset_options(args, {"auto.offset.reset": "earliest"}, now_ms=0)["scenario"].value
    -5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kspark._control.reset_plan import choose_scenario, make_scenario
from kspark.errors import KSparkError

__all__ = ["add_reset", "reset_options", "CONFIG_HELP"]

CONFIG_HELP = ("a properties file with the application's Kafka client settings "
               "(security.protocol, sasl.*, ssl.*, ...; the application's own file works); "
               "values may be ${env:NAME} or ${file:PATH}")


def add_reset(sub: Any) -> None:
    """``kspark reset --application-id ID [options]``."""
    reset = sub.add_parser("reset", help="reset an application so that it reprocesses its input "
                           "(as kafka-streams-application-reset), or delete its stop offsets")
    reset.add_argument("--application-id", required=True)
    reset.add_argument("--bootstrap-servers", default=None,
                       help="the cluster (default: bootstrap.servers of --config)")
    reset.add_argument("--config", type=Path, default=None, help=CONFIG_HELP)
    reset.add_argument("--input-topics", default=None,
                       help="comma-separated input topics whose offsets to reset (default: the "
                       "topics of --from-file, else every non-internal topic the application's "
                       "consumer group has offsets for)")
    reset.add_argument("--internal-topics", default=None, help="comma-separated internal topics "
                       "to delete, a subset of those the reset deletes by default (see them with "
                       "--dry-run); default: all of them")
    to = reset.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset input offsets to the "
                    "earliest (the default)")
    to.add_argument("--to-latest", action="store_true", help="reset input offsets to the end")
    to.add_argument("--to-offset", type=int, default=None, metavar="N",
                    help="reset input offsets to N (clamped to each partition's log)")
    to.add_argument("--shift-by", type=int, default=None, metavar="N",
                    help="move each committed input offset by N, which may be negative "
                    "(clamped to each partition's log)")
    to.add_argument("--to-datetime", default=None, metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="reset input offsets to the first record at or after this time; a "
                    "zone may follow (Z, +hh, +hhmm, +hh:mm); none: UTC")
    to.add_argument("--by-duration", default=None, metavar="PnDTnHnMnS",
                    help="reset input offsets to the first record at or after now minus this "
                    "ISO-8601 duration (e.g. PT1H: an hour ago)")
    to.add_argument("--from-file", default=None, metavar="CSV",
                    help="reset input offsets to those of a CSV file: one "
                    "TOPIC,PARTITION,OFFSET a line (clamped to each partition's log)")
    reset.add_argument("--force", action="store_true", help="remove the members of the "
                       "application's consumer groups first (left behind by stopped instances "
                       "with a long session timeout); refused if one joins again, which a "
                       "running one does")
    reset.add_argument("--delete-stopoffsets", action="store_true",
                       help="only delete the stop offsets of the last batch run (KIP-95): the "
                       "next batch run begins anew; nothing else is reset")
    reset.add_argument("--state-dir", default=None, help="the application's state.dir (default: "
                       "state.dir's default); <state-dir>/<application-id> is deleted")
    reset.add_argument("--checkpoint-location", default=None, help="the application's "
                       "checkpoint.location, if set (a local path)")
    reset.add_argument("--dry-run", action="store_true",
                       help="print what would be done, do nothing")


def _given(args: argparse.Namespace) -> dict[str, Any]:
    return {"--to-earliest": args.to_earliest, "--to-latest": args.to_latest,
            "--to-offset": args.to_offset, "--shift-by": args.shift_by,
            "--to-datetime": args.to_datetime, "--by-duration": args.by_duration,
            "--from-file": args.from_file}


def reset_options(args: argparse.Namespace, config: Any,
                  now_ms: int | None = None) -> dict[str, Any]:
    """The keyword arguments of ``plan_reset`` for ``args`` (``config``: the application's,
    for ``state.dir`` and ``auto.offset.reset``)."""
    given = _given(args)
    if args.delete_stopoffsets and (any(v not in (None, False) for v in given.values())
                                    or args.input_topics or args.internal_topics
                                    or args.state_dir or args.checkpoint_location):
        raise KSparkError("--delete-stopoffsets deletes only the stop offsets: give it alone (a "
                          "full reset deletes the metadata topic that holds them anyway)")
    option, value = choose_scenario(given)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return {
        "input_topics": args.input_topics.split(",") if args.input_topics else None,
        "internal_topics": args.internal_topics.split(",") if args.internal_topics else None,
        "scenario": make_scenario(option, value, now_ms=now,
                                  read_text=lambda path: Path(path).read_text()),
        "delete_stopoffsets": args.delete_stopoffsets,
        "state_dir": None if args.delete_stopoffsets else (
            args.state_dir or config.get("state.dir")),
        "checkpoint_location": args.checkpoint_location,
        "start_at": "latest" if config.get("auto.offset.reset") == "latest" else "earliest",
        "force": args.force}
