"""Rack-aware standby placement (``rack.aware.assignment.tags``): the rules of
``kspark._plan.racks`` and their use by both modes' placements, one test per rule. The
executor-side tags reach the driver on a cluster in
tests/integration/test_cluster_failover.py."""

from __future__ import annotations

import pytest

from kspark._plan.assignment import fail_over, initial_assignment, spread_standbys
from kspark._plan.placement import keep_copies
from kspark._plan.racks import executor_tags, missing_tags, spread_copies, tags_by_executor
from kspark.config import StreamsConfig
from kspark.errors import ConfigError

ZONES = {"0": {"zone": "a"}, "1": {"zone": "a"}, "2": {"zone": "b"}}


def test_a_copy_goes_to_a_holder_with_another_tag_value_than_the_active():
    spread = spread_copies({"t": "0"}, ["0", "1", "2"], 1, ZONES)
    assert spread == {"0": [], "1": [], "2": ["t"]}


def test_each_next_copy_differs_from_the_active_and_the_copies_before_it():
    tags = {0: {"zone": "a", "rack": "1"}, 1: {"zone": "b", "rack": "1"},
            2: {"zone": "c", "rack": "2"}, 3: {"zone": "b", "rack": "3"}}
    spread = spread_copies({"t": 0}, [0, 1, 2, 3], 2, tags)
    # 2 differs in both tags from 0; then 3 differs from 0 and 2 in both (1 shares rack 1)
    assert [h for h, tasks in spread.items() if tasks] == [2, 3]


def test_when_no_holder_differs_the_least_loaded_one_is_taken():
    same = {h: {"zone": "a"} for h in "012"}
    spread = spread_copies({"t0": "0", "t1": "0"}, ["0", "1", "2"], 1, same)
    assert spread == {"0": [], "1": ["t0"], "2": ["t1"]}


def test_never_a_copy_on_the_actives_machine_nor_two_on_one_machine():
    machine = {0: "e0", 1: "e0", 2: "e1", 3: "e1"}.__getitem__
    tags = {0: {"zone": "a"}, 1: {"zone": "b"}, 2: {"zone": "a"}, 3: {"zone": "a"}}
    spread = spread_copies({"t": 0}, [0, 1, 2, 3], 3, tags, machine)
    # thread 1 differs in zone but shares the active's executor; only one copy fits on e1
    assert spread == {0: [], 1: [], 2: ["t"], 3: []}


def test_a_holder_with_an_unknown_tag_value_counts_as_not_differing():
    tags = {"0": {"zone": "a"}, "1": {}, "2": {"zone": "b"}}
    assert spread_copies({"t": "0"}, ["0", "1", "2"], 1, tags)["2"] == ["t"]


def test_an_executors_tag_comes_from_its_environment_before_the_configs_default():
    env = {"KSPARK_CLIENT_TAG_ZONE": "eu-1a", "KSPARK_CLIENT_TAG_CLOUD_REGION": "eu"}
    assert executor_tags(["zone", "cloud.region", "rack"], {"zone": "x", "rack": "r1"},
                         env) == {"zone": "eu-1a", "cloud.region": "eu", "rack": "r1"}


def test_tags_are_read_only_for_the_configured_keys_and_missing_ones_are_named():
    config = StreamsConfig({"application.id": "a", "bootstrap.servers": "k:1",
                            "rack.aware.assignment.tags": "zone, rack",
                            "client.tag.rack": "r1"})
    tags = tags_by_executor(config, {"0": {"KSPARK_CLIENT_TAG_ZONE": "a",
                                           "KSPARK_CLIENT_TAG_OTHER": "x"}, "1": {}})
    assert tags == {"0": {"zone": "a", "rack": "r1"}, "1": {"rack": "r1"}}
    assert missing_tags(config, tags) == {"1": ["zone"]}
    assert tags_by_executor({"rack.aware.assignment.tags": ()}, {"0": {}}) == {}


def test_micro_batch_copies_follow_the_tags_and_without_tags_the_next_executor():
    assigned = {"0_0": "0", "0_1": "1", "0_2": "2"}
    assert keep_copies(assigned, ["0", "1", "2"], 1, tags=ZONES) == {
        "0": ["0_2"], "1": [], "2": ["0_0", "0_1"]}
    assert keep_copies(assigned, ["0", "1", "2"], 1, tags={e: {} for e in ZONES}) == {
        "0": ["0_2"], "1": ["0_0"], "2": ["0_1"]}


def test_real_time_copies_go_to_threads_on_executors_with_other_tags_and_fail_over_there():
    home = initial_assignment(6, 3, 1)
    spread = spread_standbys(home, {0: "e0", 1: "e1", 2: "e2"},
                             {f"e{e}": t for e, t in ZONES.items()}, 1)
    assert spread.active == home.active
    assert spread.standby[2] == (0, 1, 3, 4)  # zone b keeps copies of zone a's tasks
    assert set(fail_over(spread, 0, 2).active[2]) >= {0, 3}


@pytest.mark.parametrize("props, named", [
    ({"rack.aware.assignment.tags": "a,b,c,d,e,f"}, "at most 5 tag keys"),
    ({"rack.aware.assignment.tags": ["k" * 21]}, "at most 20 characters"),
    ({"client.tag.zone": "v" * 31}, "client.tag.zone"),
    ({"client.tag." + "k" * 21: "v"}, "1 to 20 characters"),
])
def test_tag_keys_and_values_beyond_kafka_streams_limits_are_refused(props, named):
    with pytest.raises(ConfigError, match=named):
        StreamsConfig({"application.id": "a", "bootstrap.servers": "k:1", **props})
