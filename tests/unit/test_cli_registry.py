"""``kspark registry`` and LocalRegistry without a JVM: the parser, the status of a registry
that never ran, the download of its distribution (a stand-in ``download``), and start-up
failures (a stand-in ``java``) reported with the log."""

from __future__ import annotations

import io
import socket
import sys
import tarfile
import textwrap

import pytest

from kspark._local import registry as reg
from kspark._local.registry import LocalRegistry, RegistryError, registry_dist
from kspark._cli.main import build_parser, main
from kspark._local.download import REPOSITORY_ENV, DownloadError
from kspark.errors import PrerequisiteError


def test_the_registry_parser():
    args = build_parser().parse_args(["registry", "start"])
    assert (args.action, args.port, args.dir) == ("start", None, None)
    args = build_parser().parse_args(["registry", "status", "--port", "0", "--dir", "/tmp/r"])
    assert (args.action, args.port, str(args.dir)) == ("status", 0, "/tmp/r")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["registry", "restart"])


def test_status_and_stop_of_a_registry_that_never_ran(tmp_path, capsys):
    args = ["--dir", str(tmp_path / "registry")]
    assert main(["registry", "status", *args]) == 3
    assert "kspark registry: not running" in capsys.readouterr().out
    assert main(["registry", "stop", *args]) == 0
    assert "was not running" in capsys.readouterr().out
    assert not (tmp_path / "registry").exists()  # nothing written until it starts
    with pytest.raises(RegistryError, match="start it first"):
        LocalRegistry(tmp_path / "registry").url  # noqa: B018 - the property raises


def _script(path, body: str):
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def test_a_failed_download_is_reported_and_leaves_nothing(tmp_path, monkeypatch):
    def fail(artifact, directory, repo=None, progress=None):
        (directory / "partial").write_bytes(b"PK")
        raise DownloadError(f"{artifact}: {artifact.url(repo)} answered HTTP 404 Not Found")

    monkeypatch.setattr(reg, "download", fail)
    with pytest.raises(PrerequisiteError, match="apicurio-registry-app.*HTTP 404"):
        registry_dist(tmp_path / "home", quiet=True)
    assert list((tmp_path / "home").iterdir()) == []  # no half-fetched directory left


def test_the_distribution_is_fetched_and_extracted_once(tmp_path, monkeypatch):
    jar = f"apicurio-registry-app-{reg.APICURIO_VERSION}-runner.jar"
    calls = []

    def fake_download(artifact, directory, repo=None, progress=None):
        calls.append(artifact.url(repo))
        with tarfile.open(directory / artifact.file_name, "w:gz") as tar:
            for name in (jar, "lib/a.jar"):
                info = tarfile.TarInfo(name)
                info.size = 2
                tar.addfile(info, io.BytesIO(b"PK"))
        return directory / artifact.file_name

    monkeypatch.setattr(reg, "download", fake_download)
    monkeypatch.setenv("PATH", "/nonexistent")  # no Maven, no other tool
    monkeypatch.delenv(REPOSITORY_ENV, raising=False)  # Maven Central
    dist = registry_dist(tmp_path / "home", quiet=True)
    assert dist == tmp_path / "home" / f"apicurio-registry-{reg.APICURIO_VERSION}"
    assert {p.name for p in dist.iterdir()} == {".complete", jar, "lib"}
    assert registry_dist(tmp_path / "home", quiet=True) == dist
    v = reg.APICURIO_VERSION
    assert calls == [f"https://repo1.maven.org/maven2/io/apicurio/apicurio-registry-app/{v}/"
                     f"apicurio-registry-app-{v}-all.tar.gz"]  # once: the second call found it


@pytest.fixture
def fake_java(tmp_path, monkeypatch):
    """Point LocalRegistry at a stand-in ``java`` whose body the test gives."""
    monkeypatch.setattr(reg, "registry_dist", lambda *a, **k: tmp_path)

    def make(body: str):
        java = _script(tmp_path / "java", body)
        monkeypatch.setattr(reg, "java_binary", lambda: str(java))
    return make


def test_the_default_port_is_confluents_or_a_free_one_if_taken():
    from kspark._cli.registry import DEFAULT_PORT, _port
    from kspark._local.broker_process import port_taken

    assert _port(0) is None and _port(9999) == 9999  # 0: a free one; a port given is kept
    assert _port(None) == (None if port_taken(DEFAULT_PORT) else DEFAULT_PORT)
    with socket.socket() as s:  # hold 8081 if nothing does: the default moves to a free port
        try:
            s.bind(("127.0.0.1", DEFAULT_PORT))
            s.listen()
        except OSError:
            pass  # taken already
        assert _port(None) is None


def test_a_taken_port_is_refused_with_what_to_do(tmp_path, fake_java):
    fake_java("raise SystemExit(1)\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = LocalRegistry(tmp_path / "registry", port=s.getsockname()[1])
        with pytest.raises(RegistryError, match="already in use.*--port 0"):
            r.start()


def test_a_registry_that_exits_while_starting_is_reported_with_its_log(tmp_path, fake_java):
    fake_java("""
        print("ERROR Port 1 seems to be in use by another process. Quarkus may already be "
              "running", flush=True)
        raise SystemExit(1)
    """)
    r = LocalRegistry(tmp_path / "registry")  # a free port: taken meanwhile, so tried anew
    with pytest.raises(RegistryError, match="(?s)exited with code 1.*registry.log.*in use"):
        r.start(timeout_s=20)
    assert r.log_file.read_text().count("seems to be in use") == 3  # three ports tried
    assert not r.status().running


def test_a_registry_that_never_answers_is_stopped_and_reported(tmp_path, fake_java):
    fake_java("""
        import time
        print("starting, slowly", flush=True)
        time.sleep(60)
    """)
    r = LocalRegistry(tmp_path / "registry")
    with pytest.raises(RegistryError, match="(?s)did not answer GET .*/subjects within 1s.*"
                                            "starting, slowly"):
        r.start(timeout_s=1)
    assert not r.status().running
    assert not (tmp_path / "registry" / "registry.pid").exists()

