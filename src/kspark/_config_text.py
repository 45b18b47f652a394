"""Configuration as text: Java-style properties files and Kafka's ``${env:}``/``${file:}``
references (its config providers), read once when a :class:`~kspark.StreamsConfig` is made."""

from __future__ import annotations

import os
import re
from typing import Any

from kspark.errors import ConfigError

__all__ = ["parse_properties", "resolve_reference"]


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines, as a Java properties file without escapes
    (``#`` and ``!`` start comments): a config file, or one ``${file:PATH:KEY}`` reads.

    >>> parse_properties("# job\\napplication.id = hourly\\nmax.offsets.per.trigger=5000\\n")
    {'application.id': 'hourly', 'max.offsets.per.trigger': '5000'}
    """
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ConfigError(f"line {n} of the config file is not 'key=value': {raw!r}")
        out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


_REFERENCE = re.compile(r"\$\{(env|file):([^}]*)\}")


def resolve_reference(name: str, value: Any) -> Any:
    """``${env:NAME}`` → the environment variable; ``${file:PATH}`` → the file's content
    (stripped); ``${file:PATH:KEY}`` → KEY of a properties file, as Kafka's config providers.

    >>> import os; os.environ["KSPARK_DOC_PW"] = "pw"
    >>> resolve_reference("sasl.password", "${env:KSPARK_DOC_PW}")
    'pw'
    """
    if not isinstance(value, str) or "${" not in value:
        return value

    def one(m: re.Match) -> str:
        source, ref = m.group(1), m.group(2)
        if source == "env":
            if ref not in os.environ:
                raise ConfigError(f"config key {name!r} refers to environment variable {ref!r}, "
                                  "which is not set")
            return os.environ[ref]
        path, _, key = ref.rpartition(":") if not os.path.isfile(ref) else (ref, "", "")
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            raise ConfigError(f"config key {name!r} refers to file {path!r}, which cannot be "
                              f"read ({e.strerror})") from None
        if not key:
            return text.strip()
        found = parse_properties(text)
        if key not in found:
            raise ConfigError(f"config key {name!r} refers to key {key!r} of file {path!r}, "
                              "which has no such key")
        return found[key]

    return _REFERENCE.sub(one, value)
