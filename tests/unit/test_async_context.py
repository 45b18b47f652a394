"""An AsyncProcessor gets what it needs through its context (AsyncContext), and a task
names its async nodes (``StreamTask.async_nodes``) by their declared type."""

import pytest

from kspark import Serdes, StreamsBuilder
from kspark._engine.async_.processor import AsyncContext
from kspark.errors import TopologyError
from kspark.processor import AsyncProcessor, Processor, Topology
from kspark.testing import TopologyTestDriver

S, I = Serdes.String(), Serdes.Integer()


class Failing(AsyncProcessor):
    def call(self, record):
        raise ValueError("no lookup for " + record.key)


def test_the_task_names_its_async_nodes_upstream_first():
    b = StreamsBuilder()
    (b.stream("in", key_serde=S, value_serde=I).map_values_async(lambda v: v + 1, name="one")
      .filter(lambda k, v: True).filter_async(bool, name="two").to("out", value_serde=I))
    with TopologyTestDriver(b.build()) as d:
        task = d._task
        assert [n.name for n in task.async_nodes] == ["one", "two"]
        assert task._async_nodes == task.async_nodes  # the old name, until hosts move


def test_a_processor_with_a_complete_in_flight_method_is_not_an_async_node():
    class LooksAsync(Processor):
        def complete_in_flight(self):
            raise AssertionError("not an async step: never called")

    t = Topology().add_source("src", "in", key_serde=S, value_serde=I)
    t.add_processor("p", LooksAsync, "src")
    with TopologyTestDriver(t) as d:
        assert d._task.async_nodes == ()
        d.create_input_topic("in", S, I).pipe_input("k", 1)


def test_the_engine_context_is_an_async_context_and_dead_letters_through_it():
    t = Topology().add_source("src", "in", key_serde=S, value_serde=I)
    t.add_processor("lookup", lambda: Failing(on_failure="dead_letter"), "src")
    t.add_sink("sink", "out", "lookup", key_serde=S, value_serde=I)
    with TopologyTestDriver(t, {"errors.dead.letter.queue.topic.name": "dlq"}) as d:
        (node,) = d._task.async_nodes
        assert isinstance(node.processor.context, AsyncContext)
        d.create_input_topic("in", S, I).pipe_input("k", 1)
        (dead,) = d.create_output_topic("dlq", S, I).read_records_to_list()
        headers = dict(dead.headers)
        assert headers["__streams.errors.processor"] == b"lookup"
        assert headers["__streams.errors.message"] == b"no lookup for k"


def test_an_async_processor_outside_a_task_is_refused_naming_what_it_lacks():
    class Bare:
        def forward(self, record, child_name=None):
            pass

    with pytest.raises(TopologyError, match="Failing runs only in a kspark task.*Bare"):
        Failing().init(Bare())
