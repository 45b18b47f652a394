"""Typed records for the Schema Registry serdes: a dataclass (or a Pydantic model, when
Pydantic is installed) as Avro or JSON Schema, its instances to plain dicts and back, and a
field of the wrong type named before anything is written.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class User:
    ...     name: str
    ...     age: int | None = None
    >>> avro_schema(User)
    '{"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": ["null", "long"], "default": null}]}'
    >>> from_plain(User, {"name": "ann", "age": 3})
    User(name='ann', age=3)
    >>> wrong_field(User, User("ann", "3"))
    "field 'age' takes int | None, got str '3'"
"""  # noqa: E501 - a doctest's expected output is one line

from __future__ import annotations

import dataclasses
import json
import reprlib
import types
import typing
from typing import Any

from kspark.errors import ConfigError

__all__ = ["is_record_type", "avro_schema", "json_schema", "to_plain", "from_plain",
           "wrong_field", "type_name"]

_AVRO = {str: "string", int: "long", float: "double", bool: "boolean", bytes: "bytes"}
_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother = 40, 40


def is_record_type(t: Any) -> bool:
    """A dataclass, or a Pydantic model (known by its methods: Pydantic is not imported)."""
    return isinstance(t, type) and (dataclasses.is_dataclass(t) or (
        hasattr(t, "model_validate") and hasattr(t, "model_dump")))


def _fields(cls: type) -> list[tuple[str, Any, bool, Any]]:
    """(name, type, has a default, default) of each field of ``cls``."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception as e:  # noqa: BLE001 - a hint naming what its module does not define
        raise ConfigError(f"cannot read the type hints of {cls.__name__} ({type(e).__name__}: "
                          f"{e}); define the types it names at module level") from e
    if dataclasses.is_dataclass(cls):
        out = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out.append((f.name, hints[f.name], True, f.default))
            elif f.default_factory is not dataclasses.MISSING:
                out.append((f.name, hints[f.name], True, f.default_factory()))
            else:
                out.append((f.name, hints[f.name], False, None))
        return out
    return [(name, hints.get(name, Any), not info.is_required(),
             None if info.is_required() else info.get_default(call_default_factory=True))
            for name, info in cls.model_fields.items()]  # type: ignore[attr-defined]


def _optional(tp: Any) -> tuple[Any, bool]:
    """(X, True) for ``Optional[X]`` / ``X | None``, else (tp, False)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def type_name(tp: Any) -> str:
    """``tp`` as written in a type hint: ``int``, ``list[str]``, ``int | None``."""
    inner, optional = _optional(tp)
    if optional:
        return f"{type_name(inner)} | None"
    return tp.__name__ if isinstance(tp, type) and not typing.get_args(tp) else \
        str(tp).replace("typing.", "")


def _unmapped(where: str, tp: Any, fmt: str) -> ConfigError:
    return ConfigError(f"field {where} has type {type_name(tp)}, which kspark cannot map to "
                       f"{fmt} (it maps str, int, float, bool, bytes, Optional, list, "
                       f"dict[str, X] and nested records): give schema_str")


def avro_schema(cls: type) -> str:
    """The Avro schema of ``cls`` (str→string, int→long, float→double, bool→boolean,
    bytes→bytes, Optional[X]→["null", X] default null, a nested record type→record,
    list[X]→array, dict[str, X]→map), as JSON text."""
    return json.dumps(_avro_record(cls, set()))


def _avro_record(cls: type, named: set[str]) -> Any:
    if cls.__name__ in named:
        return cls.__name__  # a record type defined once, then named
    named.add(cls.__name__)
    fields = []
    for name, tp, has_default, default in _fields(cls):
        inner, optional = _optional(tp)
        where = f"{cls.__name__}.{name}"
        field: dict[str, Any] = {"name": name}
        if optional and (not has_default or default is None):
            field["type"], field["default"] = ["null", _avro_type(inner, named, where)], None
        elif optional:  # a default other than None: the union's first branch is its type
            field["type"] = [_avro_type(inner, named, where), "null"]
        else:
            field["type"] = _avro_type(tp, named, where)
        if has_default and "default" not in field and (plain := _plain_default(default)) \
                is not dataclasses.MISSING:
            field["default"] = plain
        fields.append(field)
    return {"type": "record", "name": cls.__name__, "fields": fields}


def _plain_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")  # Avro writes a bytes default as ISO-8859-1 text
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return dataclasses.MISSING
    return value


