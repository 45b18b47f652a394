"""Summaries of the runs: a table per workload, results.json and a bar chart (peers.png)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence

TITLES = {"w1": "W1 filter + map", "w2": "W2 count per key (100,000 keys)",
          "w3": "W3 windowed count (2-minute tumbling windows, 1 minute grace)",
          "w4": "W4 stream-table join (100,000 users)"}
NOTES = {
    ("w2", "spark"): "update mode: emits the changed counts once per micro-batch",
    ("w2", "quix"): "RocksDB state with changelog topic (Quix default)",
    ("w2", "kspark"): "kspark's default store, logged",
    ("w1", "kspark_rt"): "execution.mode=real_time, commit every 1 s",
    ("w2", "kspark_rt"): "execution.mode=real_time, commit every 1 s",
    ("w3", "spark"): "update mode, watermark 1 minute: emits the changed counts once per "
                     "micro-batch",
    ("w3", "kspark"): "kspark's default window store, logged",
    ("w3", "kspark_rt"): "execution.mode=real_time, commit every 1 s",
    ("w3", "raw"): "a dict per partition, closed windows dropped",
    ("w4", "spark"): "stream-static join, the users read by Spark's Kafka batch source, broadcast",
    ("w4", "kspark_rt"): "execution.mode=real_time, commit every 1 s",
    ("w4", "raw"): "the users topic read into a dict first",
    ("w1", "bytewax"): "1 worker (run_main)",
    ("w2", "bytewax"): "1 worker (run_main), in-memory state",
}
METRICS = ("rate_whole", "rate_after", "first_s", "peak_rss_mb")


def _spread(values: Sequence[float]) -> dict | None:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else None


def _unverified(run: dict) -> str:
    """The figures of a run whose output was wrong, to show beside its error."""
    u = run.get("unverified")
    if not u:
        return ""
    after = f"{u['rate_after']:,.0f}" if u["rate_after"] else "-"
    return (f" (unverified: {u['rate_whole']:,.0f} records/s whole run, {after} after "
            f"start-up, first output {u['first_s']:.1f} s)")


def summarize(runs: list[dict], systems: Sequence[str], workloads: Sequence[str]) -> dict:
    """``{workload: {system: {"ok": i, "runs": n, "errors": [...], metric: spread}}}``."""
    out: dict = {}
    for w in workloads:
        for s in systems:
            mine = [r for r in runs if r["workload"] == w and r["system"] == s]
            ok = [r for r in mine if r["ok"]]
            row = {"ok": len(ok), "runs": len(mine), "note": NOTES.get((w, s), ""),
                   "errors": [f"repeat {r['repeat']}: {r['error']}{_unverified(r)}"
                              for r in mine if not r["ok"]]}
            for m in METRICS:
                row[m] = _spread([r[m] for r in ok if r[m] is not None])
            out.setdefault(w, {})[s] = row
    return out


def _fmt(spread: dict | None, fmt: str) -> str:
    if spread is None:
        return "-"
    return f"{spread['median']:{fmt}} ({spread['min']:{fmt}}–{spread['max']:{fmt}})"


def _ratio(row: dict, ref: dict | None, metric: str) -> str:
    if not ref or not row[metric] or not ref[metric] or not ref[metric]["median"]:
        return "-"
    return f"{row[metric]['median'] / ref[metric]['median']:.2f}"


def table(summary: dict, records: int, repeat: int) -> str:
    lines = []
    head = ("system", "ok", "records/s whole run", "records/s after start-up",
            "first output s", "peak RSS MB", "÷kspark whole", "÷kspark after")
    for w, rows in summary.items():
        lines.append(f"\n{TITLES[w]}: {records:,} records, {repeat} repeat(s); "
                     "median (min–max); ÷kspark = ratio of the medians")
        body = []
        ref = rows.get("kspark")
        for s, row in rows.items():
            body.append((s, f"{row['ok']}/{row['runs']}", _fmt(row["rate_whole"], ",.0f"),
                         _fmt(row["rate_after"], ",.0f"), _fmt(row["first_s"], ".1f"),
                         _fmt(row["peak_rss_mb"], ",.0f"), _ratio(row, ref, "rate_whole"),
                         _ratio(row, ref, "rate_after")))
        widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
        for r in (head, *body):
            lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        for s, row in rows.items():
            if row["note"]:
                lines.append(f"  note {s}: {row['note']}")
            for e in row["errors"]:
                lines.append(f"  FAILED {s} {e}")
    lines.append("\nrecords/s are input records per second. whole run: from starting the system's process "
                 "to the broker's append of its last output record. after start-up: the input records "
                 "processed from 0.5 s after the first output's append to the last output's "
                 "(what was processed by then is read from the output itself), per second. "
                 "peak RSS: the whole process tree.")
    return "\n".join(lines)


def write_json(path: str, meta: dict, runs: list[dict], summary: dict) -> None:
    with open(path, "w") as f:
        json.dump({"meta": meta, "summary": summary, "runs": runs}, f, indent=1)


def chart(path: str, summary: dict, title: str) -> None:
    """Grouped bars per workload: median records/s whole run and after start-up, min–max whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(summary), figsize=(6 * len(summary), 4.5), squeeze=False)
    for ax, (w, rows) in zip(axes[0], summary.items()):
        systems = list(rows)
        for j, (metric, label) in enumerate((("rate_whole", "whole run"),
                                             ("rate_after", "after start-up"))):
            xs, ys, errs = [], [], [[], []]
            for i, s in enumerate(systems):
                sp = rows[s][metric]
                if sp:
                    xs.append(i + (j - 0.5) * 0.4)
                    ys.append(sp["median"])
                    errs[0].append(sp["median"] - sp["min"])
                    errs[1].append(sp["max"] - sp["median"])
            ax.bar(xs, ys, width=0.4, yerr=errs, capsize=3, label=label)
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels([s if rows[s]["ok"] else f"{s}\n({'failed' if rows[s]['runs'] else 'skipped'})"
                            for s in systems])
        ax.set_yscale("log")
        ax.set_ylabel("input records/s")
        ax.set_title(TITLES[w])
        ax.grid(axis="y", alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
