"""Topology pictures: ``describe().to_mermaid()`` and ``.to_dot()``, ``kspark describe
--format``, and the demo's picture in README.md and docs/architecture.md.

Every processor, topic and store of ``describe()`` is in both pictures, in the group of its
sub-topology or global store; the DOT text parses with pydot's parser; the Mermaid text
passes a structural check (no Mermaid parser runs offline in Python): balanced
``subgraph``/``end``, safe ids, quoted labels, every edge between declared boxes.
"""

import pathlib
import re

import pydot
import pytest

from kspark import Materialized, Serdes, Stores, StreamsBuilder, TimeWindows, Topology
from kspark._cli.main import main
from kspark.demo.run import demo_topology
from kspark.processor.description import (GlobalStore, Processor, Sink, Source, Subtopology,
                                          TopologyDescription)

S = Serdes.String()
ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = "kspark.demo.run:demo_topology"
# pydot's parser on pyparsing 3.3 warns of pyparsing's own renamed methods
pytestmark = pytest.mark.filterwarnings("ignore:'setParseAction' deprecated")


def _join_with_repartition():
    b = StreamsBuilder()
    users = b.table("users", key_serde=S, value_serde=S)
    (b.stream("clicks", key_serde=S, value_serde=S).select_key(lambda k, v: v)
      .join(users, lambda c, u: u).to("out", value_serde=S))
    return b.build()


def _windowed_count():
    b = StreamsBuilder()
    (b.stream("clicks", key_serde=S, value_serde=S).group_by(lambda k, v: v, key_serde=S)
      .windowed_by(TimeWindows.of_size_and_grace(60_000, 1_000))
      .count(Materialized.as_("clicks-per-minute"))
      .to_stream().map(lambda w, n: (w.key, n))
      .to("counts", key_serde=S, value_serde=Serdes.Long()))
    return b.build()


def _global_table():
    b = StreamsBuilder()
    countries = b.global_table("countries", key_serde=S, value_serde=S,
                               materialized=Materialized.as_("countries-store"))
    (b.stream("orders", key_serde=S, value_serde=Serdes.Json())
      .join(countries, lambda k, v: v["country"], lambda v, c: f"{v['id']}@{c}")
      .to("out", value_serde=S))
    return b.build()


def _foreign_key_join():
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    (orders.join(products, lambda v: v.split("|")[0], lambda o, p: f"{o}+{p}")
     .to_stream().to("out", key_serde=S, value_serde=S))
    return b.build()


def _source_topic_as_changelog():
    b = StreamsBuilder()
    prices = b.table("prices", key_serde=S, value_serde=S,
                     materialized=Materialized.as_("prices-store"))
    b.stream("orders", key_serde=S, value_serde=S).join(prices, lambda o, p: o + p).to("out")
    return b.build({"topology.optimization": "all"})


def _odd_names():
    """Processor API names Mermaid and DOT must not read as syntax, two of which meet once
    made safe (``x-y``, ``x_y``), and a sink whose topic a function picks."""
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store('st "1" #a'), S, S)
    return (Topology().add_source("end", "in.put", key_serde=S, value_serde=S)
            .add_processor('say "<hi>"', lambda: None, "end")
            .add_processor("x-y", lambda: None, 'say "<hi>"')
            .add_processor("x_y", lambda: None, 'say "<hi>"')
            .add_state_store(store, "x-y", "x_y")
            .add_sink("to \\ topic", "out", "x-y")
            .add_sink("picked", lambda k, v, meta: "t", "x_y"))


TOPOLOGIES = {"demo": demo_topology, "join with repartition": _join_with_repartition,
              "windowed count": _windowed_count, "global table": _global_table,
              "foreign-key join": _foreign_key_join,
              "source topic as changelog": _source_topic_as_changelog, "odd names": _odd_names}


# --- what describe() says ---------------------------------------------------------------

def _groups(d: TopologyDescription) -> dict[str, set[str]]:
    """Each sub-topology's and global store's names: its nodes, and the stores they use."""
    out = {}
    for part in [*d.subtopologies(), *d.global_stores()]:
        nodes = (part.source(), part.processor()) if isinstance(part, GlobalStore) else \
            part.nodes()
        names = {n.name() for n in nodes}
        names |= {s for n in nodes if isinstance(n, Processor) for s in n.stores()}
        out[f"Sub-topology: {part.id()}" + (" for global store"
                                            if isinstance(part, GlobalStore) else "")] = names
    return out


