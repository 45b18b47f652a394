"""The argument forms of the DSL's methods: Java's overloads, in Java's order, and the
keywords kspark has always taken. Each method binds its arguments to one of these
(:func:`kspark.dsl._overloads.bind`); anything else is a TypeError listing them.

Example:
    >>> from kspark.dsl._overloads import bind
    >>> bind("KStream.map", MAP, (lambda k, v: (v, k),), {})["named"] is None
    True
"""

from __future__ import annotations

from typing import Any

from kspark._engine.aggregates.windows import SessionWindows, SlidingWindows, TimeWindows
from kspark._engine.joins.stream_stream import JoinWindows
from kspark.dsl._overloads import FN, SERDE, Form, Slot
from kspark.dsl.joined import Joined, StreamJoined
from kspark.dsl.materialized import Materialized
from kspark.dsl.named import Grouped, Named, Printed, TableJoined
from kspark.dsl.topic_options import Consumed, Produced, Repartitioned

__all__ = ["named_of", "with_key", "FILTER", "MAP", "MAP_VALUES", "SELECT_KEY", "ACTION",
           "SPLIT", "TO", "REPARTITION", "GROUP_BY", "GROUP_BY_KEY", "TO_TABLE", "PRINT",
           "STREAM", "TABLE", "GLOBAL_TABLE", "FILTER_TABLE", "TABLE_MAP_VALUES",
           "TABLE_TO_STREAM", "TABLE_GROUP_BY",
           "COUNT", "REDUCE", "AGGREGATE", "TABLE_REDUCE", "TABLE_AGGREGATE",
           "SESSION_AGGREGATE", "WINDOWED_BY", "COGROUP_AGGREGATE",
           "COGROUP_SESSION_AGGREGATE", "stream_join_forms", "table_join_forms"]

ANY = object  # a keyword-only slot taking anything (serdes, partitioners)


def _named() -> Slot:
    return Slot("named", (Named, str), optional=True, aliases=("name",))


def _kw(name: str, kind: Any = ANY) -> Slot:
    return Slot(name, kind, optional=True, keyword=True)


def _materialized() -> Slot:
    return Slot("materialized", Materialized, optional=True)


def named_of(value: Any) -> str | None:
    """The processor name a ``Named`` or a str gives (None: generated)."""
    return value.name if isinstance(value, Named) else value


def with_key(fn: Any, given: bool | None) -> bool:
    """Whether a value mapper takes the key too: as given (``with_key=``), else by its
    arguments: ``fn(key, value)`` when it cannot be called with one (Java's
    ``ValueMapperWithKey`` against ``ValueMapper``)."""
    from kspark.dsl._overloads import takes

    if given is not None:
        return given
    return not takes(fn, 1) and takes(fn, 2)


# KStream
FILTER = (Form("filter(predicate(key, value)[, named])",
               Slot("predicate", FN, arity=(2,)), _named()),)
MAP = (Form("map(mapper(key, value) -> KeyValue[, named])",
            Slot("mapper", FN, arity=(2,)), _named()),)
MAP_VALUES = (Form("map_values(mapper(value) | mapper(key, value)[, named])",
                   Slot("mapper", FN, arity=(1, 2)), _named(), _kw("with_key", bool)),)
SELECT_KEY = (Form("select_key(mapper(key, value)[, named])",
                   Slot("mapper", FN, arity=(2,)), _named()),)
ACTION = (Form("(action(key, value)[, named])", Slot("action", FN, arity=(2,)), _named()),)
SPLIT = (Form("split([named])", _named()),)
TO = (Form("to(topic | topic_extractor(key, value, record_context)[, produced])",
           Slot("topic", (str,)), Slot("produced", Produced, optional=True),
           _kw("key_serde", SERDE), _kw("value_serde", SERDE), _kw("partitioner"),
           _kw("name", str)),
      Form("to(topic_extractor(key, value, record_context)[, produced])",
           Slot("topic", FN, arity=(3,), aliases=("topic_extractor",)),
           Slot("produced", Produced, optional=True),
           _kw("key_serde", SERDE), _kw("value_serde", SERDE), _kw("partitioner"),
           _kw("name", str)))
