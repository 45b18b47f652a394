"""The names the DSL generates, exactly as Kafka Streams 4.1 generates them.

Java's ``InternalStreamsBuilder`` numbers every generated name from one counter, in the
order the DSL's calls ask for them, and some calls burn a number they do not use (so that
topologies keep their names across versions): a name the user gave (``Named``) still burns
the index its generated name would have had, ``count()`` without a store name burns a store
name, and a repartition burns three processor names. A port that names anything otherwise
gets other internal topics, other changelogs and other store directories than its Java
original, and cannot take over its state. Each function here is one of Java's naming
steps, over the counter of the :class:`~kspark._graph.graph.TopologyGraph` being built:

- :func:`processor_name`: ``NamedInternal.orElseGenerateWithPrefix`` (``KSTREAM-FILTER-``
  plus the index, or the given name, burning the index either way);
- :func:`suffixed_name`: ``NamedInternal.suffixWithOrElseGet`` (the given name plus a
  suffix, burning an index; else a generated one);
- :func:`store_name`: ``newStoreName`` (``KSTREAM-AGGREGATE-STATE-STORE-`` plus the index);
- :func:`repartition_names`: ``KStreamImpl.createRepartitionedSource``: the topic
  ``<prefix>-repartition`` and its sink, null-key filter and source nodes.

Example:
    >>> from kspark._graph.graph import TopologyGraph
    >>> g = TopologyGraph()
    >>> processor_name(g, "KSTREAM-SOURCE"), store_name(g, "KSTREAM-AGGREGATE")
    ('KSTREAM-SOURCE-0000000000', 'KSTREAM-AGGREGATE-STATE-STORE-0000000001')
    >>> processor_name(g, "KSTREAM-FILTER", "evens"), processor_name(g, "KSTREAM-MAP")
    ('evens', 'KSTREAM-MAP-0000000003')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from kspark.errors import TopologyError

if TYPE_CHECKING:
    from kspark._graph.graph import TopologyGraph

__all__ = ["processor_name", "suffixed_name", "store_name", "burn", "RepartitionNames",
           "repartition_names", "REPARTITION_SUFFIX", "legacy_changelogs", "unnamed_resources",
           "check_explicit_naming"]

REPARTITION_SUFFIX = "-repartition"
_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")
_NUMBERED = re.compile(r".*-[0-9]{10}")  # a prefix that is a generated name
# changelogs of stores kspark named before it took Kafka Streams' names (issue 54):
# "<node>-<10 digits>-STATE-STORE", a stream join's "-STORE"/"-PENDING-STORE", a foreign-key
# join's "-VERSION-STATE-STORE"; Kafka Streams never generates these
_LEGACY = re.compile(r".*-[0-9]{10}-(STATE-STORE|STORE|PENDING-STORE|VERSION-STATE-STORE)"
                     r"-changelog")


def burn(g: TopologyGraph) -> int:
    """Take the next index of ``g``'s counter (Java burns some to keep names stable)."""
    return int(g.next_name("")[1:])


def processor_name(g: TopologyGraph, prefix: str, given: str | None = None) -> str:
    """``given`` if the user named the operation, else ``<prefix>-<index>``; the index is
    taken either way, as Java's ``orElseGenerateWithPrefix``."""
    generated = g.next_name(prefix)
    return given or generated


def suffixed_name(g: TopologyGraph, given: str | None, suffix: str, prefix: str) -> str:
    """``given + suffix`` (an index burnt) or a generated ``<prefix>-<index>``, as Java's
    ``suffixWithOrElseGet(suffix, provider, prefix)``.

    >>> from kspark._graph.graph import TopologyGraph
    >>> g = TopologyGraph()
    >>> suffixed_name(g, "by-region", "-sink", "KSTREAM-SINK"), suffixed_name(g, None, "-x", "P")
    ('by-region-sink', 'P-0000000001')
    """
    generated = g.next_name(prefix)
    return given + suffix if given else generated


def store_name(g: TopologyGraph, prefix: str, logged: bool = True) -> str:
    """A generated store name, ``<prefix>-STATE-STORE-<index>`` (Java's ``newStoreName``),
    remembered as generated (``logged``: with a changelog) for :func:`unnamed_resources`."""
    name = f"{prefix}-STATE-STORE-{burn(g):010d}"
    g.generated.append(("store", name, logged))
    return name


