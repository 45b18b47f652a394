"""Java Kafka Streams' TopologyTestDriver as the reference: compile ``Reference.java`` once
against kafka-streams-test-utils (downloaded from Maven Central like the broker's jars) and
run batches of scenarios through one JVM."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from kspark._local.jars import kspark_home, streams_test_libs
from kspark._local.prereqs import java_binary

__all__ = ["run_java", "compiled"]

_SOURCE = Path(__file__).with_name("Reference.java")


def compiled(source: Path) -> str:
    """The classpath to run ``source`` (a Java file whose class is named as the file) with
    Kafka Streams 4.1.1's jars: compiled once per content into kspark's cache."""
    libs = streams_test_libs(quiet=True)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    classes = kspark_home() / "conformance" / f"{source.stem}-{digest}"
    if not (classes / f"{source.stem}.class").exists():
        classes.mkdir(parents=True, exist_ok=True)
        javac = shutil.which("javac") or str(Path(java_binary()).resolve().with_name("javac"))
        proc = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", f"{libs}/*",
                               str(source)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed on {source.name}:\n{proc.stderr}")
    return f"{classes}:{libs}/*"


def _classpath() -> str:
    return compiled(_SOURCE)


def run_java(scenarios: list[list[str]]) -> list[list[str]]:
    """Each scenario's answer from Java Kafka Streams, in one JVM."""
    text = "".join("\n".join(s) + "\nend\n" for s in scenarios)
    proc = subprocess.run([java_binary(), "-Xss4m", "-cp", _classpath(), "Reference"],
                          input=text, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"the Java reference failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    answers, cur = [], []
    for line in proc.stdout.splitlines():
        if line == "end":
            answers.append(cur)
            cur = []
        else:
            cur.append(line)
    if len(answers) != len(scenarios):
        raise RuntimeError(f"the Java reference answered {len(answers)} of {len(scenarios)} "
                           f"scenarios:\n{proc.stderr[-3000:]}")
    return answers