REPARTITION = (Form("repartition([repartitioned])",
                    Slot("repartitioned", Repartitioned, optional=True),
                    _kw("key_serde", SERDE), _kw("value_serde", SERDE), _kw("name", str),
                    _kw("partitioner")),)
GROUP_BY = (Form("group_by(key_selector(key, value)[, grouped])",
                 Slot("selector", FN, arity=(2,), aliases=("key_selector",)),
                 Slot("grouped", Grouped, optional=True),
                 _kw("key_serde", SERDE), _kw("value_serde", SERDE)),)
GROUP_BY_KEY = (Form("group_by_key([grouped])", Slot("grouped", Grouped, optional=True),
                     _kw("key_serde", SERDE), _kw("value_serde", SERDE)),)
TO_TABLE = (Form("to_table([named][, materialized])", _named(), _materialized()),)
PRINT = (Form("print(printed)", Slot("printed", Printed)),
         Form("print([label][, name])", Slot("label", str, optional=True),
              Slot("named", (Named, str), optional=True, aliases=("name",))))


def stream_join_forms(call: str, global_ok: bool, windowed_only: bool) -> tuple[Form, ...]:
    """The forms of KStream's ``join``/``left_join`` (``outer_join``: windowed only)."""
    from kspark.dsl.global_table import GlobalKTable
    from kspark.dsl.kstream import KStream
    from kspark.dsl.ktable import KTable

    forms = [Form(f"{call}(other_stream, joiner(value, other_value), join_windows"
                  "[, stream_joined])",
                  Slot("other", KStream, aliases=("other_stream",)),
                  Slot("joiner", FN, arity=(2,)),
                  Slot("windows", JoinWindows, aliases=("join_windows",)),
                  Slot("joined", StreamJoined, optional=True, aliases=("stream_joined",)),
                  _kw("name", str))]
    if not windowed_only:
        forms.append(Form(f"{call}(table, joiner(value, table_value)[, joined])",
                          Slot("other", KTable, aliases=("table",)),
                          Slot("joiner", FN, arity=(2,)),
                          Slot("joined", Joined, optional=True), _kw("name", str)))
    if global_ok:
        forms.append(Form(f"{call}(global_table, key_selector(key, value), "
                          "joiner(value, table_value)[, named])",
                          Slot("other", GlobalKTable, aliases=("global_table",)),
                          Slot("key_selector", FN, arity=(2,)),
                          Slot("joiner", FN, arity=(2,)), _named()))
    return tuple(forms)


# StreamsBuilder
STREAM = (Form("stream(topic | topics[, consumed])",
               Slot("topics", (str, list, tuple), aliases=("topic",)),
               Slot("consumed", Consumed, optional=True), _kw("key_serde", SERDE),
               _kw("value_serde", SERDE), _kw("timestamp_extractor"), _kw("offset_reset", str)),)
TABLE = (Form("table(topic[, consumed][, materialized])", Slot("topic", str),
              Slot("consumed", Consumed, optional=True), _materialized(), _kw("key_serde", SERDE),
              _kw("value_serde", SERDE), _kw("timestamp_extractor"), _kw("offset_reset", str)),)
GLOBAL_TABLE = (Form("global_table(topic[, consumed][, materialized])", *TABLE[0].slots),)

# KTable
FILTER_TABLE = (Form("filter(predicate(key, value)[, named][, materialized])",
                     Slot("predicate", FN, arity=(2,)), _named(), _materialized()),)
TABLE_MAP_VALUES = (Form("map_values(mapper(value) | mapper(key, value)[, named]"
                         "[, materialized])", Slot("mapper", FN, arity=(1, 2)), _named(),
                         _materialized(), _kw("with_key", bool)),)
