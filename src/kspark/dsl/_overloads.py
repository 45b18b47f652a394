"""Java's overloads, checked: a DSL method lists the argument forms Java's overloads accept;
a call binds to the first form its arguments fit (positionally in Java's order, or by
keyword), or fails with a ``TypeError`` listing the accepted forms. A Java habit thus
either means what it means in Java or fails loudly, never silently something else.

A slot is a type (or types), or ``FN``: a callable, with the numbers of arguments it may be
called with (checked when Python can tell a callable's signature, since for some
slots the count decides the meaning: ``map_values(lambda v: ...)`` against
``map_values(lambda k, v: ...)``).

Example:
    >>> forms = (Form("f(predicate(key, value)[, named])",
    ...               Slot("predicate", FN, arity=(2,)), Slot("named", str, optional=True)),)
    >>> bind("KStream.filter", forms, (lambda k, v: True,), {})["named"] is None
    True
    >>> bind("KStream.filter", forms, (lambda v: True,), {})
    Traceback (most recent call last):
    ...
    TypeError: KStream.filter() does not accept (a function of 1 argument); it takes:
      f(predicate(key, value)[, named])
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FN", "SERDE", "Slot", "Form", "bind", "takes", "describe", "is_serde",
           "check_serdes"]

FN = object()  # a slot for a callable
SERDE = object()  # a slot for a serde: a Serde, a serde's name or class, or None


def is_serde(value: Any) -> bool:
    """Whether ``value`` can be a serde argument: None (left to the defaults), a serde's
    name or class (``"String"``, ``Serdes.String``), or an object that serializes and
    deserializes (a ``Serde``, a windowed or registry serde, a user's own).

    >>> from kspark import Serdes
    >>> is_serde(Serdes.String()), is_serde("Long"), is_serde(42)
    (True, True, False)
    """
    if value is None or isinstance(value, (str, type)):
        return True
    return callable(getattr(value, "serialize", None)) and callable(
        getattr(value, "deserialize", None))


def check_serdes(owner: str, **serdes: Any) -> None:
    """A TypeError at the call naming ``owner``'s serde argument that is not a serde (else
    it would fail only at the first record).

    >>> check_serdes("Consumed.with_", key_serde=42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Consumed.with_(): key_serde takes a Serde (Serdes.String(), ...), a serde's name ...
    """
    for name, value in serdes.items():
        if not is_serde(value):
            raise TypeError(f"{owner}(): {name} takes a Serde (Serdes.String(), ...), a serde's "
                            f"name ('String') or None, got {describe(value)}")


@dataclass(frozen=True)
class Slot:
    """One argument of a form: its name (also its keyword, with ``aliases``), what it
    takes, whether it may be left out or is taken by keyword only, and, for a callable,
    how many arguments it must accept (any of them)."""

    name: str
    kind: Any
    optional: bool = False
    arity: tuple[int, ...] = ()
    aliases: tuple[str, ...] = ()
    keyword: bool = False  # taken by keyword only (kspark's keywords: serdes, ...)

    def fits(self, value: Any) -> bool:
        if value is None:
            return self.optional
        if self.kind is FN:
            return (callable(value)
                    and (not self.arity or any(takes(value, n) for n in self.arity)))
        if self.kind is SERDE:
            return is_serde(value)
        return isinstance(value, self.kind)


@dataclass(frozen=True)
class Form:
    """One accepted form: its text, as shown in errors, and its slots in Java's order."""

    text: str
    slots: tuple[Slot, ...]

    def __init__(self, text: str, *slots: Slot):
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "slots", slots)

    def bind(self, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The slots' values, or None if the arguments do not fit this form."""
        names = {n: s for s in self.slots for n in (s.name, *s.aliases)}
        if any(k not in names for k in kwargs):
            return None
        out: dict[str, Any] = {}
        i = 0
        for slot in self.slots:
            given = [k for k in (slot.name, *slot.aliases) if k in kwargs]
            if len(given) > 1:
                return None
            if given:
                value = kwargs[given[0]]
                if not slot.fits(value) and not (value is None and slot.optional):
                    return None
                out[slot.name] = value
            elif not slot.keyword and i < len(args) and slot.fits(args[i]):
                out[slot.name] = args[i]
                i += 1
            elif slot.optional:
                out[slot.name] = None
            else:
                return None
        return out if i == len(args) else None


def bind(call: str, forms: tuple[Form, ...], args: tuple,
         kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the first form that ``args``/``kwargs`` fit (with ``"form"``: its
    index), or a TypeError naming ``call``, what it got and every accepted form."""
    for index, form in enumerate(forms):
        bound = form.bind(args, kwargs)
        if bound is not None:
            bound["form"] = index
            return bound
    got = ", ".join([describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()])
    accepted = "\n  ".join(f.text for f in forms)
    raise TypeError(f"{call}() does not accept ({got}); it takes:\n  {accepted}")


def takes(fn: Any, n: int) -> bool:
    """Whether ``fn`` can be called with ``n`` positional arguments (True when Python cannot
    tell, as for some built-ins)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        sig.bind(*([None] * n))
    except TypeError:
        return False
    return True


def describe(value: Any) -> str:
    """A short description of an argument, for errors."""
    if callable(value) and not isinstance(value, type):
        try:
            params = [p for p in inspect.signature(value).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                      and p.default is p.empty]
        except (TypeError, ValueError):
            return "a function"
        n = len(params)
        return f"a function of {n} argument{'s' if n != 1 else ''}"
    if isinstance(value, type):
        return f"class {value.__name__}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"

