"""The client's own metrics (``stream-metrics``), as Java's ``ClientMetrics`` names them."""

from kspark._client.client_metrics import CLIENT_GROUP, client_metrics


def test_the_client_metrics_have_javas_names_group_and_client_id_tag():
    m = client_metrics("my-client", "app", "RUNNING", {"app-StreamThread-1"}, "Topologies:")
    names = sorted(n.name for n in m)
    assert names == ["alive-stream-threads", "application-id", "commit-id", "state",
                     "topology-description", "version"]
    assert {n.group for n in m} == {CLIENT_GROUP} == {"stream-metrics"}
    assert {n.tags["client-id"] for n in m} == {"my-client"}


def test_alive_stream_threads_counts_the_reporting_threads_while_running_or_rebalancing():
    threads = {"app-StreamThread-1", "app-StreamThread-2"}
    alive = {state: client_metrics("app", "app", state, threads, "").value(
        "alive-stream-threads") for state in
        ("CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "ERROR")}
    assert alive == {"CREATED": 0, "REBALANCING": 2, "RUNNING": 2, "PENDING_SHUTDOWN": 0,
                     "NOT_RUNNING": 0, "ERROR": 0}
