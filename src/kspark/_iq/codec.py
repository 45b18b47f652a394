"""The JSON wire codec of interactive queries: queries (``encode_query``/``decode_query``)
and their results (``encode_result``/``decode_result``), through the store's own serdes,
JSON only (nothing is unpickled or evaluated; a malformed payload is refused with an
InvalidStateStoreError). For a command line: ``render_json`` of an answer and
``parse_json_key`` of a key typed as text.

The codec needs of a store only its ``name()``, ``key_serde``, ``value_serde`` and kind: a
store built by the same builder over an empty byte store serves on the asking side.

Example:
    >>> import json
    >>> from kspark import Serdes
    >>> from kspark.query import KeyQuery
    >>> from kspark.state import Stores
    >>> s = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
    ...     Serdes.String(), Serdes.Long()).build()
    >>> q = decode_query(json.loads(json.dumps(encode_query(KeyQuery.with_key("a"), s))), s)
    >>> q
    KeyQuery(key='a', skips_cache=False)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from kspark._engine.aggregates.windows import Windowed
from kspark._iq.codec_queries import decode_query, encode_query
from kspark._iq.codec_results import decode_result, encode_result
from kspark._engine.state.kv import KeyValue, KeyValueIterator
from kspark._engine.state.timestamped import ValueAndTimestamp
from kspark._engine.state.versioned import VersionedRecord

__all__ = ["encode_query", "decode_query", "encode_result", "decode_result", "render_json",
           "parse_json_key"]


def render_json(value: Any) -> Any:
    """``value`` (a query's answer) as JSON-able data for a person to read: what JSON holds
    stays, bytes become base64 text, a Windowed key ``{"key", "start", "end"}``, a
    ValueAndTimestamp ``{"value", "timestamp"}``, a VersionedRecord ``{"value",
    "timestamp", "valid_to"}``, a KeyValue ``{"key", "value"}``, an iterator a list, and
    anything else its ``str``.

    Example:
        >>> from kspark import Window
        >>> render_json([KeyValue(Windowed("a", Window(0, 10)), ValueAndTimestamp(b"x", 5))])
        [{'key': {'key': 'a', 'start': 0, 'end': 10}, 'value': {'value': 'eA==', \
'timestamp': 5}}]
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Windowed):
        return {"key": render_json(value.key), "start": value.window.start,
                "end": value.window.end}
    if isinstance(value, ValueAndTimestamp):
        return {"value": render_json(value.value), "timestamp": value.timestamp}
    if isinstance(value, VersionedRecord):
        return {"value": render_json(value.value), "timestamp": value.timestamp,
                "valid_to": value.valid_to}
    if isinstance(value, KeyValue):
        return {"key": render_json(value.key), "value": render_json(value.value)}
    if isinstance(value, (list, tuple, KeyValueIterator)):
        return [render_json(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: render_json(v) for k, v in value.items()}
    return str(value)


def parse_json_key(text: str, store: Any) -> Any:
    """The key ``text`` names in ``store``: its JSON literal if it is one that the store's
    key serde writes and reads back unchanged, else the text itself.

    Example:
        >>> from kspark import Serdes
        >>> from kspark.state import Stores
        >>> def kv(key_serde):
        ...     return Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"),
        ...         key_serde, Serdes.Long()).build()
        >>> parse_json_key("42", kv(Serdes.Long())), parse_json_key("42", kv(Serdes.String()))
        (42, '42')
        >>> parse_json_key('"a b"', kv(Serdes.String())), parse_json_key("a b", kv(Serdes.String()))
        ('a b', 'a b')
    """
    try:
        candidate = json.loads(text)
    except ValueError:
        return text
    name, serde = store.name(), store.key_serde
    try:
        back = serde.deserialize(name, serde.serialize(name, candidate))
    except Exception:  # noqa: BLE001 - the serde refuses the literal: the key is the text
        return text
    return candidate if back == candidate and type(back) is type(candidate) else text
