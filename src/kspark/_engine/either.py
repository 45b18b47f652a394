"""``either``: a method of a config value (``Repartitioned``, ``BufferConfig``, ...) that may
be called on the class, as Java's static factories are, or on a value, as Java's
``with*`` refiners are; on the class it applies to the default value.

Example:
    >>> from dataclasses import dataclass, replace
    >>> @dataclass(frozen=True)
    ... class Options:
    ...     name: str = ""
    ...     parts: int = 1
    ...     @either
    ...     def with_parts(self, n): return replace(self, parts=n)
    >>> Options.with_parts(3), Options("x").with_parts(3)
    (Options(name='', parts=3), Options(name='x', parts=3))

``shortcuts``: Java's static shortcuts named like a field (``Grouped.keySerde(serde)`` is
``Grouped.key_serde(serde)``): called on the class, the field's ``with_`` method; read on a
value, the field.

    >>> shortcuts(Options, parts="with_parts")
    >>> Options.parts(4), Options("y", 2).parts
    (Options(name='', parts=4), 2)
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["either", "shortcuts"]


class either:  # noqa: N801 - used as a decorator
    """A method that, called on the class, applies to the class's default instance."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: Any) -> Any:
        return functools.partial(self.fn, obj if obj is not None else owner())


class _Shortcut:
    """On the class: ``method`` of the default value; on a value: the field (kept in the
    value's ``__dict__``, which wins over this non-data descriptor)."""

    def __init__(self, method: str):
        self.method = method

    def __get__(self, obj: Any, owner: Any) -> Any:
        return getattr(owner(), self.method)


def shortcuts(cls: type, **methods: str) -> None:
    """Install Java's static shortcuts on the dataclass ``cls`` (after it is made): for each
    field, the ``with_`` method that sets it."""
    for field_name, method in methods.items():
        setattr(cls, field_name, _Shortcut(method))
