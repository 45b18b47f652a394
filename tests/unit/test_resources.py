"""The one list of an application's internal resources (``_graph/resources.py``): the names
it gives, that nothing else builds them, and that the ACL documentation covers them."""

import ast
import pathlib

import kspark
from kspark import Consumed, Grouped, Materialized, Serdes, StreamsBuilder
from kspark._graph.resources import (
    TOPOLOGY_SUFFIXES,
    is_internal,
    kspark_groups,
    kspark_topics,
    topology_topics,
)

ROOT = pathlib.Path(kspark.__file__).parent
DOCS = ROOT.parents[1] / "docs"
S = Serdes.String()


def _topology():
    b = StreamsBuilder()
    words = b.stream("words", Consumed.with_(S, S))
    words.group_by(lambda k, v: v, Grouped.with_(S, S)).count()
    words.group_by_key().count(Materialized.as_("per-key"))
    return b.build()


def test_a_topologys_internal_topics_are_its_changelogs_and_repartitions_named_as_java():
    names = [t.name for t in topology_topics(_topology()._graph, "app")]
    assert names == ["app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
                     "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
                     "app-per-key-changelog"]


def test_a_store_without_logging_has_no_changelog():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(
        Materialized.as_("quiet").with_logging_disabled())
    assert topology_topics(b.build()._graph, "app") == []


def test_every_internal_topic_is_recognised_as_internal_and_inputs_are_not():
    for t in topology_topics(_topology()._graph, "app") + kspark_topics("app"):
        assert is_internal("app", t.name), t.name
    assert not is_internal("app", "words")
    assert not is_internal("app", "other-app-x-changelog")
    assert all(is_internal("app", f"app-sink{s}") for s in TOPOLOGY_SUFFIXES)


def test_kspark_topics_name_their_partitions_and_when_they_are_made():
    topics = {t.name: t for t in kspark_topics("app", tasks=6)}
    assert topics["app-kspark-progress"].partitions == 6
    assert topics["app-kspark-control"].partitions == 1
    assert topics["app-kspark-metadata"].config == (("cleanup.policy", "compact"),)
    assert {t.created for t in topics.values()} == {"start", "guard", "batch run"}


def test_every_kspark_topic_and_group_starts_with_the_application_id():
    """So Kafka Streams' prefixed ACLs on the application id cover them."""
    names = [t.name for t in kspark_topics("app")] + [g for g, _ in kspark_groups("app")]
    assert all(n == "app" or n.startswith("app-") for n in names)


def test_the_acl_documentation_names_every_internal_topic_and_group():
    text = (DOCS / "security.md").read_text()
    missing = [t.name for t in kspark_topics("my-app") if f"`{t.name}`" not in text]
    missing += [g for g, _ in kspark_groups("my-app") if f"`{g}`" not in text]
    assert missing == [], f"docs/security.md does not name {missing}"


_SUFFIXES = ("-kspark-", "-changelog", "-control", "-routes", "-check")


def _builds_an_internal_name(node: ast.JoinedStr) -> bool:
    """An f-string ``f"{<...app_id...>}-<suffix>..."``."""
    parts = node.values
    if len(parts) < 2 or not isinstance(parts[0], ast.FormattedValue):
        return False
    head = ast.unparse(parts[0].value)
    rest = "".join(p.value for p in parts[1:] if isinstance(p, ast.Constant))
    return ("app" in head or "application" in head) and rest.startswith(_SUFFIXES)


def test_no_module_but_the_list_builds_an_internal_topic_or_group_name():
    """A guard: kspark's internal names are built in ``_graph/resources.py`` only."""
    offenders = []
    for p in ROOT.rglob("*.py"):
        if p.name == "resources.py" and p.parent.name == "_graph":
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.JoinedStr) and _builds_an_internal_name(node):
                offenders.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
