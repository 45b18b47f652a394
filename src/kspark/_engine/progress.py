"""KeepsProgress: a processor whose stream-time bookkeeping survives restarts.

A DSL processor that keeps integer fields about stream time (the newest timestamp it has
observed, when it last emitted) names them in ``progress_fields``; the task saves them in
its progress (``StreamTask.progress``, under ``processors``) at each commit and hands them
back to the next incarnation before its first record. Only declared fields are ever set.

Example:
    >>> class Counter(KeepsProgress):
    ...     progress_fields = ("observed",)
    ...     observed = -1
    >>> c = Counter(); c.resume_progress({"observed": 7, "other": 1}); c.save_progress()
    {'observed': 7}
    >>> progress_fields_of(object())
    ()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = ["KeepsProgress", "progress_fields_of"]


class KeepsProgress:
    """A processor with fields the task keeps in its progress across restarts."""

    progress_fields: ClassVar[tuple[str, ...]] = ()

    def save_progress(self) -> dict[str, int]:
        """The declared fields and their values (JSON-ready integers)."""
        return {f: getattr(self, f) for f in self.progress_fields}

    def resume_progress(self, saved: Mapping[str, int]) -> None:
        """Take back what :meth:`save_progress` saved; fields not declared are ignored."""
        for field, value in saved.items():
            if field in self.progress_fields:
                setattr(self, field, value)


def progress_fields_of(processor: Any) -> tuple[str, ...]:
    """The fields ``processor`` keeps in the task's progress (none unless it declares some)."""
    return tuple(processor.progress_fields) if isinstance(processor, KeepsProgress) else ()