def _avro_type(tp: Any, named: set[str], where: str) -> Any:
    inner, optional = _optional(tp)
    if optional:
        return ["null", _avro_type(inner, named, where)]
    if tp in _AVRO:
        return _AVRO[tp]
    if is_record_type(tp):
        return _avro_record(tp, named)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _avro_type(args[0], named, where)}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "map", "values": _avro_type(args[1], named, where)}
    raise _unmapped(where, tp, "Avro")


def json_schema(cls: type) -> str:
    """The JSON Schema (draft-07) of ``cls``: an object whose fields without a default are
    required (str→string, int→integer, float→number, bool→boolean, Optional[X]→X or null,
    list[X]→array, dict[str, X]→object, a nested record type→object)."""
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                       **_json_object(cls)})


def _json_object(cls: type) -> dict[str, Any]:
    props = {name: _json_type(tp, f"{cls.__name__}.{name}") for name, tp, _, _ in _fields(cls)}
    required = [name for name, tp, has_default, _ in _fields(cls)
                if not has_default and not _optional(tp)[1]]
    return {"title": cls.__name__, "type": "object", "properties": props, "required": required}


def _json_type(tp: Any, where: str) -> dict[str, Any]:
    inner, optional = _optional(tp)
    if optional:
        return {"oneOf": [{"type": "null"}, _json_type(inner, where)]}
    if tp in _JSON:
        return {"type": _JSON[tp]}
    if is_record_type(tp):
        return _json_object(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _json_type(args[0], where)}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "object", "additionalProperties": _json_type(args[1], where)}
    raise _unmapped(where, tp, "JSON Schema")


def wrong_field(cls: type, obj: Any, path: str = "") -> str | None:
    """Why ``obj`` (an instance of ``cls``) does not fit its type hints, naming the field
    (``address.zip``), or None."""
    if not is_record_type(cls):
        return None
    # a Pydantic model checks its fields when it is made, but not on assignment by default
    # (nor model_construct): checked here too, so the error names the field
    for name, tp, _, _ in _fields(cls):
        where = f"{path}{name}"
        value = getattr(obj, name, None)
        problem = _misfit(value, tp, where)
        if problem:
            return problem
    return None


def _misfit(value: Any, tp: Any, where: str) -> str | None:
    inner, optional = _optional(tp)
    if optional and value is None:
        return None
    if is_record_type(inner) and isinstance(value, inner):
        return wrong_field(inner, value, f"{where}.")
    if _fits(value, inner):
        origin, args = typing.get_origin(inner), typing.get_args(inner)
        items = (enumerate(value) if origin is list else value.items() if origin is dict
                 else ())
        for k, item in items:
            problem = _misfit(item, args[-1], f"{where}[{k!r}]")
            if problem:
                return problem
        return None
    return (f"field {where!r} takes {type_name(tp)}, got {type(value).__name__} "
            f"{_SHORT.repr(value)}")


def _fits(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp in (str, bytes, bool):
        return isinstance(value, tp)
    origin = typing.get_origin(tp)
    if origin in (list, dict):
        return isinstance(value, origin)
    return isinstance(value, tp) if isinstance(tp, type) else True


def to_plain(cls: type, obj: Any) -> Any:
    """An instance of ``cls`` as the plain dict the schema describes."""
    if dataclasses.is_dataclass(cls):
        return dataclasses.asdict(obj)
    return obj.model_dump()


def from_plain(cls: type, value: Any) -> Any:
    """An instance of ``cls`` from the plain dict read (fields ``cls`` lacks are left out;
    fields the data lacks take ``cls``' defaults)."""
    if value is None or not dataclasses.is_dataclass(cls):
        return value if value is None else cls.model_validate(value)  # type: ignore[attr-defined]
    known = {name: tp for name, tp, _, _ in _fields(cls)}
    return cls(**{k: _revive(v, known[k]) for k, v in value.items() if k in known})


def _revive(value: Any, tp: Any) -> Any:
    inner, _ = _optional(tp)
    if value is None:
        return None
    if is_record_type(inner) and isinstance(value, dict):
        return from_plain(inner, value)
    origin, args = typing.get_origin(inner), typing.get_args(inner)
    if origin is list and isinstance(value, list):
        return [_revive(v, args[0]) for v in value]
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {k: _revive(v, args[1]) for k, v in value.items()}
    return value
