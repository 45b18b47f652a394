"""The README's quick start runs as shown and prints what it shows (issue 40).

Its blocks marked ``<!-- quick-start -->`` run in order in a fresh directory against the
session's broker: the shell blocks with bash (``kspark`` and ``python`` from this
environment), the Python block saved under the name its first line gives. The set-up block
(``make setup``, ``kspark broker start``) is what the session did already. Three things
differ from a reader's run, all by substitution in the text: the broker's address
(``KSPARK_BOOTSTRAP_SERVERS`` for the CLI, the address in the Python), the topic and
application names (unique in the session) and ``TMPDIR`` (the default ``state.dir``).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import uuid

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"<!-- quick-start(?P<tag>: \w+)? -->\n```(?P<lang>\w*)\n(?P<body>.*?)```",
                   re.S)
TIMEOUT_S = 150  # bounds each block; the whole test takes well under a minute on an idle host


def quick_start_blocks() -> list[tuple[str, str, str]]:
    """(tag, language, text) of the README's quick-start blocks, in order."""
    return [(m["tag"] or "", m["lang"], m["body"]) for m in BLOCK.finditer(README.read_text())]


def test_the_quick_start_blocks_are_marked():
    blocks = quick_start_blocks()
    assert [(tag, lang) for tag, lang, _ in blocks] == [
        (": setup", "bash"), ("", "bash"), ("", "python"), ("", "bash"), (": output", "")]
    assert "kspark broker start" in blocks[0][2]


def test_the_readme_quick_start_runs_as_shown(broker, tmp_path):
    uid = uuid.uuid4().hex[:6]
    names = {"127.0.0.1:9092": broker, "long-reads": f"long-reads-{uid}",
             "pageviews": f"pageviews-{uid}"}
    env = dict(os.environ, KSPARK_BOOTSTRAP_SERVERS=broker, TMPDIR=str(tmp_path),
               PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    printed = []
    for tag, lang, text in quick_start_blocks():
        for old, new in names.items():
            text = text.replace(old, new)
        if tag == ": output":
            expected = text
        elif lang == "python":
            filename = re.match(r"# (\S+\.py)\n", text)[1]
            (tmp_path / filename).write_text(text)
        elif not tag:
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=TIMEOUT_S)
            assert run.returncode == 0, f"{text}\nfailed:\n{run.stdout}\n{run.stderr[-3000:]}"
            printed.append(run.stdout)
    assert printed[-1] == expected
