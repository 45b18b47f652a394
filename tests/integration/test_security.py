"""kspark on a secured cluster (issue 24): SASL_SSL with SCRAM-SHA-512 over TLS from a private
CA, the StandardAuthorizer with ACLs, an application whose principal has exactly Kafka
Streams' ACL set, one missing ACL at a time, a wrong password, an untrusted CA."""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kspark import KafkaStreams, Serdes, StreamsBuilder
from kspark._kafka.admin import Admin
from kspark._kafka.security_admin import application_acls, grant
from kspark.errors import KSparkError
from tests.matrix import sampled

pytestmark = pytest.mark.integration
S = Serdes.String()
N = 30


def topology(src: str, long_out: str, counts_out: str):
    """A stateless branch and a count per key."""
    b = StreamsBuilder()
    views = b.stream(src, key_serde=S, value_serde=S)
    views.filter(lambda k, v: len(v) > 3).to(long_out)
    views.group_by_key().count().to_stream().to(counts_out, value_serde=Serdes.Long())
    return b.build()


def expected() -> tuple[list[tuple[str, str]], dict[str, int]]:
    rows = [(f"k{i % 5}", "v" * (i % 6 + 1)) for i in range(N)]
    counts: dict[str, int] = {}
    for k, _ in rows:
        counts[k] = counts.get(k, 0) + 1
    return [(k, v) for k, v in rows if len(v) > 3], counts


