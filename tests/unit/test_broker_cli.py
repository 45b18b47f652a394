"""``kspark broker ... --brokers N`` without starting a JVM: the parser, refusals, the status
of a cluster that is not running, and the layout a cluster keeps in its directory."""

import json

import pytest

from kspark._local.cluster import LocalCluster, cluster_properties
from kspark._cli.main import build_parser, main
from kspark.errors import BrokerError


def test_brokers_defaults_to_one_and_the_port_to_the_single_brokers():
    args = build_parser().parse_args(["broker", "start"])
    assert (args.brokers, args.port, args.dir) == (1, None, None)
    args = build_parser().parse_args(["broker", "status", "--brokers", "3", "--port", "9101"])
    assert (args.action, args.brokers, args.port) == ("status", 3, 9101)


def test_brokers_must_be_a_number():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["broker", "start", "--brokers", "three"])


def test_a_secured_cluster_is_refused_with_the_reason(tmp_path, capsys):
    assert main(["broker", "start", "--brokers", "3", "--secure", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--secure with --brokers is not supported yet" in err
    assert list(tmp_path.iterdir()) == []


def test_a_cluster_of_one_or_less_is_refused(tmp_path, capsys):
    assert main(["broker", "start", "--brokers", "0", "--dir", str(tmp_path)]) == 2
    assert "at least 2 brokers" in capsys.readouterr().err


def test_status_and_stop_of_a_cluster_that_never_ran(tmp_path, capsys):
    args = ["--brokers", "3", "--dir", str(tmp_path / "cluster")]
    assert main(["broker", "status", *args]) == 3
    out = capsys.readouterr().out
    assert "node 3: not running" in out and "kspark broker: not running" in out
    assert main(["broker", "stop", *args]) == 0
    assert "was not running" in capsys.readouterr().out
    assert not (tmp_path / "cluster").exists()  # nothing written until it starts


def test_a_clusters_directory_is_not_taken_for_a_single_brokers(tmp_path, capsys):
    (tmp_path / "cluster.json").write_text("{}")
    assert main(["broker", "status", "--dir", str(tmp_path)]) == 2
    assert "add --brokers N" in capsys.readouterr().err


def test_the_layout_is_kept_and_a_different_one_refused(tmp_path):
    c = LocalCluster(tmp_path, brokers=3)
    nodes = c.nodes
    assert [n.dir.name for n in nodes.values()] == ["node-1", "node-2", "node-3"]
    quorum = nodes[1].quorum
    assert quorum is not None and quorum.startswith("1@127.0.0.1:") and quorum.count(",") == 2
    assert {n.quorum for n in nodes.values()} == {quorum}
    assert len({n.cluster_id for n in nodes.values()}) == 1
    ports = [n.port for n in nodes.values()] + [n._controller_port() for n in nodes.values()]
    assert len(set(ports)) == 6
    (tmp_path / "cluster.json").write_text(json.dumps({
        "cluster_id": "abc", "ports": ports[:3], "controller_ports": ports[3:]}))
    assert LocalCluster(tmp_path).bootstrap == c.bootstrap
    with pytest.raises(BrokerError, match="holds a cluster of 3 brokers, not 4"):
        LocalCluster(tmp_path, brokers=4)
    with pytest.raises(BrokerError, match="listens on ports"):
        LocalCluster(tmp_path, ports=[1, 2, 3])


def test_cluster_properties_replicate_three_times_with_two_in_sync():
    props = cluster_properties(3)
    for key in ("default.replication.factor", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor",
                "share.coordinator.state.topic.replication.factor"):
        assert props[key] == "3"
    for key in ("min.insync.replicas", "transaction.state.log.min.isr",
                "share.coordinator.state.topic.min.isr"):
        assert props[key] == "2"
    assert cluster_properties(2)["default.replication.factor"] == "2"
    assert cluster_properties(2)["min.insync.replicas"] == "1"
