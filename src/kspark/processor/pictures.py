"""Pictures of a topology: the boxes, groups and edges of a
:class:`~kspark.processor.description.TopologyDescription` as plain data (:class:`Picture`),
written as a Mermaid flowchart (:func:`to_mermaid`, which GitHub renders in a ```` ```mermaid ````
block) or a Graphviz DOT graph (:func:`to_dot`, for ``dot -Tsvg``).

Sub-topologies and global stores are groups (Mermaid ``subgraph``, DOT ``cluster_``
subgraphs) holding their nodes and state stores; topics sit outside every group, so the
repartition topic one sub-topology writes and the next reads joins the two. Ids are made
safe (``[A-Za-z0-9_]``, prefixed by kind: ``n_`` node, ``t_`` topic, ``s_`` store, and
``_2``, ``_3``... when two names would meet) and every label is quoted and escaped: the real
names are in the labels. The same picture is always written the same way.

Example:
    >>> p = Picture(
    ...     groups=(Group("sub:0", "Sub-topology: 0",
    ...                   (Box("node:src", "src", "source"), Box("node:out", "out", "sink"))),),
    ...     boxes=(Box("topic:in", "in", "topic"), Box("topic:out-topic", "out-topic", "topic")),
    ...     edges=(Edge("topic:in", "node:src"), Edge("node:src", "node:out"),
    ...            Edge("node:out", "topic:out-topic")))
    >>> print(to_mermaid(p))  # doctest: +ELLIPSIS
    flowchart TB
        subgraph sub_0["Sub-topology: 0"]
            n_src("src")
            n_out("out")
        end
        t_in(["in"])
        t_out_topic(["out-topic"])
        t_in --> n_src
        n_src --> n_out
        n_out --> t_out_topic
        classDef source ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Box", "Group", "Edge", "Picture", "Topics", "to_mermaid", "to_dot", "KINDS"]

# kind -> (id prefix, Mermaid shape, DOT attributes, Mermaid class style)
KINDS = {
    "source": ("n", '("{}")', 'shape=box, style="rounded"', "fill:#e8f4ff,stroke:#2f6f9f"),
    "processor": ("n", '["{}"]', "shape=box", "fill:#ffffff,stroke:#333333"),
    "sink": ("n", '("{}")', 'shape=box, style="rounded"', "fill:#e8f4ff,stroke:#2f6f9f"),
    "topic": ("t", '(["{}"])', "shape=ellipse", "fill:#fff4dd,stroke:#b07d18"),
    "repartition": ("t", '(["{}"])', 'shape=ellipse, style="dashed"',
                    "fill:#ffe9e0,stroke:#c0522b,stroke-dasharray:4 3"),
    "changelog": ("t", '(["{}"])', 'shape=ellipse, style="dotted"',
                  "fill:#f0f0f0,stroke:#777777,stroke-dasharray:2 2"),
    "store": ("s", '[("{}")]', "shape=cylinder", "fill:#eef7ee,stroke:#3c7d3c"),
}
_NOTES = {"repartition": "repartition topic", "changelog": "changelog"}


@dataclass(frozen=True)
class Box:
    """A box of the picture: ``key`` unique in the picture (``"node:<name>"``,
    ``"topic:<name>"``, ``"store:<name>"``...), ``label`` the real name, ``kind`` one of
    :data:`KINDS`, ``note`` a second line (a repartition or changelog topic's says so)."""

    key: str
    label: str
    kind: str
    note: str = ""

    def lines(self) -> tuple[str, ...]:
        note = self.note or _NOTES.get(self.kind, "")
        return (self.label, f"({note})") if note else (self.label,)


@dataclass(frozen=True)
class Group:
    """A sub-topology or a global store: ``title`` and the boxes inside it."""

    key: str
    title: str
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class Edge:
    """From box ``src`` to box ``dst`` (their keys). ``kind``: ``"flow"`` (records),
    ``"store"`` (a processor using a store, both ways) or ``"changelog"``."""

    src: str
    dst: str
    kind: str = "flow"


@dataclass(frozen=True)
class Picture:
    """Groups, the boxes outside them (topics) and the edges, in the order drawn."""

    groups: tuple[Group, ...] = ()
    boxes: tuple[Box, ...] = ()
    edges: tuple[Edge, ...] = ()

    def all_boxes(self) -> Iterable[Box]:
        for g in self.groups:
            yield from g.boxes
        yield from self.boxes


class Topics:
    """The topic boxes of a picture by key, each added once, in the order first seen;
    ``internal``: the names of the topology's internal topics (repartition topics, a
    foreign-key join's topics).

    Example:
        >>> t = Topics(frozenset({"counts-repartition"}))
        >>> t.named("counts-repartition"), t.named("in"), t.named("in")
        ('topic:counts-repartition', 'topic:in', 'topic:in')
        >>> t.changelog("counts", None)
        Edge(src='store:counts', dst='changelog:counts', kind='changelog')
        >>> [(b.label, b.kind) for b in t.boxes.values()]  # doctest: +NORMALIZE_WHITESPACE
        [('counts-repartition', 'repartition'), ('in', 'topic'),
         ('counts-changelog', 'changelog')]
    """

    def __init__(self, internal: frozenset[str] = frozenset()):
        self.internal = internal
        self.boxes: dict[str, Box] = {}

    def _add(self, key: str, label: str, kind: str, note: str = "") -> str:
        self.boxes.setdefault(key, Box(key, label, kind, note))
        return key

    def named(self, name: str) -> str:
        """The key of topic ``name``'s box; an internal one is marked."""
        if name not in self.internal:
            return self._add(f"topic:{name}", name, "topic")
        note = "" if name.endswith("-repartition") else "internal topic"
        return self._add(f"topic:{name}", name, "repartition", note)

    def pattern(self, pattern: str) -> str:
        """The key of the box of the topics ``pattern`` matches."""
        return self._add(f"pattern:{pattern}", pattern, "topic", "topic pattern")

    def extracted(self, sink: str) -> str:
        """The key of the box of the topics ``sink``'s extractor picks per record."""
        return self._add(f"extractor:{sink}", "topic chosen per record", "topic")

    def changelog(self, store: str, source_topic: str | None) -> Edge:
        """The edge from ``store`` to its changelog: its own ``<store>-changelog`` (named
        without the application id, as repartition topics are in the description), or the
        source topic it reuses."""
        if source_topic is not None:
            return Edge(f"store:{store}", self.named(source_topic), "changelog")
        return Edge(f"store:{store}", self._add(f"changelog:{store}", f"{store}-changelog",
                                                "changelog"), "changelog")


def _safe_ids(keys: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """A safe, unique id per key, given (key, prefix, name) in drawing order."""
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for key, prefix, name in keys:
        base = f"{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
        safe, n = base, 1
        while safe in taken:
            n += 1
            safe = f"{base}_{n}"
        taken.add(safe)
        ids[key] = safe
    return ids


def _ids(p: Picture) -> dict[str, str]:
    groups = [(g.key, *g.key.split(":", 1)) for g in p.groups]  # "sub:0" -> sub_0
    return _safe_ids(groups + [(b.key, KINDS[b.kind][0], b.label) for b in p.all_boxes()])


def _mermaid_text(text: str) -> str:
    """``text`` for a quoted Mermaid label: Mermaid's entity codes for what it would read."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text


def to_mermaid(p: Picture) -> str:
    """``p`` as a Mermaid flowchart (no trailing newline)."""
    ids = _ids(p)
    out = ["flowchart TB"]

    def box(b: Box, indent: str) -> str:
        label = "<br/>".join(_mermaid_text(line) for line in b.lines())
        return indent + ids[b.key] + KINDS[b.kind][1].format(label)

    for g in p.groups:
        out.append(f'    subgraph {ids[g.key]}["{_mermaid_text(g.title)}"]')
        out += [box(b, "        ") for b in g.boxes]
        out.append("    end")
    out += [box(b, "    ") for b in p.boxes]
    arrows = {"flow": " --> ", "store": " <-.-> ", "changelog": ' -.->|"changelog"| '}
    out += [f"    {ids[e.src]}{arrows[e.kind]}{ids[e.dst]}" for e in p.edges]
    by_kind: dict[str, list[str]] = {}
    for b in p.all_boxes():
        by_kind.setdefault(b.kind, []).append(ids[b.key])
    for kind, members in by_kind.items():
        out.append(f"    classDef {kind} {KINDS[kind][3]}")
        out.append(f"    class {','.join(members)} {kind}")
    return "\n".join(out)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(p: Picture) -> str:
    """``p`` as a Graphviz DOT digraph (no trailing newline)."""
    ids = _ids(p)
    out = ["digraph topology {", "    rankdir=TB;", '    node [fontname="Helvetica"];',
           '    edge [fontname="Helvetica"];']

    def box(b: Box, indent: str) -> str:
        label = "\\n".join(_dot_text(line) for line in b.lines())
        return f'{indent}{ids[b.key]} [label="{label}", {KINDS[b.kind][2]}];'

    for g in p.groups:
        out.append(f"    subgraph cluster_{ids[g.key]} {{")
        out.append(f'        label="{_dot_text(g.title)}";')
        out += [box(b, "        ") for b in g.boxes]
        out.append("    }")
    out += [box(b, "    ") for b in p.boxes]
    attrs = {"flow": "", "store": ' [dir=both, style="dotted"]',
             "changelog": ' [style="dashed", label="changelog"]'}
    out += [f"    {ids[e.src]} -> {ids[e.dst]}{attrs[e.kind]};" for e in p.edges]
    out.append("}")
    return "\n".join(out)
