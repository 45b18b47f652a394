"""kspark on Spark Connect (issue 43): a Connect server started out of process from the
PySpark package (``LocalConnectServer``), the application a Connect client of it.

1. The Java-referenced conformance sample agrees on Connect, in both execution modes.
2. Exactly-once on Connect, as an incremental batch run (``autostop.at=eol``) whose tasks
   fail right after committing batch 1: the retried tasks recognise the batch as committed
   (the batch identity reaches the stages explicitly: a Connect server runs a
   ``foreachBatch``'s jobs without the streaming query's local properties) and the output is
   exact; the client process never starts a JVM.
3. The client SIGKILLed while a task holds a batch Spark has not committed: a new client
   resumes exactly (the orphaned query on the server is stopped by the new run).
4. The server SIGKILLed mid-run: the client fails with an error naming the Connect server
   within a bound (no hang); started again, the application resumes exactly.
5. Real-time mode on Connect: exact output.
6. The Spark sinks (Delta, Parquet, foreach_batch) and read_topic on Connect, both modes.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from kspark._local.broker import free_port
from kspark._spark.connect_server import LocalConnectServer
from tests.integration import soak

pytestmark = pytest.mark.integration
KEYS = 20
LOST_BOUND_S = 120  # the client's bounded retries (about 17 s per call) and some slack
COUNT = 5  # conformance scenarios per mode (the full samples run on the classic session)


def _topics(admin, topic_name, base: str) -> str:
    return soak.eos_topics(admin, topic_name, base)


def _assert_exact(broker: str, src: str, app_id: str, n: int) -> None:
    soak.assert_exact(broker, src, app_id, n, KEYS)


def _java_processes(pid: int) -> list[int]:
    """The processes below ``pid`` that run a JVM."""
    out = []
    for child in soak.descendants(pid):
        try:
            exe = os.readlink(f"/proc/{child}/exe")
        except OSError:
            continue
        if os.path.basename(exe) == "java":
            out.append(child)
    return out


@pytest.mark.timeout(900)
def test_conformance_sample_agrees_with_java_on_connect(execution_mode_on_connect, broker,
                                                        connect_server, tmp_path):
    mode = execution_mode_on_connect
    seed = 0 if mode == "micro_batch" else 15  # as test_spark_sample.py's samples
    code, lines = soak.finish(soak.start_app(
        [sys.executable, "-m", "tests.integration.connect_conformance", broker,
         connect_server.url, mode, str(COUNT), str(seed), str(tmp_path / "state")]))
    out = "".join(lines)
    assert code == 0, out[-4000:]
    assert "disagreements 0" in out, out[-6000:]
    produced = int(out.split("output ", 1)[1].split()[0])
    assert produced > 20, "the sample must produce output"


def test_exactly_once_batch_run_replays_a_committed_batch_on_connect(
        broker, admin, topic_name, connect_server, tmp_path):
    src = _topics(admin, topic_name, "connect-eos")
    n = 4000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"connect-eos-{src}"
    log_before = connect_server.log_file.read_text(errors="replace")
    cmd = soak.app_command(broker, src, app_id, str(tmp_path / "state"), "--remote",
                           connect_server.url, "--max-offsets", "1000",
                           "--fail-after-commit", "0_1:1,1_0:1")
    proc = soak.start_app(cmd)
    jvms = []
    while proc.poll() is None and not jvms:
        jvms = _java_processes(proc.pid)
        time.sleep(0.5)
    code, lines = soak.finish(proc)
    out = "".join(lines)
    assert code == 0, out[-4000:]
    assert not jvms and "client jvm: none" in out, "a Connect client starts no JVM"
    server_log = connect_server.log_file.read_text(errors="replace")[len(log_before):]
    assert "injected failure: task 0_1 after committing batch 1" in server_log
    assert "task 0_1: batch" in server_log and "already committed" in server_log
    _assert_exact(broker, src, app_id, n)


def test_client_killed_mid_batch_resumes_exactly_on_connect(broker, admin, topic_name,
                                                             connect_server, tmp_path):
    src = _topics(admin, topic_name, "connect-client")
    n = 6000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"connect-client-{src}"
    cmd = soak.app_command(broker, src, app_id, str(tmp_path / "state"), "--remote",
                           connect_server.url, "--max-offsets", "1500", "--slow-ms", "1")
    hold = tmp_path / "hold"
    hold.mkdir()
    proc = soak.start_app([*cmd, "--hold-after-commit", str(hold)])
    try:
        deadline = time.monotonic() + 300
        while not (hold / "held").exists():
            assert proc.poll() is None, f"the app ended ({proc.returncode}) before a task held"
            assert time.monotonic() < deadline, "no task committed a batch >= 1 in time"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)  # a task committed a batch Spark has not
        proc.wait(60)
    finally:
        (hold / "release").touch()  # the orphaned run on the server goes on, then is stopped
        if proc.poll() is None:
            proc.kill()
    code, lines = soak.finish(soak.start_app(cmd))
    assert code == 0, "".join(lines)[-4000:]
    _assert_exact(broker, src, app_id, n)


# the suite's time (76 s): in the full matrix; a lost server's error path is unit-tested
# (tests/unit/test_connect_glue.py, test_restarting_query.py), the client SIGKILL runs always
@pytest.mark.full_matrix
def test_server_killed_fails_the_client_then_resumes_exactly(broker, admin, topic_name,
                                                             tmp_path):
    src = _topics(admin, topic_name, "connect-server")
    n = 3000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"connect-server-{src}"
    root = str(soak.ROOT)
    server = LocalConnectServer(tmp_path / "connect", port=free_port(), master="local[2]",
                                env={"PYTHONPATH": root}).start()
    try:
        cmd = soak.app_command(broker, src, app_id, str(tmp_path / "state"), "--remote",
                               server.url, "--max-offsets", "1000", "--slow-ms", "1")
        proc = soak.start_app(cmd)
        lines = []
        for line in proc.stdout:  # the first micro-batch completed
            lines.append(line)
            if line.startswith("batches ") and line.split()[1] != "0":
                break
        server.kill()
        killed_at = time.monotonic()
        watchdog = threading.Timer(LOST_BOUND_S, proc.kill)
        watchdog.start()
        code, rest = soak.finish(proc)
        watchdog.cancel()
        took = time.monotonic() - killed_at
        out = "".join(lines + rest)
        assert took < LOST_BOUND_S, f"the client hung for {took:.0f} s:\n{out[-3000:]}"
        assert code != 0 and "Spark Connect server did not answer" in out, out[-4000:]
        server.start()
        code, lines = soak.finish(soak.start_app(cmd))
        assert code == 0, "".join(lines)[-4000:]
    finally:
        server.stop()
    _assert_exact(broker, src, app_id, n)


def test_real_time_mode_is_exact_on_connect(broker, admin, topic_name, connect_server,
                                            tmp_path):
    src = _topics(admin, topic_name, "connect-rt")
    n = 3000
    soak.produce(broker, src, 0, n, KEYS)
    app_id = f"connect-rt-{src}"
    cmd = soak.app_command(broker, src, app_id, str(tmp_path / "state"), "--remote",
                           connect_server.url, "--mode", "real_time")
    code, lines = soak.finish(soak.start_app(cmd))
    assert code == 0, "".join(lines)[-4000:]
    _assert_exact(broker, src, app_id, n)


def test_a_setting_only_the_server_can_take_is_refused_by_name(connect_server):
    code, lines = soak.finish(soak.start_app([sys.executable, "-c", (
        "from kspark import spark_session\n"
        f"spark_session({{'spark.remote': {connect_server.url!r}, "
        "'spark.executor.memory': '3g'})")]))
    out = "".join(lines)
    assert code != 0 and ("ConfigError: spark.executor.memory cannot be set from a Spark "
                          "Connect client") in out, out[-3000:]


@pytest.mark.timeout(600)
def test_spark_sinks_and_read_topic_on_connect(broker, admin, topic_name, connect_server,
                                                tmp_path):
    """Issue 44 on Connect: the Delta, Parquet and foreach_batch sinks of a batch run and
    ``read_topic`` give the TopologyTestDriver's rows in both modes, the client starts no
    JVM (the Delta writer and the function run in the server's Python workers)."""
    from tests.integration.test_spark_sinks import produce, records

    src = topic_name("connect-sinks")
    admin.create_topics({src: 2})
    produce(broker, src, records(600))
    code, lines = soak.finish(soak.start_app(
        [sys.executable, "-m", "tests.integration.connect_sinks", broker, connect_server.url,
         src, str(tmp_path)]))
    out = "".join(lines)
    assert code == 0, out[-4000:]
    assert "micro_batch: sinks agree (600 rows, sink_rows 1800)" in out, out[-4000:]
    assert "real_time: sinks agree (600 rows, sink_rows 1800)" in out, out[-4000:]
    assert "client jvm: none" in out, out[-2000:]