def _topics(d: TopologyDescription) -> set[str]:
    nodes = [n for s in d.subtopologies() for n in s.nodes()]
    nodes += [g.source() for g in d.global_stores()]
    return ({t for n in nodes if isinstance(n, Source) for t in n.topic_set() or ()}
            | {n.topic() for n in nodes if isinstance(n, Sink) and n.topic() is not None})


# --- Mermaid: a structural check --------------------------------------------------------

_ID = r"[A-Za-z0-9_]+"
_SHAPES = {'("': '")', '["': '"]', '(["': '"])', '[("': '")]'}
_NODE = re.compile(rf"^({_ID})(\(\[\"|\[\(\"|\(\"|\[\")(.*)(\"\]\)|\"\)\]|\"\)|\"\])$")
_EDGE = re.compile(rf"^({_ID}) (-->|<-\.->|-\.->\|\"changelog\"\|) ({_ID})$")
_RESERVED = {"end", "subgraph", "graph", "flowchart", "class", "classDef", "style", "click"}


def _unescape(label: str) -> list[str]:
    for code, char in (("#quot;", '"'), ("#lt;", "<"), ("#gt;", ">"), ("#35;", "#")):
        label = label.replace(code, char)
    return label.split("<br/>")


def check_mermaid(text: str) -> tuple[dict, dict, list]:
    """The groups (title -> box ids), boxes (id -> (label lines, class)) and edges of a
    Mermaid flowchart, failing on anything that is not well formed."""
    lines = text.split("\n")
    assert lines[0] == "flowchart TB"
    groups: dict[str, list[str]] = {}
    boxes: dict[str, list] = {}
    edges, stack, classes = [], [], set()
    for line in lines[1:]:
        line = line.strip()
        if m := re.fullmatch(rf'subgraph ({_ID})\["([^"]*)"\]', line):
            assert not stack, "groups are not nested"
            stack.append(m[2])
            groups[m[2]] = []
        elif line == "end":
            assert stack, "an 'end' without its subgraph"
            stack.pop()
        elif m := _EDGE.match(line):
            edges.append((m[1], m[2], m[3]))
        elif m := re.fullmatch(rf"classDef ({_ID}) \S.*", line):
            classes.add(m[1])
        elif m := re.fullmatch(rf"class ({_ID}(?:,{_ID})*) ({_ID})", line):
            assert m[2] in classes, f"class {m[2]} used before its classDef"
            for box in m[1].split(","):
                assert box in boxes and boxes[box][1] is None, line
                boxes[box][1] = m[2]
        else:
            m = _NODE.match(line)
            assert m and _SHAPES[m[2]] == m[4], f"not a box, edge, group or class: {line!r}"
            assert '"' not in m[3], f"an unescaped quote in {line!r}"
            assert m[1] not in boxes and m[1].lower() not in _RESERVED, line
            boxes[m[1]] = [_unescape(m[3]), None]
            if stack:
                groups[stack[-1]].append(m[1])
    assert not stack, "a subgraph without its 'end'"
    for src, _, dst in edges:
        assert src in boxes and dst in boxes, f"an edge between undeclared boxes: {src}, {dst}"
    return groups, boxes, edges


def test_the_checker_refuses_what_mermaid_would_misread():
    for bad in ['flowchart TB\n    a-b["x"]', 'flowchart TB\n    a["x"y"]',
                'flowchart TB\n    subgraph g["t"]\n    a["x"]', 'flowchart TB\n    a["x"] --> b',
                'flowchart TB\n    end["x"]', 'flowchart TB\n    a[x]']:
        with pytest.raises(AssertionError):
            check_mermaid(bad)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_mermaid_shows_every_node_topic_and_store_in_its_group(name):
    d = TOPOLOGIES[name]().describe()
    groups, boxes, edges = check_mermaid(d.to_mermaid())
    labels = {box: lines[0] for box, (lines, _) in boxes.items()}
    assert {t: {labels[b] for b in g} for t, g in groups.items()} == _groups(d)
    outside = {labels[b] for b in boxes if not any(b in g for g in groups.values())}
    assert _topics(d) <= outside
    assert all(cls is not None for _, cls in boxes.values())
    for box, (lines, cls) in boxes.items():  # internal topics are marked, and say so
        if lines[0].endswith("-repartition"):
            assert (cls, lines[1:]) == ("repartition", ["(repartition topic)"])
        if cls == "changelog":
            assert lines[1:] == ["(changelog)"]
            assert any(dst == box and kind.endswith('"changelog"|') for _, kind, dst in edges)
    assert d.to_mermaid() == TOPOLOGIES[name]().describe().to_mermaid()  # deterministic


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_dot_parses_and_shows_every_node_topic_and_store_in_its_group(name):
    d = TOPOLOGIES[name]().describe()
    (graph,) = pydot.graph_from_dot_data(d.to_dot())

    def label(node):
        quoted = node.get_label()
        assert quoted[0] == quoted[-1] == '"'
        return quoted[1:-1].replace('\\"', '"').replace("\\\\", "\\").split("\\n")[0]

    clusters = {c.get_label().strip('"'): {label(n) for n in c.get_nodes()}
                for c in graph.get_subgraphs()}
    assert all(c.get_name().startswith("cluster_") for c in graph.get_subgraphs())
    assert clusters == _groups(d)
    assert _topics(d) <= {label(n) for n in graph.get_nodes() if n.get_name() not in
                          ("node", "edge")}
    declared = {n.get_name() for g in [graph, *graph.get_subgraphs()] for n in g.get_nodes()}
    assert {e.get_source() for e in graph.get_edges()} <= declared
    assert {e.get_destination() for e in graph.get_edges()} <= declared
    assert d.to_dot() == TOPOLOGIES[name]().describe().to_dot()


