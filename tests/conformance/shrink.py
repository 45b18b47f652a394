"""Shrink a disagreeing scenario to fewer input lines that still disagree (for diagnosis).

    python -m tests.conformance.shrink --seed 11
"""

from __future__ import annotations

import argparse

from tests.conformance.check import normal
from tests.conformance.generate import scenario
from tests.conformance.lang import run
from tests.conformance.reference import run_java


def shrink(lines: list[str]) -> list[str]:
    """Drop input and store lines one at a time while kspark still disagrees with Java."""
    while True:
        cut = [i for i, line in enumerate(lines) if line.startswith(("input", "store"))]
        candidates = [lines[:i] + lines[i + 1:] for i in cut]
        answers = run_java(candidates)
        for cand, expected in zip(candidates, answers, strict=True):
            if normal(run(cand)) != normal(expected):
                lines = cand
                break
        else:
            return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    sc = shrink(scenario(ap.parse_args().seed))
    print("\n".join(sc))
    print("-- java:\n" + "\n".join(run_java([sc])[0]) + "\n-- kspark:\n" + "\n".join(run(sc)))


if __name__ == "__main__":
    main()
