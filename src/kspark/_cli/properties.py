"""The properties file a command's ``--config`` names, read in one place for every command.

Example:
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "app.properties"
    >>> _ = p.write_text("application.id = hourly\\n")
    >>> read_config_file(p), read_config_file(None)
    ({'application.id': 'hourly'}, {})
    >>> read_config_file(p.with_name("missing.properties"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kspark.errors.ConfigError: --config '...missing.properties' cannot be read (No such ...)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kspark.config import parse_properties
from kspark.errors import ConfigError

__all__ = ["read_config_file"]


def read_config_file(path: Path | None) -> dict[str, Any]:
    """The keys of the properties file ``path`` (none when it is None); an unreadable file
    is a ConfigError naming ``--config`` and the file."""
    if path is None:
        return {}
    try:
        return parse_properties(path.read_text())
    except OSError as e:
        raise ConfigError(f"--config {str(path)!r} cannot be read ({e.strerror})") from None
