"""Topology.describe(): Java's TopologyDescription API, and str() of it is Java's text.

Each expected text below is what Java Kafka Streams 4.1.1 prints for the same topology
(``tests/conformance/test_describe_java.py`` checks them against Java, together with
thousands of generated topologies).
"""

import re

import pytest

from kspark import Serdes, StreamsBuilder, Topology, TopologyDescription
from kspark.processor import Processor
from kspark.processor.description import GlobalStore, Sink, Source, Subtopology
from kspark.processor.description import Processor as ProcessorNode
from kspark.state import Stores
from tests.conformance.describe_reference import Extractor, build

S = Serdes.String()

# rule -> (statements of tests/conformance/describe_reference.py, Java's text)
CASES = {
    "sub-topologies are numbered in the order added, a blank line after each": (
        ["source words-src words", "processor upper words-src",
         "sink upper-out upper-words upper", "source clicks-src clicks",
         "sink clicks-out clicks-copy clicks-src"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: words-src (topics: [words])\n"
        "      --> upper\n"
        "    Processor: upper (stores: [])\n"
        "      --> upper-out\n"
        "      <-- words-src\n"
        "    Sink: upper-out (topic: upper-words)\n"
        "      <-- upper\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: clicks-src (topics: [clicks])\n"
        "      --> clicks-out\n"
        "    Sink: clicks-out (topic: clicks-copy)\n"
        "      <-- clicks-src\n"
        "\n"),
    "a global store takes the id between the sub-topologies added before and after it": (
        ["source a-src a", "sink a-out a-copy a-src",
         "global countries countries-src countries countries-keeper",
         "source b-src b", "sink b-out b-copy b-src"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: a-src (topics: [a])\n"
        "      --> a-out\n"
        "    Sink: a-out (topic: a-copy)\n"
        "      <-- a-src\n"
        "\n"
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: countries-src (topics: [countries])\n"
        "      --> countries-keeper\n"
        "    Processor: countries-keeper (stores: [countries])\n"
        "      --> none\n"
        "      <-- countries-src\n"
        "  Sub-topology: 2\n"
        "    Source: b-src (topics: [b])\n"
        "      --> b-out\n"
        "    Sink: b-out (topic: b-copy)\n"
        "      <-- b-src\n"
        "\n"),
    "nodes with more paths below them come first, then by name": (
        ["source src in", "processor left src", "processor right src",
         "processor both left,right", "sink out-a a both", "sink out-b b both,right"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [in])\n"
        "      --> right, left\n"
        "    Processor: right (stores: [])\n"
        "      --> both, out-b\n"
        "      <-- src\n"
        "    Processor: left (stores: [])\n"
        "      --> both\n"
        "      <-- src\n"
        "    Processor: both (stores: [])\n"
        "      --> out-a, out-b\n"
        "      <-- left, right\n"
        "    Sink: out-a (topic: a)\n"
        "      <-- both\n"
        "    Sink: out-b (topic: b)\n"
        "      <-- both, right\n"
        "\n"),
    "a sink with a topic extractor prints the extractor's str": (
        ["source src in", "sink routed @ src"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [in])\n"
        "      --> routed\n"
        "    Sink: routed (extractor class: Extractor)\n"
        "      <-- src\n"
        "\n"),
    "a source's topics are listed in Java's HashSet order": (
        ["source src orders,clicks,users,pages,a"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [a, pages, clicks, orders, users])\n"
        "      --> none\n"
        "\n"),
    "a node without children says none": (
        ["source src in", "processor p1 src", "processor p2 src", "source lonely lonely-topic"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [in])\n"
        "      --> p1, p2\n"
        "    Processor: p1 (stores: [])\n"
        "      --> none\n"
        "      <-- src\n"
        "    Processor: p2 (stores: [])\n"
        "      --> none\n"
        "      <-- src\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: lonely (topics: [lonely-topic])\n"
        "      --> none\n"
        "\n"),
    "neighbours keep the order Java's TreeSet gave them while sizes still grew": (
        ["source t d", "processor kz t", "processor MduIQ1g69 kz,t"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: t (topics: [d])\n"
        "      --> kz, MduIQ1g69\n"
        "    Processor: kz (stores: [])\n"
        "      --> MduIQ1g69\n"
        "      <-- t\n"
        "    Processor: MduIQ1g69 (stores: [])\n"
        "      --> none\n"
        "      <-- kz, t\n"
        "\n"),
    "two sources feeding one processor are listed in Java's order, not sorted": (
        ["source 4d ru,lga", "source doc z,NQFM48oX_RVR", "processor aI doc,4d"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: 4d (topics: [ru, lga])\n"
        "      --> aI\n"
        "    Source: doc (topics: [NQFM48oX_RVR, z])\n"
        "      --> aI\n"
        "    Processor: aI (stores: [])\n"
        "      --> none\n"
        "      <-- doc, 4d\n"
        "\n"),
    "a processor's stores are in Java's HashSet order, one bucket's in the order connected": (
        ["source src in", "processor p src", "store zeta p", "store seen", "store users p",
         "connect p seen"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [in])\n"
        "      --> p\n"
        "    Processor: p (stores: [zeta, users, seen])\n"
        "      --> none\n"
        "      <-- src\n"
        "\n"),
    "a stream-stream join: two sources feeding windowed processors and the two joins": (
        # the nodes and stores Java's DSL makes for stream("in0").join(stream("in1"), ...)
        ["source KSTREAM-SOURCE-0000000000 in0", "source KSTREAM-SOURCE-0000000001 in1",
         "processor KSTREAM-WINDOWED-0000000002 KSTREAM-SOURCE-0000000000",
         "processor KSTREAM-WINDOWED-0000000003 KSTREAM-SOURCE-0000000001",
         "processor KSTREAM-JOINTHIS-0000000004 KSTREAM-WINDOWED-0000000002",
         "processor KSTREAM-JOINOTHER-0000000005 KSTREAM-WINDOWED-0000000003",
         "processor KSTREAM-MERGE-0000000006 KSTREAM-JOINTHIS-0000000004,"
         "KSTREAM-JOINOTHER-0000000005",
         "sink KSTREAM-SINK-0000000007 out KSTREAM-MERGE-0000000006",
         "store KSTREAM-JOINTHIS-0000000004-store KSTREAM-WINDOWED-0000000002,"
         "KSTREAM-JOINOTHER-0000000005",
         "store KSTREAM-JOINOTHER-0000000005-store KSTREAM-WINDOWED-0000000003,"
         "KSTREAM-JOINTHIS-0000000004"],
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [in0])\n"
        "      --> KSTREAM-WINDOWED-0000000002\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [in1])\n"
        "      --> KSTREAM-WINDOWED-0000000003\n"
        "    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n"
        "      --> KSTREAM-JOINTHIS-0000000004\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-WINDOWED-0000000003 (stores: ["
        "KSTREAM-JOINOTHER-0000000005-store])\n"
        "      --> KSTREAM-JOINOTHER-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KSTREAM-JOINOTHER-0000000005 (stores: ["
        "KSTREAM-JOINTHIS-0000000004-store])\n"
        "      --> KSTREAM-MERGE-0000000006\n"
        "      <-- KSTREAM-WINDOWED-0000000003\n"
        "    Processor: KSTREAM-JOINTHIS-0000000004 (stores: ["
        "KSTREAM-JOINOTHER-0000000005-store])\n"
        "      --> KSTREAM-MERGE-0000000006\n"
        "      <-- KSTREAM-WINDOWED-0000000002\n"
        "    Processor: KSTREAM-MERGE-0000000006 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000007\n"
        "      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005\n"
        "    Sink: KSTREAM-SINK-0000000007 (topic: out)\n"
        "      <-- KSTREAM-MERGE-0000000006\n"
        "\n"),
    "an empty topology prints the header and a space": ([], "Topologies:\n "),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_text_is_javas(rule):
    statements, java = CASES[rule]
    assert str(build(statements).describe()) == java


class _Keeper(Processor):
    def process(self, record):
        pass


def _ids(description: TopologyDescription) -> list[tuple[str, int]]:
    kinds = [("sub", s.id()) for s in description.subtopologies()]
    kinds += [("global", g.id()) for g in description.global_stores()]
    return sorted(kinds, key=lambda k: k[1])


def test_a_dsl_global_table_takes_its_id_where_it_was_added():
    b = StreamsBuilder()
    b.stream("a", key_serde=S, value_serde=S).to("b")
    countries = b.global_table("countries", key_serde=S, value_serde=S)
    b.stream("c", key_serde=S, value_serde=S).join(
        countries, lambda k, v: k, lambda v, w: v).to("d")
    store = Stores.key_value_store_builder(Stores.in_memory_key_value_store("gs"), S, S)
    b.add_global_store(store, "g2", _Keeper, key_serde=S, value_serde=S)
    b.stream("e", key_serde=S, value_serde=S).to("f")
    assert _ids(b.build().describe()) == [("sub", 0), ("global", 1), ("sub", 2), ("global", 3),
                                          ("sub", 4)]


def test_a_global_table_added_first_is_sub_topology_0():
    b = StreamsBuilder()
    b.global_table("g1", key_serde=S, value_serde=S)
    b.stream("a", key_serde=S, value_serde=S).to("b")
    described = b.build().describe()
    assert _ids(described) == [("global", 0), ("sub", 1)]
    assert str(described).startswith("Topologies:\n   Sub-topology: 0 for global store (will "
                                     "not generate tasks)\n    Source: ")
    assert "\n  Sub-topology: 1\n    Source: " in str(described)


def _diamond() -> TopologyDescription:
    return build(CASES["nodes with more paths below them come first, then by name"][0]).describe()


def test_subtopologies_and_their_nodes_in_javas_order():
    (sub,) = _diamond().subtopologies()
    assert isinstance(sub, Subtopology) and sub.id() == 0
    assert [n.name() for n in sub.nodes()] == ["src", "right", "left", "both", "out-a", "out-b"]
    assert [type(n) for n in sub.nodes()] == [Source, ProcessorNode, ProcessorNode,
                                              ProcessorNode, Sink, Sink]


def test_predecessors_and_successors_are_the_nodes_themselves():
    nodes = {n.name(): n for n in _diamond().subtopologies()[0].nodes()}
    both = nodes["both"]
    assert both.predecessors() == (nodes["left"], nodes["right"])
    assert both.successors() == (nodes["out-a"], nodes["out-b"])
    assert nodes["src"].predecessors() == () and nodes["out-b"].successors() == ()
    assert nodes["out-b"].predecessors()[1] is nodes["right"]


def test_source_topics_processor_stores_and_sink_topic_or_extractor():
    t = build(["source src orders,clicks", "processor p src", "store counts p",
               "sink fixed out p", "sink routed @ p"])
    nodes = {n.name(): n for n in t.describe().subtopologies()[0].nodes()}
    assert nodes["src"].topic_set() == frozenset({"orders", "clicks"})
    assert nodes["src"].topic_pattern() is None
    assert nodes["p"].stores() == frozenset({"counts"})
    assert (nodes["fixed"].topic(), nodes["fixed"].topic_name_extractor()) == ("out", None)
    assert nodes["routed"].topic() is None
    assert isinstance(nodes["routed"].topic_name_extractor(), Extractor)


def test_a_global_store_has_its_id_source_and_processor():
    d = build(CASES["a global store takes the id between the sub-topologies added before and "
                    "after it"][0]).describe()
    (g,) = d.global_stores()
    assert isinstance(g, GlobalStore) and g.id() == 1
    assert [s.id() for s in d.subtopologies()] == [0, 2]
    assert (g.source().name(), g.source().topic_set()) == ("countries-src",
                                                           frozenset({"countries"}))
    assert (g.processor().name(), g.processor().stores()) == ("countries-keeper",
                                                             frozenset({"countries"}))
    assert g.source().successors() == (g.processor(),)
    assert g.processor().predecessors() == (g.source(),) and g.processor().successors() == ()


def test_a_pattern_source_prints_the_pattern_as_java_does():
    src = Source("src", (), ("p",), _topics=None, _pattern=re.compile("in-.*"))
    assert str(src) == "Source: src (topics: in-.*)\n      --> p"
    assert src.topic_set() is None and src.topic_pattern().pattern == "in-.*"


def test_descriptions_of_the_same_topology_are_equal():
    statements = CASES["a node without children says none"][0]
    assert build(statements).describe() == build(statements).describe()
    assert build(statements).describe() != build(statements[:2]).describe()


def test_repr_of_a_topology_is_its_description():
    t = build(["source s in", "sink k out s"])
    assert repr(t) == str(t.describe())


def test_describe_is_a_description_not_a_string():
    t = Topology().add_source("s", "in", key_serde=S, value_serde=S)
    assert isinstance(t.describe(), TopologyDescription)