class App:
    """One application's topics and principal on the secured broker."""

    def __init__(self, secure, tmp_path: Path):
        tag = uuid.uuid4().hex[:6]
        self.secure = secure
        self.app_id = f"sec-{tag}"
        self.src, self.long, self.counts = f"in-{tag}", f"long-{tag}", f"counts-{tag}"
        Admin(_admin_settings(secure)).create_topics({self.src: 1, self.long: 1, self.counts: 1})
        p = Producer({**secure.admin_conf, "enable.idempotence": True})
        for i in range(N):
            p.produce(self.src, key=f"k{i % 5}", value="v" * (i % 6 + 1), timestamp=1000 + i)
        assert p.flush(30) == 0
        self.user = secure.user()
        self.principal = f"User:{self.user['sasl.username']}"
        self.state = tmp_path / "state"

    def acls(self):
        return application_acls(self.app_id, [self.src], [self.long, self.counts])

    def grant(self, leave_out=()):
        by_resource: dict[tuple, list[str]] = {}
        for rtype, name, op, pattern in self.acls():
            if (rtype, name, op) not in leave_out:
                by_resource.setdefault((rtype, name, pattern), []).append(op)
        for (rtype, name, pattern), ops in by_resource.items():
            grant(self.secure.admin_conf, self.principal, rtype, name, ops, pattern)

    def config(self, guarantee: str, **extra):
        return {"application.id": self.app_id, "bootstrap.servers": self.secure.bootstrap,
                "state.dir": str(self.state), "autostop.at": "eol",
                "execution.mode": "micro_batch",
                "request.timeout.ms": 10000, "processing.guarantee": guarantee,
                **self.user, **extra}

    def properties(self, path: Path, password: str, extra: list[str]) -> Path:
        """A properties file for ``kspark run``: the application as this principal."""
        path.write_text("\n".join([
            f"application.id={self.app_id}", f"bootstrap.servers={self.secure.bootstrap}",
            f"state.dir={self.state}", "autostop.at=eol", "execution.mode=micro_batch",
            "security.protocol=SASL_SSL",
            "sasl.mechanism=SCRAM-SHA-512", f"sasl.username={self.user['sasl.username']}",
            f"sasl.password={password}", f"ssl.ca.location={self.secure.ca_file}",
            *extra]) + "\n")
        return path

    def run(self, spark, guarantee: str, **extra) -> KafkaStreams:
        streams = KafkaStreams(topology(self.src, self.long, self.counts),
                               self.config(guarantee, **extra), spark=spark)
        try:
            streams.start()
            assert streams.await_termination(180), "the batch run did not finish"
        finally:
            streams.close()
        return streams

    def read(self, topic: str, expected_count: int = 0) -> list[tuple[str, object]]:
        c = Consumer({**self.secure.admin_conf, "group.id": f"check-{uuid.uuid4().hex}",
                      "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                      "enable.partition.eof": True, "fetch.wait.max.ms": 10})
        c.assign([TopicPartition(topic, 0, 0)])  # the app's topics have one partition
        out, eof, deadline = [], False, time.monotonic() + 60
        while time.monotonic() < deadline and not (eof and len(out) >= expected_count):
            for m in c.consume(500, 0.1):
                if m.error() is not None:
                    eof = eof or m.error().code() == -191  # _PARTITION_EOF
                    continue
                value = m.value()
                out.append((m.key().decode(), int.from_bytes(value, "big", signed=True)
                            if topic == self.counts else value.decode()))
        c.close()
        return out


def _admin_settings(secure):
    from kspark._kafka.settings import ClientSettings

    conf = {k: v for k, v in secure.admin_conf.items() if k != "bootstrap.servers"}
    return ClientSettings.from_config({"bootstrap.servers": secure.bootstrap,
                                       "application.id": "admin", **conf})


def _check_exact(app: App) -> None:
    long_rows, counts = expected()
    assert app.read(app.long, len(long_rows)) == long_rows
    latest = dict(app.read(app.counts, len(counts)))
    assert latest == counts


# Both modes and both guarantees, sampled for the suite's time: each mode and each guarantee
# once in make test, the other two pairs in the full matrix.
SAMPLED_RUNS = [("micro_batch", "at_least_once"), ("real_time", "exactly_once_v2")]
EXACT_RUNS = sampled([*SAMPLED_RUNS, ("micro_batch", "exactly_once_v2"),
                      ("real_time", "at_least_once")], keep=SAMPLED_RUNS)


@pytest.mark.parametrize("execution_mode,guarantee", EXACT_RUNS)
def test_exact_output_with_kafka_streams_acl_set_and_no_secret_in_plan(
        secure_broker, spark, tmp_path, execution_mode, guarantee):
    """The application as a principal with exactly Kafka Streams' ACL set, in either mode:
    in real-time mode its stream threads' consumers, the tasks' producers and transactions,
    the group's commits and the control topic (stop, routes) too. The output is exact; the
    query's plan (micro-batch), the topology's description and the config show no secret."""
    app = App(secure_broker, tmp_path)
    app.grant()
    streams = app.run(spark, guarantee, **{"execution.mode": execution_mode})
    _check_exact(app)
    described = topology(app.src, app.long, app.counts).describe()
    shown = [str(described), repr(streams.config)]
    if execution_mode == "micro_batch":
        plan = streams._app._query.current._jsq.explainInternal(True)
        assert "kspark_kafka" in plan
        shown.append(plan)
    for text in shown:
        assert app.user["sasl.password"] not in text


# Each ACL of Kafka Streams' set, left out alone: where it is needed, the application fails
# naming the resource and the operation; where Kafka implies it by another ACL of the set
# (READ, WRITE imply DESCRIBE; WRITE on a topic implies IDEMPOTENT_WRITE since Kafka 3.0) or a
# run never uses it (DELETE: only kspark reset deletes topics), the run is exact without it.
NEEDED = [  # (resource type, which name, operation) -> the error's words
    ("TOPIC", "src", "READ"),
    ("TOPIC", "long", "WRITE"),
    ("TOPIC", "app", "CREATE"),
    ("TOPIC", "app", "READ"),
    ("TOPIC", "app", "WRITE"),
    ("GROUP", "app", "READ"),
    ("TRANSACTIONAL_ID", "app", "WRITE"),
]
IMPLIED = [("TOPIC", "src", "DESCRIBE"), ("TOPIC", "long", "DESCRIBE"),
           ("TOPIC", "counts", "DESCRIBE"), ("TOPIC", "app", "DESCRIBE"),
           ("TOPIC", "app", "DELETE"), ("GROUP", "app", "DESCRIBE"),
           ("TRANSACTIONAL_ID", "app", "DESCRIBE"), ("CLUSTER", "cluster", "IDEMPOTENT_WRITE")]


def _name(app: App, which: str) -> str:
    return {"src": app.src, "long": app.long, "counts": app.counts, "app": app.app_id,
            "cluster": "kafka-cluster"}[which]


@pytest.mark.parametrize("rtype,which,op", NEEDED, ids=[f"{r}-{w}-{o}" for r, w, o in NEEDED])
def test_a_missing_acl_is_named_and_nothing_is_written(secure_broker, spark, tmp_path,
                                                       rtype, which, op):
    app = App(secure_broker, tmp_path)
    app.grant(leave_out={(rtype, _name(app, which), op)})
    started = time.monotonic()
    with pytest.raises(KSparkError) as info:
        app.run(spark, "exactly_once_v2")
    took = time.monotonic() - started
    text = str(info.value)
    assert "AuthorizationError" in text or type(info.value).__name__ == "AuthorizationError", text
    assert f"{app.principal} is not authorized to {op}" in text, text
    kind = {"TOPIC": "topic", "GROUP": "group", "TRANSACTIONAL_ID": "transactional id"}[rtype]
    if which == "app":  # an internal resource: granted by the application.id prefix
        assert re.search(rf"{kind} '{re.escape(app.app_id)}[^']*'", text), text
        assert f"{app.app_id} --resource-pattern-type prefixed" in text, text
    else:
        assert f"{kind} '{_name(app, which)}'" in text, text
    assert f"--operation {op.title()}" in text, text
    assert took < 150, f"the error took {took:.0f} s"
    assert app.read(app.long) == [] and app.read(app.counts) == []  # read_committed


def test_acls_kafka_implies_are_not_needed(secure_broker, spark, tmp_path):
    app = App(secure_broker, tmp_path)
    app.grant(leave_out={(r, _name(app, w), o) for r, w, o in IMPLIED})
    app.run(spark, "exactly_once_v2")
    _check_exact(app)


def test_wrong_password_is_an_authentication_error(secure_broker, spark, tmp_path):
    app = App(secure_broker, tmp_path)
    app.grant()
    app.user["sasl.password"] = "not-the-password"
    with pytest.raises(KSparkError) as info:
        app.run(spark, "at_least_once")
    text = str(info.value)
    assert type(info.value).__name__ == "AuthenticationError", text
    assert f"refused user {app.user['sasl.username']!r}" in text and "SCRAM-SHA-512" in text
    assert "SASL_SSL" in text and "not-the-password" not in text
    assert app.read(app.long) == []


def test_untrusted_ca_is_a_certificate_error(secure_broker, spark, tmp_path):
    app = App(secure_broker, tmp_path)
    app.user["ssl.ca.location"] = secure_broker.other_ca_file
    with pytest.raises(KSparkError) as info:
        app.run(spark, "at_least_once")
    text = str(info.value)
    assert type(info.value).__name__ == "CertificateError", text
    assert "not trusted" in text and "ssl.ca.location" in text, text


def _client_key(tmp_path: Path) -> tuple[Path, Path, str]:
    """A client key and self-signed certificate (PEM); a line of the key's body to search for."""
    import subprocess

    key, cert = tmp_path / "client-key.pem", tmp_path / "client-cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=kspark-test-client"],
                   check=True, capture_output=True, timeout=60)
    body = [line for line in key.read_text().splitlines() if not line.startswith("-----")]
    return key, cert, body[len(body) // 2]


def _kspark(args: list[str], env: dict, cwd: Path, timeout: float = 300):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kspark._cli.main", *args], cwd=cwd,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _query_tokens(secure, app_id):
    """The tokens of the query endpoints the application's workers announced."""
    import json

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**secure.admin_conf, "group.id": f"check-{uuid.uuid4().hex}"})
    tp = TopicPartition(f"{app_id}-kspark-control", 0, 0)
    c.assign([tp])
    tokens: set[bytes] = set()
    try:
        end, deadline = c.get_watermark_offsets(tp, timeout=10)[1], time.monotonic() + 30
        while c.position([tp])[0].offset < end and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is None and m.key() == b"route":
                    tokens.add(json.loads(m.value())["token"].encode())
    finally:
        c.close()
    return tokens


