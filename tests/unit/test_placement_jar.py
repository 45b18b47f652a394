"""The placement shim's jar (``_spark/located.py``): code loaded into Spark is compiled into a
directory only this user can write and loaded only while it matches its recorded SHA-256."""

import hashlib
import logging
import os

import pytest

from kspark._spark.located import placement_jar, private_dir
from kspark.errors import PrerequisiteError


def test_the_jar_is_compiled_into_a_private_directory_with_its_digest(tmp_path):
    jar = placement_jar(tmp_path)
    assert oct(jar.parent.stat().st_mode & 0o777) == "0o700"
    recorded = jar.with_suffix(".jar.sha256").read_text().strip()
    assert recorded == hashlib.sha256(jar.read_bytes()).hexdigest()
    assert placement_jar(tmp_path) == jar  # found again, not compiled again


def test_a_jar_that_no_longer_matches_its_digest_is_compiled_again(tmp_path, caplog):
    jar = placement_jar(tmp_path)
    jar.write_bytes(b"PK not the shim")
    with caplog.at_level(logging.WARNING, logger="kspark"):
        again = placement_jar(tmp_path).read_bytes()
    assert again != b"PK not the shim" and again.startswith(b"PK\x03\x04")
    recorded = jar.with_suffix(".jar.sha256").read_text().strip()
    assert recorded == hashlib.sha256(again).hexdigest()
    assert "does not match its recorded SHA-256" in caplog.text


def test_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "jvm"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(PrerequisiteError, match=r"others can write to it .*chmod go-w"):
        private_dir(shared)
