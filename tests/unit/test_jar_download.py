"""Kafka's jars without Maven: the downloader against a local HTTP server (a good checksum
installs the file; a bad one, a missing file or an interrupted download installs nothing),
and the pinned jar lists against the POMs they were resolved from."""

from __future__ import annotations

import hashlib
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

import pytest

from kspark._local import download, jars
from kspark._local.download import Artifact, DownloadError

JAR = Artifact.parse("org.example.fake:fake-lib:1.2")
BODY = b"PK\x03\x04 a fake jar " * 1000
GOOD_SHA1 = hashlib.sha1(BODY).hexdigest()
BAD_SHA1 = "0" * 40


class Repository:
    """What the fake repository serves: path -> body, or path -> ("cut", body) for a
    response that promises the whole body and closes after half of it."""

    def __init__(self) -> None:
        self.files: dict[str, object] = {}
        self.requests: list[str] = []

    def serve(self, artifact: Artifact, body: bytes, sha1: str, cut: bool = False) -> None:
        path = "/maven2/" + artifact.url("")[1:]
        self.files[path] = ("cut", body) if cut else body
        self.files[path + ".sha1"] = f"{sha1}  {artifact.file_name}\n".encode()


@pytest.fixture
def repo(monkeypatch):
    """A Maven-layout repository on a loopback port, set as ``$KSPARK_MAVEN_REPOSITORY``."""
    served = Repository()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            served.requests.append(self.path)
            found = served.files.get(self.path)
            if found is None:
                self.send_error(404)
                return
            body = found[1] if isinstance(found, tuple) else found
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if isinstance(found, tuple) else body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}/maven2"
    monkeypatch.setenv(download.REPOSITORY_ENV, served.url)
    monkeypatch.setattr(download, "RETRY_DELAYS_S", (0.0,))
    yield served
    server.shutdown()
    server.server_close()


def test_a_good_checksum_installs_the_file_and_says_its_size(repo, tmp_path):
    repo.serve(JAR, BODY, GOOD_SHA1)
    lines = []
    path = download.download(JAR, tmp_path, progress=lines.append)
    assert path == tmp_path / "fake-lib-1.2.jar"
    assert path.read_bytes() == BODY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-lib-1.2.jar"]
    assert lines == ["fake-lib-1.2.jar (16.0 kB)"]


def test_a_bad_checksum_names_both_sums_and_installs_nothing(repo, tmp_path):
    repo.serve(JAR, BODY, BAD_SHA1)
    (tmp_path / JAR.file_name).write_bytes(b"the previous copy")
    with pytest.raises(DownloadError) as e:
        download.download(JAR, tmp_path)
    message = str(e.value)
    for part in (str(JAR), JAR.url(repo.url), GOOD_SHA1, BAD_SHA1):
        assert part in message
    assert [p.name for p in tmp_path.iterdir()] == [JAR.file_name]  # no .part left ...
    assert (tmp_path / JAR.file_name).read_bytes() == b"the previous copy"  # ... nor replaced


def test_a_download_cut_short_is_retried_then_reported_and_installs_nothing(repo, tmp_path):
    repo.serve(JAR, BODY, GOOD_SHA1, cut=True)
    with pytest.raises(DownloadError, match="closed after 8000 of 16000 bytes"):
        download.download(JAR, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert repo.requests.count("/maven2/" + JAR.url("")[1:]) == 2  # one retry


def test_an_interrupted_download_installs_nothing(repo, tmp_path):
    repo.serve(JAR, BODY, GOOD_SHA1)

    def interrupt(line):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        download.download(JAR, tmp_path, progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_artifact_is_named_and_not_retried(repo, tmp_path):
    with pytest.raises(DownloadError, match=r"org\.example\.fake:fake-lib:1\.2: .*HTTP 404"):
        download.download(JAR, tmp_path)
    assert len(repo.requests) == 1


def test_kafka_libs_downloads_the_pinned_jars_into_place_once(repo, tmp_path, monkeypatch,
                                                              capsys):
    other = Artifact.parse("org.example.fake:other:3")
    repo.serve(JAR, BODY, GOOD_SHA1)
    repo.serve(other, b"other", hashlib.sha1(b"other").hexdigest())
    monkeypatch.setattr(jars, "BROKER_JARS", (JAR, other))
    monkeypatch.setenv("PATH", "/nonexistent")  # no Maven
    libs = jars.kafka_libs(home=tmp_path)
    assert sorted(p.name for p in libs.iterdir()) == [".complete", "fake-lib-1.2.jar",
                                                      "other-3.jar"]
    out = capsys.readouterr().out
    assert "kspark:   fake-lib-1.2.jar (16.0 kB)\nkspark:   other-3.jar (5 B)\n" in out
    assert "kspark: 2 jars, 16.0 kB, in" in out
    assert jars.kafka_libs(home=tmp_path) == libs
    assert len(repo.requests) == 4  # each jar and its .sha1, once


def test_one_failed_jar_leaves_no_libs_directory(repo, tmp_path, monkeypatch):
    repo.serve(JAR, BODY, GOOD_SHA1)
    monkeypatch.setattr(jars, "BROKER_JARS", (JAR, Artifact.parse("org.example.fake:gone:1")))
    with pytest.raises(DownloadError, match="gone-1.jar.sha1 answered HTTP 404"):
        jars.kafka_libs(home=tmp_path, quiet=True)
    assert list((tmp_path / f"kafka-{jars.KAFKA_VERSION}").iterdir()) == []


def test_coordinates_that_are_not_maven_coordinates_are_refused():
    with pytest.raises(ValueError, match="not Maven coordinates"):
        Artifact.parse("org.apache.kafka:kafka-clients")
    assert str(Artifact.parse("io.apicurio:app:3:tar.gz:all")) == "io.apicurio:app:3:tar.gz:all"


@pytest.mark.parametrize("pom, pinned", [("broker-pom.xml", jars.BROKER_JARS),
                                         ("streams-pom.xml", jars.STREAMS_JARS)])
def test_the_pinned_lists_hold_the_poms_dependencies(pom, pinned):
    """The lists were resolved from the POMs: each direct dependency is there at its version,
    Kafka's own jars at ``KAFKA_VERSION``, with no jar twice."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.fromstring(resources.files("kspark._local").joinpath(pom).read_text())
    assert root.findtext("m:properties/m:kafka.version", namespaces=ns) == jars.KAFKA_VERSION
    direct = {Artifact(d.findtext("m:groupId", namespaces=ns),
                       d.findtext("m:artifactId", namespaces=ns),
                       d.findtext("m:version", namespaces=ns).replace("${kafka.version}",
                                                                      jars.KAFKA_VERSION))
              for d in root.iterfind("m:dependencies/m:dependency", ns)}
    assert direct <= set(pinned)
    assert len({a.file_name for a in pinned}) == len(pinned)
    assert {a.version for a in pinned if a.group == "org.apache.kafka"} == {jars.KAFKA_VERSION}
