"""The test matrix in one place: the execution modes, the full-matrix switch, and how a
parametrization is sampled for ``make test``'s time budget (docs/testing.md, "The matrix").

``make test`` runs a sample, so the suite stays under 25 minutes; ``KSPARK_FULL_MATRIX=1``
(any value but empty or ``0``) runs everything. This module is the only place that reads it.

- Ask for the ``execution_mode`` fixture (tests/conftest.py) to run a test in both modes.
- ``@sampled_modes("real_time")``: that mode only in ``make test``, both in the full matrix.
- ``sampled(params, keep=...)``: any parametrization's values, the others left out (not
  collected) unless in the full matrix.
- ``@pytest.mark.full_matrix(reason=...)`` on a test, or ``full_matrix_only(value,
  reason=...)`` as one parameter: collected, and skipped unless in the full matrix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

MODES = ("micro_batch", "real_time")
FULL_MATRIX = os.environ.get("KSPARK_FULL_MATRIX", "") not in ("", "0")
SWITCH = "KSPARK_FULL_MATRIX=1"  # how to ask for the full matrix, for skip reasons


def full_matrix() -> bool:
    """Whether this run is the full matrix (``KSPARK_FULL_MATRIX=1``)."""
    return FULL_MATRIX


def _value(param: Any) -> Any:
    """A parameter's value (a ``pytest.param``'s values: one, or a tuple of several)."""
    if isinstance(param, type(pytest.param(None))):
        return param.values[0] if len(param.values) == 1 else tuple(param.values)
    return param


def sampled(params: Sequence[Any], keep: Any) -> list[Any]:
    """``params`` in the full matrix; else only those in ``keep`` (a value or a list of
    values; a tuple value for a parametrization of several names), the others not
    collected, in the order of ``params``."""
    kept = keep if isinstance(keep, list) else [keep]
    return [p for p in params if FULL_MATRIX or _value(p) in kept]


def sampled_modes(keep: str) -> pytest.MarkDecorator:
    """Parametrize the ``execution_mode`` fixture: ``keep`` only in ``make test``, both modes
    in the full matrix."""
    return pytest.mark.parametrize("execution_mode", sampled(MODES, keep=keep))


def full_matrix_only(*values: Any, reason: str, id: str | None = None) -> Any:
    """One parameter set that runs in the full matrix only (collected, skipped else)."""
    return pytest.param(*values, marks=pytest.mark.full_matrix(reason=reason), id=id)


def skip_reason(reason: str | None) -> str:
    """What a test marked ``full_matrix`` says when skipped."""
    return f"full matrix only ({SWITCH} runs it): " + (reason or "the suite's time budget")


def argnames_of(argnames: str | Iterable[str]) -> list[str]:
    """The names of a ``parametrize`` mark's first argument."""
    if isinstance(argnames, str):
        return [n.strip() for n in argnames.split(",") if n.strip()]
    return list(argnames)
