"""Artifacts from a Maven repository without Maven: one HTTP GET per file, checked against
the SHA-1 the repository publishes beside it (Maven Central publishes a ``.sha1`` for every
artifact), then moved into place with an atomic rename. A download that fails or is
interrupted leaves nothing under the artifact's name, only a ``.part`` file that is removed.

The repository is Maven Central unless ``$KSPARK_MAVEN_REPOSITORY`` names another (a mirror
with Maven Central's layout); ``urllib`` honours ``https_proxy``.

Coordinates as Maven writes them, and where the file lives::

    >>> a = Artifact.parse("org.apache.kafka:kafka-clients:4.1.1")
    >>> a.file_name
    'kafka-clients-4.1.1.jar'
    >>> a.url("https://repo1.maven.org/maven2")
    'https://repo1.maven.org/maven2/org/apache/kafka/kafka-clients/4.1.1/kafka-clients-4.1.1.jar'
    >>> Artifact.parse("io.apicurio:apicurio-registry-app:3.0.9:tar.gz:all").file_name
    'apicurio-registry-app-3.0.9-all.tar.gz'
    >>> human_size(6_543_210)
    '6.5 MB'
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kspark.errors import PrerequisiteError

__all__ = ["MAVEN_CENTRAL", "REPOSITORY_ENV", "Artifact", "DownloadError", "download",
           "download_all", "human_size", "print_progress", "repository"]

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
REPOSITORY_ENV = "KSPARK_MAVEN_REPOSITORY"
RETRY_DELAYS_S = (1.0, 4.0)  # a transient network error is retried twice, then reported
TIMEOUT_S = 60.0  # per connect and per read, not for the whole file
_CHUNK = 1 << 16
_SHA1 = re.compile(r"[0-9a-f]{40}")
_WHERE = (f"check that the repository is reachable (set ${REPOSITORY_ENV} to a mirror of "
          "Maven Central if it is not)")


class DownloadError(PrerequisiteError):
    """An artifact could not be downloaded, or its content does not match its checksum; the
    message names the artifact and the URL."""


@dataclass(frozen=True)
class Artifact:
    """A file in a Maven repository: ``group:name:version`` (a jar), or with an extension
    and a classifier, ``group:name:version:extension:classifier``."""

    group: str
    name: str
    version: str
    extension: str = "jar"
    classifier: str = ""

    @classmethod
    def parse(cls, coordinates: str) -> Artifact:
        """The artifact of ``group:name:version[:extension[:classifier]]``."""
        parts = coordinates.split(":")
        if not 3 <= len(parts) <= 5 or not all(parts):
            raise ValueError(f"not Maven coordinates (group:name:version[:extension"
                             f"[:classifier]]): {coordinates!r}")
        return cls(*parts)

    @property
    def file_name(self) -> str:
        """The file's name in the repository, and once downloaded."""
        classifier = f"-{self.classifier}" if self.classifier else ""
        return f"{self.name}-{self.version}{classifier}.{self.extension}"

    def url(self, repository: str) -> str:
        """Where the file is in a repository with Maven's layout."""
        return (f"{repository.rstrip('/')}/{self.group.replace('.', '/')}/{self.name}/"
                f"{self.version}/{self.file_name}")

    def __str__(self) -> str:
        tail = f":{self.extension}:{self.classifier}" if self.classifier else (
            f":{self.extension}" if self.extension != "jar" else "")
        return f"{self.group}:{self.name}:{self.version}{tail}"


def repository() -> str:
    """The repository to download from: ``$KSPARK_MAVEN_REPOSITORY``, else Maven Central."""
    return os.environ.get(REPOSITORY_ENV) or MAVEN_CENTRAL


def human_size(n: int) -> str:
    """A byte count as people read it (decimal units)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def print_progress(line: str) -> None:
    """Print a progress line of a download (the ``progress`` callback of the CLI's fetches)."""
    print(f"kspark:   {line}", flush=True)


def download_all(artifacts: Iterable[Artifact], directory: Path, repo: str | None = None,
                 progress: Callable[[str], None] | None = None) -> list[Path]:
    """Download each artifact into ``directory`` (see :func:`download`), in order."""
    return [download(a, directory, repo, progress) for a in artifacts]


def download(artifact: Artifact, directory: Path, repo: str | None = None,
             progress: Callable[[str], None] | None = None) -> Path:
    """``directory/<file name>``: the artifact downloaded from ``repo`` (default:
    :func:`repository`) and checked against the repository's ``.sha1`` of it.

    ``progress`` is called with a line naming the file and its size once the download
    starts. A network failure is retried (``RETRY_DELAYS_S``); a missing file, a checksum
    mismatch or a failure that persists raises :class:`DownloadError`, leaving nothing
    behind. An existing file of the same name is replaced only by a verified download.
    """
    url = artifact.url(repo or repository())
    expected = _with_retries(artifact, url + ".sha1", lambda: _published_sha1(url + ".sha1"))
    target = directory / artifact.file_name
    part = directory / f".{artifact.file_name}.part"
    try:
        actual = _with_retries(artifact, url, lambda: _fetch(url, part, artifact, progress))
        if actual != expected:
            raise DownloadError(
                f"{artifact}: the file downloaded from {url} has SHA-1 {actual}, but the "
                f"repository's {url}.sha1 says {expected}; nothing was installed. Retry; if "
                f"it persists, the repository (or a proxy) serves a corrupt file.")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target


def _published_sha1(url: str) -> str:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        text = response.read(4096).decode("ascii", "replace").strip().lower()
    found = text.split()[0] if text else ""
    if not _SHA1.fullmatch(found):
        raise DownloadError(f"{url} holds no SHA-1 checksum (it starts {text[:60]!r})")
    return found


def _fetch(url: str, part: Path, artifact: Artifact,
           progress: Callable[[str], None] | None) -> str:
    """Stream ``url`` into ``part``; its SHA-1. A body shorter than its Content-Length (a
    connection closed early, which ``read(n)`` does not report) raises ConnectionError."""
    sha1 = hashlib.sha1()  # the checksum Maven Central publishes for every file
    received = 0
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, part.open("wb") as out:
        header = response.headers.get("Content-Length")
        length = int(header) if header and header.isdigit() else None
        if progress is not None:
            progress(f"{artifact.file_name} "
                     f"({'size unknown' if length is None else human_size(length)})")
        while chunk := response.read(_CHUNK):
            sha1.update(chunk)
            out.write(chunk)
            received += len(chunk)
    if length is not None and received != length:
        raise ConnectionError(f"the connection closed after {received} of {length} bytes")
    return sha1.hexdigest()


def _with_retries(artifact: Artifact, url: str, attempt: Callable[[], str]) -> str:
    """``attempt()``, again after each of ``RETRY_DELAYS_S`` while it fails with a network
    error; a missing file (HTTP 4xx) is not retried. Failures become a DownloadError."""
    for delay in (*RETRY_DELAYS_S, None):
        try:
            return attempt()
        except urllib.error.HTTPError as e:
            if e.code < 500 or delay is None:
                raise DownloadError(f"{artifact}: {url} answered HTTP {e.code} {e.reason}; "
                                    f"{_WHERE}") from e
        except (OSError, http.client.HTTPException) as e:
            if delay is None:
                raise DownloadError(f"{artifact}: downloading {url} failed "
                                    f"({type(e).__name__}: {e}); {_WHERE}") from e
        time.sleep(delay)
    raise AssertionError("unreachable")  # the last attempt returns or raises

