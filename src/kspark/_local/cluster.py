"""A local multi-node KRaft cluster on loopback, for tests of broker failures: every node is a
broker and a controller (a static quorum of all of them), each a
:class:`~kspark._local.broker.LocalBroker` with its own directory, port and log.

Example (nothing starts until :meth:`LocalCluster.start`):
    >>> import tempfile
    >>> cluster = LocalCluster(tempfile.mkdtemp(), brokers=3, ports=[9101, 9102, 9103])
    >>> cluster.bootstrap
    '127.0.0.1:9101,127.0.0.1:9102,127.0.0.1:9103'
    >>> cluster.nodes[2].dir.name
    'node-2'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kspark._kafka import QuietLogger
from kspark._local.broker import BrokerStatus, LocalBroker, new_cluster_id
from kspark._local.broker_process import free_port
from kspark._local.tls import HOST
from kspark._local.jars import kspark_home
from kspark.errors import BrokerError

__all__ = ["LocalCluster"]


def cluster_properties(brokers: int) -> dict[str, str]:
    """The settings every node gets over a single broker's: replication factor 3 (or the
    node count, if smaller) and a minimum ISR one below it, for every topic and for the
    offsets, transaction and share-state topics.

    A node's heartbeat session lasts 4 s, not Kafka's 9 s: a crashed node is fenced (and
    dropped from the ISRs) sooner, and a restarted node that was the active controller
    registers again sooner (the next controller gives every broker a full session first).

    >>> cluster_properties(3)["min.insync.replicas"]
    '2'
    """
    rf = min(brokers, 3)
    isr = str(max(1, rf - 1))
    return {"default.replication.factor": str(rf), "min.insync.replicas": isr,
            "offsets.topic.replication.factor": str(rf),
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": isr,
            "broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"}


class LocalCluster:
    """``brokers`` KRaft nodes (broker + controller each) in ``data_dir/node-<id>``, ids
    1..``brokers``, all formatted with one cluster id.

    The client ports (``ports``, else free ones) and the controller ports are chosen once
    and kept, with the cluster id, in ``data_dir/cluster.json``: a node, or the whole
    cluster, comes back on the same addresses. ``overrides`` are broker settings over the
    cluster's (:func:`cluster_properties`) and a single broker's defaults.

    Example (starts three JVMs, so not run as a doctest)::

        cluster = LocalCluster("/tmp/kafka-cluster")
        print(cluster.start())      # 127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3
        cluster.kill(2)             # SIGKILL node 2: a crash
        cluster.start_node(2)       # back, registered again as broker 2
        cluster.wait_in_sync()      # every partition's ISR full again
        cluster.rolling_restart()   # each node in turn, as Kafka's operators do
        cluster.stop()
    """

    def __init__(self, data_dir: Path | str | None = None, brokers: int = 3,
                 ports: list[int] | None = None, heap: str = "512m",
                 overrides: dict[str, str] | None = None):
        if brokers < 2:
            raise BrokerError(f"a cluster needs at least 2 brokers, not {brokers}: one broker "
                              "is LocalBroker (kspark broker start without --brokers)")
        if ports is not None and len(ports) != brokers:
            raise BrokerError(f"{len(ports)} ports given for {brokers} brokers")
        self.dir = Path(data_dir) if data_dir else kspark_home() / "cluster"
        self.size = brokers
        self._layout_file = self.dir / "cluster.json"
        self._layout = self._read_layout(ports)
        voters = ",".join(f"{i}@{HOST}:{c}"
                          for i, c in enumerate(self._layout["controller_ports"], 1))
        props = {**cluster_properties(brokers), **(overrides or {})}
        self._nodes = {
            i: LocalBroker(self.dir / f"node-{i}", port=port, heap=heap, overrides=props,
                           node_id=i, quorum=voters, cluster_id=self._layout["cluster_id"])
            for i, port in enumerate(self._layout["ports"], 1)}

    @property
    def nodes(self) -> dict[int, LocalBroker]:
        """The nodes by node id (1..``brokers``)."""
        return dict(self._nodes)

    @property
    def bootstrap(self) -> str:
        """Every node's address, comma-separated (``bootstrap.servers``)."""
        return ",".join(n.bootstrap for n in self._nodes.values())

    def status(self) -> dict[int, BrokerStatus]:
        """Each node's status by node id."""
        return {i: n.status() for i, n in self._nodes.items()}

    def start(self, timeout_s: float = 120.0) -> str:
        """Start every node not running (formatting its storage the first time) and wait
        until each is a live broker of the cluster; returns :attr:`bootstrap`.

        All processes start first: a node cannot become ready before a quorum of the
        controllers runs."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._layout_file.write_text(json.dumps(self._layout, indent=1) + "\n")
        deadline = time.monotonic() + timeout_s
        todo = [n for n in self._nodes.values() if not n.status().running]
        try:
            with ThreadPoolExecutor(len(todo) or 1) as pool:
                list(pool.map(lambda n: n.start(timeout_s, wait=False), todo))
            for n in self._nodes.values():
                n.wait_ready(max(1.0, deadline - time.monotonic()))
        except BaseException:
            for n in todo:  # no half-started cluster left behind
                n.stop(5.0)
            raise
        return self.bootstrap

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop every node cleanly, all at once; False if none ran. (One by one, the last
        node would find no quorum for its controlled shutdown and wait out ``timeout_s``
        before its SIGKILL; so would :meth:`stop_node` of a node whose peers are down.)"""
        with ThreadPoolExecutor(self.size) as pool:
            return any(list(pool.map(lambda n: n.stop(timeout_s), self._nodes.values())))

    def kill(self, node: int) -> bool:
        """SIGKILL node ``node`` (a crash) and wait until its process is gone; False if it
        did not run."""
        return self._node(node).kill()

    def stop_node(self, node: int, timeout_s: float = 30.0) -> bool:
        """Stop node ``node`` cleanly (SIGTERM: a controlled shutdown); False if it did not
        run."""
        return self._node(node).stop(timeout_s)

    def start_node(self, node: int, timeout_s: float = 90.0) -> None:
        """Start node ``node`` again (same directory and ports) and wait until it is back
        as a live broker in the cluster's metadata (registered with the quorum, unfenced).
        Its replicas may still be catching up: :meth:`wait_in_sync` waits for that."""
        self._node(node).start(timeout_s)

    def under_replicated(self, admin: Any = None) -> list[str]:
        """Every partition (``topic-partition``, internal topics included) whose ISR is not
        its full replica set, or that has no leader (``admin``: an AdminClient to ask)."""
        md = (admin or self._admin()).list_topics(timeout=5)
        return sorted(f"{t.topic}-{p.id}" for t in md.topics.values()
                      for p in t.partitions.values()
                      if p.leader < 0 or set(p.isrs) != set(p.replicas))

    def wait_in_sync(self, timeout_s: float = 90.0) -> None:
        """Wait until no partition is under-replicated (BrokerError naming them if some
        still are after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        admin = self._admin()
        behind = ["(no metadata)"]
        while time.monotonic() < deadline:
            try:
                behind = self.under_replicated(admin)
            except Exception as e:  # noqa: BLE001 - no answer yet: ask again
                behind = [f"(no metadata: {e})"]
            if not behind:
                return
            time.sleep(0.2)
        raise BrokerError(f"{len(behind)} partition(s) still under-replicated after "
                          f"{timeout_s:g}s: {', '.join(behind[:10])}; see the nodes' logs "
                          f"({self.dir}/node-*/broker.log)")

    def rolling_restart(self, log: Callable[[str], object] = print,
                        timeout_s: float = 90.0,
                        around: Callable[[int, str], object] | None = None
                        ) -> dict[int, float]:
        """Restart each node in turn, as Kafka's operators do: a clean stop, a start, then
        wait until every partition's ISR is full again before the next node. Returns the
        seconds each node took; BrokerError if a step does not finish within ``timeout_s``.
        ``around(node, "stopping" | "stopped")``, if given, is called before each node's
        stop and once it has stopped (a test watches the leaders move)."""
        self.wait_in_sync(timeout_s)  # never take a node out of an under-replicated cluster
        took = {}
        for i, node in self._nodes.items():
            log(f"kspark cluster: restarting node {i} ({node.bootstrap})")
            if around is not None:
                around(i, "stopping")
            t0 = time.monotonic()
            node.stop(timeout_s)
            t1 = time.monotonic()
            try:
                if around is not None:
                    around(i, "stopped")
            finally:  # a failing watcher never leaves the node down
                node.start(timeout_s)
            t2 = time.monotonic()
            self.wait_in_sync(timeout_s)
            took[i] = time.monotonic() - t0
            log(f"kspark cluster: node {i} is back and every partition in sync in "
                f"{took[i]:.1f}s (stop {t1 - t0:.1f}s, start {t2 - t1:.1f}s, catch-up "
                f"{t0 + took[i] - t2:.1f}s)")
        return took

    def _admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "log_level": 0,
                                "logger": QuietLogger()}
        return AdminClient(conf)

    def _node(self, node: int) -> LocalBroker:
        if node not in self._nodes:
            raise BrokerError(f"no node {node}: this cluster's nodes are 1..{self.size}")
        return self._nodes[node]

    def _read_layout(self, ports: list[int] | None) -> dict:
        """The remembered ports and cluster id, or new ones (written by :meth:`start`)."""
        if self._layout_file.exists():
            layout = json.loads(self._layout_file.read_text())
            if len(layout["ports"]) != self.size:
                raise BrokerError(f"{self.dir} holds a cluster of {len(layout['ports'])} "
                                  f"brokers, not {self.size}: use brokers="
                                  f"{len(layout['ports'])} or another directory")
            if ports is not None and list(ports) != layout["ports"]:
                raise BrokerError(f"the cluster in {self.dir} listens on ports "
                                  f"{layout['ports']}, not {list(ports)}: leave the ports out "
                                  "or use another directory")
            return layout
        fresh: list[int] = []
        while len(fresh) < (1 if ports else 2) * self.size:  # distinct, and not in ``ports``
            port = free_port()
            if port not in fresh and port not in (ports or []):
                fresh.append(port)
        return {"cluster_id": new_cluster_id(),
                "ports": list(ports) if ports else fresh[self.size:],
                "controller_ports": fresh[:self.size]}
