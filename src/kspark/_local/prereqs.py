"""The check for the one tool the local broker, the registry and Spark need: Java 17+.

Kafka's jars are downloaded by kspark itself (:mod:`kspark._local.download`): no Maven.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from kspark.errors import PrerequisiteError

__all__ = ["java_binary"]


def java_binary() -> str:
    """Path of a ``java`` of version 17 or newer, else a PrerequisiteError saying what to
    install."""
    java = shutil.which("java")
    if java is None:
        raise PrerequisiteError(
            "Java is not on PATH: kspark's broker and Spark need Java 17. "
            "Install it (for example 'apt-get install openjdk-17-jre-headless') and retry."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(m.group(1)) if m else 0
    if major == 1 and m and m.group(2):
        major = int(m.group(2))
    if major < 17:
        raise PrerequisiteError(
            f"{java} is Java {major or 'of unknown version'}; kspark needs Java 17 or newer. "
            "Install Java 17 and put it first on PATH (or set JAVA_HOME)."
        )
    return java

