"""docs/config.md against the config declarations (kspark.config.CONFIG_KEYS): every declared
key documented with its default and the execution modes it applies to, and no documented key
that kspark does not declare."""

import re
import tempfile
from pathlib import Path

from kspark.config import BOTH, CONFIG_KEYS, _user

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"

# Keys declared with default None whose value is worked out when it is used: what the
# documentation says it then is.
DERIVED = {
    "checkpoint.location": "<state.dir>/<application.id>/checkpoint",
    "default.timestamp.extractor": "FailOnInvalidTimestamp",
}


def _table() -> dict[str, tuple[str, str]]:
    """{key: (default cell, modes cell)} of the first table of docs/config.md
    (| key | default | modes | meaning |)."""
    lines = DOC.read_text().splitlines()
    start = lines.index("| key | default | modes | meaning |") + 2
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        keys, default, modes = (c.strip() for c in line.strip("|").split("|")[:3])
        for key in re.findall(r"`([^`]+)`", keys):
            assert key not in rows, f"{key!r} is documented twice"
            rows[key] = default, modes
    return rows


def _documented() -> dict[str, str]:
    """{key: default cell}."""
    return {k: default for k, (default, _) in _table().items()}


def _expected(key) -> str:
    if key.required:
        return "required"
    if key.default is None:
        return f"`{DERIVED[key.name]}`" if key.name in DERIVED else "none"
    if key.name == "state.dir":
        return "`<tmp>/kspark-<user>`"
    return f"`{key.default}`"


def test_the_state_dir_default_is_what_the_docs_say():
    expected = Path(tempfile.gettempdir()) / f"kspark-{_user()}"
    assert CONFIG_KEYS["state.dir"].default == str(expected)


def test_every_declared_key_is_documented_with_its_default():
    documented = _documented()
    missing = sorted(set(CONFIG_KEYS) - set(documented))
    assert not missing, f"declared in kspark/config.py, missing from docs/config.md: {missing}"
    wrong = {name: (documented[name], _expected(key)) for name, key in CONFIG_KEYS.items()
             if documented[name] != _expected(key)}
    assert not wrong, f"docs/config.md's default differs (documented, declared): {wrong}"


def test_no_documented_key_is_unknown_to_kspark():
    unknown = sorted(set(_documented()) - set(CONFIG_KEYS))
    assert not unknown, f"documented in docs/config.md, not declared: {unknown}"


def test_every_declared_key_is_documented_with_the_modes_it_applies_to():
    def expected(key) -> str:
        return "both" if key.modes == BOTH else " ".join(f"`{m}`" for m in key.modes or ())

    documented = _table()
    wrong = {name: (documented[name][1], expected(key)) for name, key in CONFIG_KEYS.items()
             if name in documented and documented[name][1] != expected(key)}
    assert not wrong, f"docs/config.md's modes differ (documented, declared): {wrong}"


def test_every_kafka_streams_key_kspark_refuses_is_in_the_docs_table():
    from kspark._config_java import JAVA_KEYS

    lines = DOC.read_text().splitlines()
    start = lines.index("| Kafka Streams key | in kspark |") + 2
    documented = set()
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        documented.update(re.findall(r"`([^`]+)`", line.strip("|").split("|")[0]))
    assert documented == set(JAVA_KEYS), "docs/config.md's table of Kafka Streams keys differs"
