"""Run N generated scenarios on kspark and on Java Kafka Streams; report disagreements.

    python -m tests.conformance --count 3000 [--seed 0] [--show 5] [--describe] [--optimize]

``--describe`` compares each topology's description (Java's text) too; ``--optimize`` runs
every scenario with topology.optimization=all.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.conformance.check import compare
from tests.conformance.generate import scenario


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.conformance")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--describe", action="store_true")
    ap.add_argument("--optimize", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    extra = ["describe"] * a.describe + ["optimize"] * a.optimize
    scs = [extra + scenario(a.seed + i) for i in range(a.count)]
    bad = []
    for i in range(0, len(scs), 500):
        bad += compare(scs[i:i + 500])
        print(f"conformance: {min(i + 500, len(scs))}/{len(scs)} scenarios, "
              f"{len(bad)} disagreements", file=sys.stderr, flush=True)
    for sc, expected, got in bad[:a.show]:
        print("\n".join(sc))
        print("-- java:\n" + "\n".join(expected) + "\n-- kspark:\n" + "\n".join(got) + "\n")
    print(f"conformance: {a.count - len(bad)}/{a.count} agree with Java Kafka Streams "
          f"({time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
