"""The wheel works outside the repository (issue 57, item 7): built with pip, installed into a
fresh virtual environment in a temporary directory, it ships its package data and
``py.typed``, its ``kspark`` command runs, and the README's quick start runs with it, from a
directory outside the repository, against the session's broker.

The new environment installs the wheel alone (``--no-deps``) and sees the dependencies of
this one (pyspark, confluent-kafka, ...) through a ``.pth`` file naming this interpreter's
site-packages, so nothing is downloaded. Python reads ``.pth`` files only in a site
directory itself, not in one a ``.pth`` names, so this environment's editable install of
kspark (a ``.pth`` naming the repository's ``src``) is not seen: ``import kspark`` must find
the wheel's copy.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.integration.test_readme_quick_start import TIMEOUT_S, quick_start_blocks

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DATA = ["py.typed", "_local/broker-pom.xml", "_local/streams-pom.xml",
                "_local/log4j2.yaml", "demo/pageviews.jsonl", "_spark/log4j2.properties",
                "_spark/jvm/LocatedRDD.java"]


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A new virtual environment, outside the repository, with the wheel installed."""
    work = tmp_path_factory.mktemp("wheel-install")
    assert REPO not in work.parents
    source = work / "source"  # a copy, so the build leaves no build/ or egg-info in the tree
    shutil.copytree(REPO / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"),
          str(source)])
    (wheel,) = (work / "dist").glob("kspark-*.whl")
    env_dir = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    python = env_dir / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "-q", str(wheel)])
    site_packages = Path(_run([str(python), "-c", "import sysconfig; "
                               "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site_packages / "project-dependencies.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n")
    return env_dir


def _env(venv: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
                VIRTUAL_ENV=str(venv), **extra)


def test_the_installed_package_is_the_wheels_with_its_data(venv, tmp_path):
    code = ("import importlib.resources as r, kspark, _kspark_zipless; "
            "print(kspark.__file__); print(_kspark_zipless.__file__); "
            f"print([p for p in {PACKAGE_DATA!r} if not r.files('kspark').joinpath(p).is_file()])")
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path,
               env=_env(venv)).stdout.splitlines()
    assert all(Path(p).is_relative_to(venv) for p in out[:2]), out  # not the repository's src
    assert out[2] == "[]"  # no package data missing
    help_text = _run([str(venv / "bin" / "kspark"), "--help"], cwd=tmp_path,
                     env=_env(venv)).stdout
    assert "broker" in help_text and "topics" in help_text


def test_the_readme_quick_start_runs_from_the_wheel(venv, broker, tmp_path):
    uid = uuid.uuid4().hex[:6]  # the session's broker: names unique in the session
    names = {"127.0.0.1:9092": broker, "long-reads": f"wheel-long-reads-{uid}",
             "pageviews": f"wheel-pageviews-{uid}"}
    env = _env(venv, KSPARK_BOOTSTRAP_SERVERS=broker, TMPDIR=str(tmp_path))
    printed = []
    for tag, lang, text in quick_start_blocks():
        for old, new in names.items():
            text = text.replace(old, new)
        if tag == ": output":
            expected = text
        elif lang == "python":
            (tmp_path / re.match(r"# (\S+\.py)\n", text)[1]).write_text(text)
        elif not tag:
            printed.append(_run(["bash", "-euo", "pipefail", "-c", text], cwd=tmp_path,
                                env=env).stdout)
    assert printed[-1] == expected