def test_shapes_and_marks():
    d = _windowed_count().describe()
    dot, mermaid = d.to_dot(), d.to_mermaid()
    assert 's_clicks_per_minute [label="clicks-per-minute", shape=cylinder];' in dot
    assert 's_clicks_per_minute[("clicks-per-minute")]' in mermaid
    assert 't_clicks(["clicks"])' in mermaid and 't_clicks [label="clicks", shape=ellipse];' in dot
    assert ('t_clicks_per_minute_changelog(["clicks-per-minute-changelog<br/>(changelog)"])'
            in mermaid)
    assert "n_KSTREAM_AGGREGATE_0000000002 <-.-> s_clicks_per_minute" in mermaid
    assert '    class t_clicks_per_minute_repartition repartition' in mermaid
    global_ = _global_table().describe().to_mermaid()
    assert 'subgraph global_0["Sub-topology: 0 for global store"]' in global_
    assert 's_countries_store[("countries-store<br/>(global store)")]' in global_
    reused = _source_topic_as_changelog().describe().to_mermaid()
    assert 's_prices_store -.->|"changelog"| t_prices' in reused


def test_odd_names_get_safe_distinct_ids_and_escaped_labels():
    mermaid, dot = _odd_names().describe().to_mermaid(), _odd_names().describe().to_dot()
    assert 'n_end("end")' in mermaid
    assert 'n_say___hi__["say #quot;#lt;hi#gt;#quot;"]' in mermaid
    assert 'n_x_y["x-y"]' in mermaid and 'n_x_y_2["x_y"]' in mermaid
    assert 's_st__1___a[("st #quot;1#quot; #35;a")]' in mermaid
    assert 't_topic_chosen_per_record(["topic chosen per record"])' in mermaid
    assert 'n_to___topic [label="to \\\\ topic"' in dot
    assert 'n_say___hi__ [label="say \\"<hi>\\""' in dot


def test_a_topic_pattern_is_drawn_as_its_pattern():
    peers = {}
    source = Source("src", (), (), peers, _pattern=re.compile("orders-.*"))
    peers["src"] = source
    d = TopologyDescription((Subtopology(0, (source,)),))
    _, boxes, edges = check_mermaid(d.to_mermaid())
    assert boxes["t_orders___"][0] == ["orders-.*", "(topic pattern)"]
    assert edges == [("t_orders___", "-->", "n_src")]


# --- the command ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_kspark_describe_format(fmt, capsys):
    assert main(["describe", "--format", fmt, DEMO]) == 0
    d = demo_topology().describe()
    assert capsys.readouterr().out == (d.to_mermaid() if fmt == "mermaid" else d.to_dot()) + "\n"


def test_kspark_describe_text_is_unchanged(capsys):
    assert main(["describe", DEMO, "--no-broker"]) == 0
    assert capsys.readouterr().out.startswith(str(demo_topology().describe()))


# --- the pictures in the docs never go stale --------------------------------------------

@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md"])
def test_the_docs_show_the_demo_as_to_mermaid_draws_it(doc):
    blocks = re.findall(r"```mermaid\n(.*?)\n```", (ROOT / doc).read_text(), re.S)
    expected = demo_topology().describe().to_mermaid()
    assert blocks == [expected], (
        f"{doc}'s ```mermaid block is not the demo's picture any more: paste the output of "
        f"`kspark describe --format mermaid {DEMO}` into it")
