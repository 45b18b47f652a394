"""Draw the latency chart (benchmarks/latency.png) from ``benchmarks/latency.py`` result lines.

    .venv/bin/python benchmarks/latency_chart.py benchmarks/latency_results.txt

``latency_results.txt`` holds the lines ``latency.py`` printed, one per run (mode,
guarantee, trigger, p50/p90/p99/max); the chart shows p50 and p99 per run on a log scale.
Needs matplotlib (``pip install -e '.[peers]'``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINE = re.compile(r"^(\w+)\s+(\w+)\s+trigger\s+(\w+) ms, (\d+) records/s for (\d+) s: latency "
                  r"p50 (\d+) ms, p90 (\d+) ms, p99 (\d+) ms, max (\d+) ms")


def runs(text: str) -> list[dict]:
    """The runs in ``latency.py``'s output lines.

    >>> runs("real_time   at_least_once   trigger  1000 ms, 5000 records/s for 60 s: "
    ...      "latency p50 5 ms, p90 7 ms, p99 12 ms, max 156 ms (...)")[0]["p99"]
    12
    >>> runs("quix        at_least_once   trigger default ms, 5000 records/s for 60 s: "
    ...      "latency p50 6 ms, p90 9 ms, p99 13 ms, max 24 ms (...)")[0]["mode"]
    'quix'
    """
    out = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            mode, guarantee, trigger, rate, seconds, p50, p90, p99, top = m.groups()
            out.append({"mode": mode, "guarantee": guarantee, "trigger": trigger,
                        "rate": int(rate), "seconds": int(seconds), "p50": int(p50),
                        "p90": int(p90), "p99": int(p99), "max": int(top)})
    return out


PEER_LABELS = {"quix": "Quix Streams\n(its defaults)", "spark": "native PySpark\n(no trigger)"}


def label(r: dict) -> str:
    """The bar's label: a peer's name, or kspark's mode, guarantee and commit interval."""
    if r["mode"] in PEER_LABELS:
        return f"{PEER_LABELS[r['mode']]}\n{r['guarantee']}"
    return f"kspark {r['mode']}\n{r['guarantee']}\ncommit {r['trigger']} ms"


def chart(results: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label(r) for r in results]
    x = range(len(results))
    fig, ax = plt.subplots(figsize=(9, 3.8))
    ax.bar([i - 0.2 for i in x], [r["p50"] for r in results], 0.4, label="p50")
    ax.bar([i + 0.2 for i in x], [r["p99"] for r in results], 0.4, label="p99")
    for i, r in enumerate(results):
        ax.text(i - 0.2, r["p50"], f"{r['p50']}", ha="center", va="bottom", fontsize=8)
        ax.text(i + 0.2, r["p99"], f"{r['p99']}", ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("end-to-end latency (ms, log)")
    ax.set_xticks(list(x), labels, fontsize=8)
    rate = results[0]["rate"] if results else 0
    ax.set_title(f"Latency at {rate:,} records/s (2-partition passthrough, 2 cores)",
                 fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    source = Path(argv[0] if argv else Path(__file__).with_name("latency_results.txt"))
    results = runs(source.read_text())
    if not results:
        print(f"no latency.py result lines in {source}")
        return 1
    out = str(Path(__file__).with_name("latency.png"))
    chart(results, out)
    print(f"wrote {out} ({len(results)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