TABLE_TO_STREAM = (Form("to_stream([key_mapper(key, value)][, named])",
                        Slot("mapper", FN, optional=True, arity=(2,), aliases=("key_mapper",)),
                        _named()),)
TABLE_GROUP_BY = (Form("group_by(selector(key, value) -> KeyValue[, grouped])",
                       Slot("selector", FN, arity=(2,)), Slot("grouped", Grouped, optional=True),
                       _kw("key_serde", SERDE), _kw("value_serde", SERDE)),)


def table_join_forms(call: str, foreign_key: bool) -> tuple[Form, ...]:
    """The forms of KTable's joins: a plain join, and (``foreign_key``) the foreign-key
    join, told apart as Java does, by its extractor: two functions, never one."""
    from kspark.dsl.ktable import KTable

    forms = [Form(f"{call}(other_table, joiner(value, other_value)[, named][, materialized])",
                  Slot("other", KTable, aliases=("other_table",)),
                  Slot("joiner", FN, arity=(2,)), _named(), _materialized())]
    if foreign_key:
        forms.append(Form(
            f"{call}(other_table, foreign_key_extractor(value) | foreign_key_extractor(key, "
            "value), joiner(value, other_value)[, table_joined][, materialized])",
            Slot("other", KTable, aliases=("other_table",)),
            Slot("extractor", FN, arity=(1, 2),
                                        aliases=("foreign_key_extractor",)),
            Slot("joiner", FN, arity=(2,)), Slot("table_joined", TableJoined, optional=True),
            _materialized()))
    return tuple(forms)


# grouped streams and tables
WINDOWED_BY = (Form("windowed_by(time_windows | sliding_windows | session_windows)",
                    Slot("windows", (TimeWindows, SlidingWindows, SessionWindows),
                         aliases=("time_windows", "sliding_windows", "session_windows"))),)
COUNT = (Form("count([named][, materialized])", _named(), _materialized()),)
REDUCE = (Form("reduce(reducer(aggregate, value)[, named][, materialized])",
               Slot("reducer", FN, arity=(2,)), _named(), _materialized()),)
AGGREGATE = (Form("aggregate(initializer(), aggregator(key, value, aggregate)[, named]"
                  "[, materialized])", Slot("initializer", FN, arity=(0,)),
                  Slot("aggregator", FN, arity=(3,)), _named(), _materialized()),)
SESSION_AGGREGATE = (Form("aggregate(initializer(), aggregator(key, value, aggregate), "
                          "session_merger(key, aggregate1, aggregate2)[, named]"
                          "[, materialized])", Slot("initializer", FN, arity=(0,)),
                          Slot("aggregator", FN, arity=(3,)),
                          Slot("merger", FN, arity=(3,), aliases=("session_merger",)),
                          _named(), _materialized()),)
TABLE_REDUCE = (Form("reduce(adder(aggregate, value), subtractor(aggregate, value)[, named]"
                     "[, materialized])", Slot("adder", FN, arity=(2,)),
                     Slot("subtractor", FN, arity=(2,)), _named(), _materialized()),)
TABLE_AGGREGATE = (Form("aggregate(initializer(), adder(key, value, aggregate), "
                        "subtractor(key, value, aggregate)[, named][, materialized])",
                        Slot("initializer", FN, arity=(0,)), Slot("adder", FN, arity=(3,)),
                        Slot("subtractor", FN, arity=(3,)), _named(), _materialized()),)
COGROUP_AGGREGATE = (Form("aggregate(initializer()[, named][, materialized])",
                          Slot("initializer", FN, arity=(0,)), _named(), _materialized()),)
COGROUP_SESSION_AGGREGATE = (Form("aggregate(initializer(), session_merger(key, aggregate1, "
                                  "aggregate2)[, named][, materialized])",
                                  Slot("initializer", FN, arity=(0,)),
                                  Slot("merger", FN, arity=(3,), aliases=("session_merger",)),
                                  _named(), _materialized()),)
