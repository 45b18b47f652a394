"""The three exception-handler config keys: what each accepts, how a value is checked when
the config is built, and how a task makes its handler from it.

A value is ``log_and_fail`` or ``log_and_continue``, Java's class name of a built-in
handler (read as those names), a class path ``"module.Class"`` (imported when the config
is checked), a handler class or instance, or a plain function ``(context, record,
exception) -> response``. A handler with ``configure(configs)`` gets the application's
config before its first call, as Java's ``Configurable``.

Example:
    >>> convert = JAVA_NAMES["processing.exception.handler"].get
    >>> convert("org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler")
    'log_and_continue'
    >>> handler_problem("processing.exception.handler")("no.such.module.Handler")[:30]
    "cannot import 'no.such.module'"
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from kspark import _error_handlers as h

__all__ = ["PROCESSING", "DESERIALIZATION", "PRODUCTION", "JAVA_NAMES", "DEFAULT",
           "handler_config", "handler_problem", "make_handler", "as_response"]

PROCESSING = "processing.exception.handler"
DESERIALIZATION = "deserialization.exception.handler"
PRODUCTION = "production.exception.handler"
DEFAULT = "log_and_fail"  # each key's default: the task fails, as in Kafka Streams
_JAVA = "org.apache.kafka.streams.errors."

BUILTINS: dict[str, dict[str, type]] = {
    PROCESSING: {"log_and_fail": h.LogAndFailProcessingExceptionHandler,
                 "log_and_continue": h.LogAndContinueProcessingExceptionHandler},
    DESERIALIZATION: {"log_and_fail": h.LogAndFailExceptionHandler,
                      "log_and_continue": h.LogAndContinueExceptionHandler},
    PRODUCTION: {"log_and_fail": h.DefaultProductionExceptionHandler,
                 "log_and_continue": h.LogAndContinueProductionExceptionHandler},
}
BASES: dict[str, type] = {PROCESSING: h.ProcessingExceptionHandler,
                          DESERIALIZATION: h.DeserializationExceptionHandler,
                          PRODUCTION: h.ProductionExceptionHandler}


def _java_names(key: str) -> dict[str, str]:
    """Java's class names (with and without the package) of ``key``'s built-in handlers,
    each read as our name (Java has no log-and-continue production handler)."""
    return {prefix + cls.__name__: name for name, cls in BUILTINS[key].items()
            if cls is not h.LogAndContinueProductionExceptionHandler for prefix in (_JAVA, "")}


JAVA_NAMES: dict[str, dict[str, str]] = {key: _java_names(key) for key in BUILTINS}

_WHAT = ("log_and_fail, log_and_continue, Java's class name of a built-in handler, a class "
         "path 'module.Class', a handler class or instance, or a function (context, record, "
         "exception) -> Response")


def _import(path: str) -> Any:
    """The object at ``"module.Name"``; LookupError saying why not."""
    module, _, name = path.rpartition(".")
    try:
        imported = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - any failure to import is the user's to see
        raise LookupError(f"cannot import {module!r}: {type(e).__name__}: {e}") from e
    if not hasattr(imported, name):
        raise LookupError(f"module {module!r} has no {name!r}")
    return getattr(imported, name)


def _kind_problem(key: str, obj: Any) -> str | None:
    """What is wrong with ``obj`` (a class, an instance or a function) as ``key``'s handler."""
    cls = obj if isinstance(obj, type) else type(obj)
    for other, base in BASES.items():
        if other != key and issubclass(cls, base):
            return (f"{cls.__name__} is a {base.__name__}, not a "
                    f"{BASES[key].__name__}: give it to {other}")
    if isinstance(obj, type):
        if not callable(getattr(obj, "handle", None)):
            return f"class {obj.__name__} has no handle(context, record, exception) method"
        try:
            obj()
        except Exception as e:  # noqa: BLE001 - the user's class: any error is theirs
            return f"class {obj.__name__} cannot be made without arguments: {e}"
        return None
    if callable(getattr(obj, "handle", None)) or callable(obj):
        return None
    return f"must be {_WHAT}"


