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
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["either"]


class either:  # noqa: N801 - used as a decorator
    """A method that, called on the class, applies to the class's default instance."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: Any) -> Any:
        return functools.partial(self.fn, obj if obj is not None else owner())