@dataclass(frozen=True)
class RepartitionNames:
    """A repartition's topic (without the application id) and its three nodes."""

    topic: str
    sink: str
    filter: str
    source: str


def repartition_names(g: TopologyGraph, prefix: str) -> RepartitionNames:
    """The names of a repartition through ``<prefix>-repartition`` (``prefix`` already
    ending so is kept): three indices are taken; the nodes take the generated names when
    ``prefix`` is itself generated (``KSTREAM...-<10 digits>``), else the topic's name
    with ``-sink``, ``-filter`` and ``-source``.

    >>> from kspark._graph.graph import TopologyGraph
    >>> g = TopologyGraph()
    >>> repartition_names(g, "KSTREAM-AGGREGATE-STATE-STORE-0000000003")
    ... # doctest: +NORMALIZE_WHITESPACE
    RepartitionNames(topic='KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition',
                     sink='KSTREAM-SINK-0000000000', filter='KSTREAM-FILTER-0000000001',
                     source='KSTREAM-SOURCE-0000000002')
    >>> repartition_names(g, "by-region").sink
    'by-region-repartition-sink'
    """
    topic = prefix if prefix.endswith(REPARTITION_SUFFIX) else prefix + REPARTITION_SUFFIX
    sink, null_filter, source = (g.next_name(p) for p in
                                 ("KSTREAM-SINK", "KSTREAM-FILTER", "KSTREAM-SOURCE"))
    if _NUMBERED.fullmatch(prefix) and ("repartition", topic, True) not in g.generated:
        g.generated.append(("repartition", topic, True))
    if _GENERATED.fullmatch(prefix):
        return RepartitionNames(topic, sink, null_filter, source)
    return RepartitionNames(topic, f"{topic}-sink", f"{topic}-filter", f"{topic}-source")


def legacy_changelogs(app_id: str, topics: list[str] | set[str]) -> list[str]:
    """The changelog topics of ``app_id`` among ``topics`` that kspark's own earlier naming
    made (a store whose name was generated then has another name now).

    >>> legacy_changelogs("app", ["app-KSTREAM-AGGREGATE-0000000001-STATE-STORE-changelog",
    ...                           "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog"])
    ['app-KSTREAM-AGGREGATE-0000000001-STATE-STORE-changelog']
    """
    return sorted(t for t in topics if t.startswith(f"{app_id}-") and _LEGACY.fullmatch(t))


def unnamed_resources(g: TopologyGraph) -> str | None:
    """Java's KIP-1111 refusal (``ensure.explicit.internal.resource.naming``): the changelog
    topics, stores and repartition topics of ``g`` whose names were generated, in Java's
    words; None when every one was named.

    >>> from kspark._graph.graph import TopologyGraph
    >>> g = TopologyGraph()
    >>> print(unnamed_resources(g))
    None
    >>> _ = store_name(g, "KSTREAM-AGGREGATE")
    >>> print(unnamed_resources(g))
    Invalid topology: Following changelog topic(s) has not been named: KSTREAM-AGGREGATE-STATE-STORE-0000000000-changelog
    Following state store(s) has not been named: KSTREAM-AGGREGATE-STATE-STORE-0000000000
    <BLANKLINE>
    """  # noqa: E501 - a doctest's expected output is one line
    changelogs = [f"{n}-changelog" for kind, n, logged in g.generated
                  if kind == "store" and logged]
    stores = [n for kind, n, _ in g.generated if kind == "store"]
    topics = [n for kind, n, _ in g.generated if kind == "repartition"]
    lines = [f"Following {what} has not been named: {', '.join(names)}\n"
             for what, names in (("changelog topic(s)", changelogs), ("state store(s)", stores),
                                 ("repartition topic(s)", topics)) if names]
    return "Invalid topology: " + "".join(lines) if lines else None


def check_explicit_naming(g: TopologyGraph, config: Any) -> None:
    """With ``ensure.explicit.internal.resource.naming``, a TopologyError listing what was
    not named (:func:`unnamed_resources`), as Kafka Streams refuses such a topology."""
    problem = unnamed_resources(g) if config.get(
        "ensure.explicit.internal.resource.naming") else None
    if problem:
        raise TopologyError(problem.rstrip("\n"))