def handler_problem(key: str) -> Callable[[Any], str | None]:
    """The validator of ``key``: None, or what is wrong with a value (a class path is
    imported here, so a typo fails when the config is built)."""
    def problem(value: Any) -> str | None:
        if isinstance(value, str):
            if value in BUILTINS[key] or value in JAVA_NAMES[key]:
                return None
            if "." not in value.strip("."):
                return f"must be {_WHAT}"
            try:
                value = _import(value)
            except LookupError as e:
                return f"{e}; it must be {_WHAT}"
        return _kind_problem(key, value)
    return problem


class _Function:
    """A plain function ``(context, record, exception) -> response`` as a handler."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def handle(self, context: Any, record: Any, exception: Exception) -> Any:
        return self.fn(context, record, exception)

    def handle_serialization_exception(self, context: Any, record: Any,
                                       exception: Exception, origin: Any) -> Any:
        return self.fn(context, record, exception)

    def __repr__(self) -> str:
        return f"function {getattr(self.fn, '__qualname__', self.fn)!r}"


def make_handler(key: str, value: Any, config: Mapping[str, Any]) -> Any:
    """The handler ``value`` names, made and configured with ``config`` (for one task)."""
    value = JAVA_NAMES[key].get(value, value) if isinstance(value, str) else value
    if isinstance(value, str):
        value = BUILTINS[key].get(value) or _import(value)
    if isinstance(value, type):
        value = value()
    elif not callable(getattr(value, "handle", None)):
        value = _Function(value)
    configure = getattr(value, "configure", None)
    if callable(configure):
        configure(dict(config))
    return value


def as_response(answer: Any) -> h.Response:
    """A handler's answer as a Response; TypeError if it is none (Java: a null response
    fails the task as the handler's own error)."""
    if isinstance(answer, h.Response):
        return answer
    if isinstance(answer, h.Result):
        return h.Response(answer)
    raise TypeError(f"it returned {answer!r}; a handler returns Response.resume(...), "
                    "Response.fail(...), Response.retry() (a production handler), or "
                    "Result.CONTINUE / Result.FAIL / Result.RETRY")


_DOCS = {
    DESERIALIZATION: "What a task does with a record it cannot deserialize: log_and_fail "
    "stops with an error naming topic, partition and offset; log_and_continue logs, counts "
    "(dropped-records) and skips it; or a user handler (docs/handlers.md). Java's "
    "LogAndFailExceptionHandler / LogAndContinueExceptionHandler are read as those.",
    PRODUCTION: "What a task does with a record it cannot serialize or that Kafka refuses "
    "(say, larger than message.max.bytes): log_and_fail stops with an error naming the "
    "sink, topic, partition and size; log_and_continue logs, counts and skips it; or a user "
    "handler (docs/handlers.md), which may also answer Response.retry() to a retriable error "
    "(sent again until task.timeout.ms). log_and_fail retries a retriable error too, as "
    "Java's DefaultProductionExceptionHandler, which is read as log_and_fail.",
    PROCESSING: "KIP-1033: what a task does when user code in a processor (a DSL function, "
    "a Processor, a punctuation) raises: log_and_fail stops with a ProcessorError naming "
    "node, record and line; log_and_continue drops the record at that node, logs and counts "
    "it (dropped-records); or a user handler (docs/handlers.md). Java's LogAndFail/"
    "LogAndContinueProcessingExceptionHandler are read as those. kspark's own errors are "
    "never handled.",
}


def handler_config() -> list[tuple]:
    """The three keys as kspark.config declares them: ``(name, type, default, doc,
    validator, required, convert)``."""
    return [(key, object, DEFAULT, _DOCS[key], handler_problem(key), False,
             _converter(key)) for key in (DESERIALIZATION, PRODUCTION, PROCESSING)]


def _converter(key: str) -> Callable[[Any], Any]:
    names = JAVA_NAMES[key]
    return lambda v: names.get(v, v) if isinstance(v, str) else v
