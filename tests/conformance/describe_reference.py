"""Processor-API topologies described by Java Kafka Streams and by kspark.

A topology is a list of statements (``DescribeReference.java`` reads the same ones):

    source <name> <topic>[,<topic>...]
    processor <name> <parent>[,<parent>...]
    sink <name> <topic>|@ <parent>[,<parent>...]     @: a topic extractor printed "Extractor"
    store <name> [<processor>,...]                   an in-memory key-value store
    connect <processor> <store>[,<store>...]
    global <store> <source> <topic> <processor>      Topology.add_global_store

Example:
    >>> print(str(build(["source s in", "sink k out s"]).describe()), end="")
    Topologies:
       Sub-topology: 0
        Source: s (topics: [in])
          --> k
        Sink: k (topic: out)
          <-- s
    <BLANKLINE>
"""

from __future__ import annotations

import random
import string
import subprocess
from pathlib import Path

from kspark import Serdes, Topology
from kspark._local.prereqs import java_binary
from kspark.processor import Processor
from kspark.state import Stores
from tests.conformance.reference import compiled

__all__ = ["build", "describe_java", "random_topology", "Extractor"]

_SOURCE = Path(__file__).with_name("DescribeReference.java")
S = Serdes.String()


class Extractor:
    """A topic extractor that prints as the Java reference's does."""

    def __call__(self, key, value, metadata) -> str:
        return "x"

    def __str__(self) -> str:
        return "Extractor"


class _Nothing(Processor):
    def process(self, record) -> None:
        pass


def _store(name: str):
    return Stores.key_value_store_builder(Stores.in_memory_key_value_store(name), S, S)


def build(lines: list[str]) -> Topology:
    """kspark's Topology for the statements."""
    t = Topology()
    for line in lines:
        w = line.split(" ")
        names = w[-1].split(",") if len(w) > 2 else []
        if w[0] == "source":
            t.add_source(w[1], *names, key_serde=S, value_serde=S)
        elif w[0] == "processor":
            t.add_processor(w[1], _Nothing, *names)
        elif w[0] == "sink":
            t.add_sink(w[1], Extractor() if w[2] == "@" else w[2], *w[3].split(","))
        elif w[0] == "store":
            t.add_state_store(_store(w[1]), *names)
        elif w[0] == "connect":
            t.connect_processor_and_state_stores(w[1], *names)
        elif w[0] == "global":
            t.add_global_store(_store(w[1]).with_logging_disabled(), w[2], w[3], w[4], _Nothing,
                               key_serde=S, value_serde=S)
        else:
            raise ValueError(f"unknown statement: {line}")
    return t


def _classpath() -> str:
    return compiled(_SOURCE)


def describe_java(topologies: list[list[str]]) -> list[str]:
    """Each topology's ``describe().toString()`` from Java Kafka Streams, in one JVM."""
    text = "".join("\n".join(t) + "\nend\n" for t in topologies)
    proc = subprocess.run([java_binary(), "-cp", _classpath(), "DescribeReference"],
                          input=text, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the Java reference failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    answers = proc.stdout.split("~end~\n")[:-1]
    if len(answers) != len(topologies):
        raise RuntimeError(f"the Java reference answered {len(answers)} of {len(topologies)} "
                           f"topologies:\n{proc.stderr[-3000:]}")
    return answers


def _name(rng: random.Random, taken: set[str]) -> str:
    """A new name: Java-like generated ones, short ones that share prefixes, or any."""
    while True:
        k = rng.random()
        if k < 0.3:
            name = rng.choice(["KSTREAM-SOURCE-", "KSTREAM-MAP-", "KTABLE-SOURCE-",
                               "KSTREAM-SINK-"]) + f"{rng.randrange(40):010d}"
        elif k < 0.6:
            name = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 3)))
        else:
            name = "".join(rng.choices(string.ascii_letters + string.digits + "-_",
                                       k=rng.randint(1, 12)))
        if name not in taken:
            taken.add(name)
            return name


def random_topology(seed: int, steps: int = 16) -> list[str]:
    """Up to ``steps`` random statements: sources of 1 to 13 topics, processors and sinks of
    1 to 3 parents (diamonds, shared parents), stores connected when added or later, global
    stores anywhere. Store names may equal node names (separate namespaces, as in Java)."""
    rng = random.Random(seed)
    nodes: set[str] = set()
    topics: set[str] = set()
    stores: set[str] = set()
    parents: list[str] = []
    processors: list[str] = []
    lines = []
    for _ in range(rng.randint(1, steps)):
        k = rng.random()
        if k < 0.2 or not parents:
            name = _name(rng, nodes)
            read = [_name(rng, topics) for _ in range(rng.choice([1, 1, 1, 2, 3, 5, 13]))]
            lines.append(f"source {name} {','.join(read)}")
            parents.append(name)
        elif k < 0.6:
            name = _name(rng, nodes)
            ps = rng.sample(parents, min(len(parents), rng.choice([1, 1, 1, 2, 2, 3])))
            lines.append(f"processor {name} {','.join(ps)}")
            parents.append(name)
            processors.append(name)
        elif k < 0.75:
            ps = rng.sample(parents, min(len(parents), rng.choice([1, 1, 2])))
            topic = "@" if rng.random() < 0.2 else _name(rng, topics)
            lines.append(f"sink {_name(rng, nodes)} {topic} {','.join(ps)}")
        elif k < 0.85 and processors:
            users = rng.sample(processors, min(len(processors), rng.choice([0, 1, 1, 2])))
            lines.append(f"store {_name(rng, stores)} {','.join(users)}".rstrip())
        elif k < 0.9 and processors and stores:
            some = rng.sample(sorted(stores), min(len(stores), rng.choice([1, 2])))
            lines.append(f"connect {rng.choice(processors)} {','.join(some)}")
        else:
            lines.append(f"global {_name(rng, stores)} {_name(rng, nodes)} "
                         f"{_name(rng, topics)} {_name(rng, nodes)}")
    return lines