def test_every_client_has_the_security_settings_and_no_secret_is_written(
        secure_broker, tmp_path):
    """kspark run (driver and Spark workers) and kspark reset with --config on the secured
    cluster: an audit of every Kafka client made, then a scan of everything written."""
    import json

    app = App(secure_broker, tmp_path)
    app.grant()
    key, cert, key_line = _client_key(tmp_path)
    events, audit = tmp_path / "events", tmp_path / "clients.jsonl"
    events.mkdir()
    props = app.properties(tmp_path / "app.properties", "${env:APP_SASL_PASSWORD}", [
        "processing.guarantee=exactly_once_v2",
        f"ssl.key.pem=${{file:{key}}}", f"ssl.certificate.pem=${{file:{cert}}}",
        "spark.master=local[2]", "spark.ui.enabled=false", "spark.sql.shuffle.partitions=2",
        "spark.eventLog.enabled=true", f"spark.eventLog.dir=file://{events}",
        "spark.eventLog.compress=false"])
    repo = Path(__file__).resolve().parents[2]
    env = {"APP_SASL_PASSWORD": app.user["sasl.password"], "KSPARK_CLIENT_AUDIT": str(audit),
           "SECURE_APP_TOPICS": f"{app.src},{app.long},{app.counts}"}
    run = _kspark(["run", "tests.integration.secure_app:build", "--config", str(props)], env,
                  repo)
    assert run.returncode == 0, run.stdout + run.stderr
    _check_exact(app)
    run_pids = {json.loads(line)["pid"] for line in audit.read_text().splitlines()}
    assert len(run_pids) >= 2  # the driver and at least one Spark Python worker

    # the secret scan: the password, the key's material and the workers' interactive-query
    # tokens (announced in the control topic only) appear nowhere kspark or Spark wrote
    tokens = _query_tokens(secure_broker, app.app_id)
    assert tokens, "the workers announced no query endpoint"
    needles = [app.user["sasl.password"].encode(), key_line.encode(), *tokens]
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p not in (key, cert)]
    assert any(p.is_relative_to(events) for p in files), "no event log was written"
    assert any("checkpoint" in p.parts for p in files), "no checkpoint was written"
    assert any(".checkpoint" == p.name for p in files), "no store checkpoint was written"
    for path in files:
        data = path.read_bytes()
        for needle in needles:
            assert needle not in data, f"a secret is in {path}"
    # kspark reset deletes the application's consumer group, which needs DELETE on it: more
    # than an application needs, so a platform team's principal (here the super user) runs it
    admin_props = tmp_path / "admin.properties"
    admin_props.write_text("\n".join(
        [f"{k}={v}" for k, v in secure_broker.admin_conf.items() if k != "sasl.password"]
        + [f"sasl.password=${{file:{secure_broker.broker.admin_password_file}}}",
           f"state.dir={app.state}"]) + "\n")
    reset = _kspark(["reset", "--application-id", app.app_id, "--config", str(admin_props)],
                    env, repo, 120)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert "kspark reset: done" in reset.stdout

    # every Kafka client made by the run (driver, Spark workers) and by kspark reset
    clients = [json.loads(line) for line in audit.read_text().splitlines()]
    kinds = {c["kind"] for c in clients}
    assert {"consumer", "producer", "admin"} <= kinds, kinds
    assert len({c["pid"] for c in clients}) >= 3  # the driver, a Spark worker, kspark reset
    for c in clients:
        assert c["security.protocol"] == "SASL_SSL", c
        assert c["sasl.mechanism"] == "SCRAM-SHA-512", c
        assert {"sasl.username", "sasl.password", "ssl.ca.location"} <= set(c["keys"]), c
    assert all("ssl.key.pem" in c["keys"] for c in clients if c["pid"] in run_pids)

    written = (run.stdout + run.stderr + reset.stdout + reset.stderr).encode()
    for needle in needles:
        assert needle not in written


def test_kspark_run_start_failure_is_one_line_and_exit_2(secure_broker, tmp_path):
    app = App(secure_broker, tmp_path)
    props = app.properties(tmp_path / "app.properties", "wrong-password",
                           ["request.timeout.ms=10000"])
    repo = Path(__file__).resolve().parents[2]
    run = _kspark(["run", "tests.integration.secure_app:build", "--config", str(props)],
                  {"SECURE_APP_TOPICS": f"{app.src},{app.long},{app.counts}"}, repo, 120)
    assert run.returncode == 2, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("kspark: error:")]
    assert len(errors) == 1 and "authentication failed" in errors[0], run.stderr
    assert "Traceback" not in run.stderr and "wrong-password" not in run.stderr
