"""kspark's own encoding of the values it keeps in internal stores (suppress buffers, an
unnamed foreign-key join's results, stream-table join grace buffers), and the restore of
those stores: nothing read back from Kafka or disk can run code."""

from __future__ import annotations

import os
import pathlib
import pickle
import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings, strategies as st

from kspark import (
    Joined,
    Materialized,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from kspark._engine.aggregates.windows import Window, Windowed
from kspark._engine.state.build import bottom
from kspark._engine.state.encoding import Reader, decode_plain, encode_plain
from kspark._engine.state.buffer_value import Buffered, SuppressBufferSerde
from kspark._engine.state.internal_serdes import GraceBufferSerde, PlainValueSerde
from kspark._engine.state.timestamped import ValueAndTimestamp, ValueAndTimestampSerde
from kspark._engine.tables.change import Change
from kspark.errors import CorruptStateError, SerializationError
from kspark.state import Stores
from kspark.testing import TopologyTestDriver

S, L, J = Serdes.String(), Serdes.Long(), Serdes.Json()
NO_CACHE = {"statestore.cache.max.bytes": 0}


class _Touch:
    """Unpickled, it creates ``path``: the side effect a crafted changelog record is after."""

    def __init__(self, path: pathlib.Path, how: str):
        self.path, self.how = path, how

    def __reduce__(self):
        if self.how == "os.system":
            return os.system, (f"touch {self.path}",)
        return pathlib.Path.touch, (pathlib.Path(self.path),)


@pytest.fixture(params=["os.system", "Path.touch"])
def crafted(request, tmp_path):
    """(payloads, marker): pickles that would create ``marker``, alone and behind headers."""
    marker = tmp_path / f"pwned-{request.param.replace('.', '-')}"
    control = tmp_path / "control"
    pickle.loads(pickle.dumps(_Touch(control, request.param)))  # the payload is live ...
    assert control.exists()
    payload = pickle.dumps(_Touch(marker, request.param), protocol=5)
    # ... as such, behind each kind's header, behind a timestamp, in a plain-value slot
    payloads = [payload, pickle.dumps(_Touch(marker, request.param), protocol=0),
                b"K\x01S" + payload, b"K\x01G" + payload, b"K\x01V" + payload,
                b"K\x02V" + payload, b"\x00" * 8 + payload, b"K\x01G\x02" + payload]
    yield payloads, marker
    assert not marker.exists(), "a crafted record ran code"


# -- the plain encoding -------------------------------------------------------------------

_leaves = (st.none() | st.booleans() | st.integers() | st.integers(-2**200, 2**200)
           | st.floats(allow_nan=False) | st.text(max_size=8) | st.binary(max_size=8))
_plain = st.recursive(_leaves, lambda kids: (
    st.lists(kids, max_size=3) | st.lists(kids, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=4) | st.integers(), kids, max_size=3)
    | st.builds(lambda k, s, n: Windowed(k, Window(s, s + n)), kids, st.integers(-10**12, 10**12),
                st.integers(0, 10**6))
    | st.builds(Change, kids, kids)), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_plain)
def test_plain_values_round_trip(value):
    r = Reader(encode_plain(value))
    assert decode_plain(r) == value
    r.end()


@settings(max_examples=60, deadline=None)
@given(_plain, _plain, st.integers(-2**63, 2**63 - 1),
       st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=3))
def test_each_kind_of_entry_round_trips(new, old, ts, headers):
    headers = tuple(headers)
    entry = Buffered(ts, new, old, old, ts, headers, "in", 0, ts)  # Java's layout, plain values
    for serde, value in ((SuppressBufferSerde(), entry), (GraceBufferSerde(), (new, headers)),
                         (PlainValueSerde(), new)):
        assert serde.deserialize("s", serde.serialize("s", value)) == value


def test_a_known_value_serde_is_used_and_tagged():
    serde = SuppressBufferSerde(L)  # Java's ProcessorRecordContext + BufferValue + time
    entry = Buffered(15, 2, None, None, 3, (), "t", 0, 9)
    data = serde.serialize("s", entry)
    assert data == ((3).to_bytes(8, "big") + (9).to_bytes(8, "big") + b"\x00\x00\x00\x01t"
                    + bytes(8) + b"\xff" * 8 + (8).to_bytes(4, "big") + L.serialize("s", 2)
                    + (15).to_bytes(8, "big"))
    assert serde.deserialize("s", data) == entry
    grace = GraceBufferSerde("String").with_defaults(Serdes.by_name)
    value = ("v", (("h", None),))
    assert grace.deserialize("g", grace.serialize("g", value)) == value


@dataclass
class Custom:
    n: int


@pytest.mark.parametrize("value", [Custom(1), {1, 2}, object(), [Custom(1)],
                                   ValueAndTimestamp("x", 1)])
def test_a_value_the_encoding_cannot_hold_fails_when_written(value):
    with pytest.raises(SerializationError, match=r"store 'st' .*cannot hold .*value serde"):
        PlainValueSerde().serialize("st", value)


@pytest.mark.parametrize("data,why", [
    (b"", "no kspark header"), (b"\x80\x05junk", "a Python pickle"), (b"{}", "no kspark header"),
    (b"K\x02V", "format version 2"), (b"K\x01S", "kind b'S' where kind b'V'"),
    (b"K\x01VI\x00\x00\x00\x09\x01", "truncated"), (b"K\x01VN\x00", "unexpected byte"),
    (b"K\x01VX", "unknown type tag"), (b"K\x01VL\xff\xff\xff\xff", "a count of"),
    (b"K\x01VS\x00\x00\x00\x01\xff", "not UTF-8"),
    (b"K\x01VM\x00\x00\x00\x01L\x00\x00\x00\x00N", "not hashable"),
    (b"K\x01V" + b"L\x00\x00\x00\x01" * 200 + b"N", "nested deeper"),
])
def test_bytes_that_do_not_parse_fail_naming_the_store(data, why):
    with pytest.raises(CorruptStateError, match=rf"store 'results' .*{why}.*reset the application"):
        PlainValueSerde().deserialize("results", data)


@pytest.mark.parametrize("serde", [SuppressBufferSerde(), SuppressBufferSerde(L),
                                   GraceBufferSerde(),
                                   GraceBufferSerde(S), PlainValueSerde(),
                                   ValueAndTimestampSerde(PlainValueSerde())], ids=repr)
def test_a_crafted_pickle_never_runs_in_any_decode_path(serde, crafted):
    payloads, marker = crafted
    for data in payloads:
        with pytest.raises(CorruptStateError, match="store 'buffer'"):
            serde.deserialize("buffer", data)
    assert not marker.exists()


# -- the three stores through the TopologyTestDriver ---------------------------------------

FK_RESULT = r"FK-JOIN-OUTPUT-STATE-STORE-\d+$"


def _store(d, part):
    """The task's store whose name matches ``part`` (generated names)."""
    (name,) = [n for n in d._task.stores if re.search(part, n)]
    return d.get_state_store(name)


def _suppress_driver(value_serde_known):
    b = StreamsBuilder()
    table = b.table("in", key_serde=S, value_serde=S)
    if not value_serde_known:
        table = table.map_values(lambda v: {"v": v, "seen": [1, (2, None)]})
    table.suppress(Suppressed.until_time_limit(100)).to_stream().to("out", value_serde=J)
    return TopologyTestDriver(b.build(), NO_CACHE)


@pytest.mark.parametrize("known", [True, False], ids=["table-serde", "plain"])
def test_suppress_buffer_round_trip_through_the_driver(known):
    with _suppress_driver(known) as d:
        i = d.create_input_topic("in", S, S)
        i.pipe_input("a", "x", 0, )
        i.pipe_input("a", "y", 10)
        store = _store(d, "SUPPRESS")
        (raw,) = [v for _, v in bottom(store).range(None, None)]
        assert raw[:8] == (10).to_bytes(8, "big") and raw[-8:] == bytes(8)  # Java's layout
        (kv,) = list(store.all())
        expected = "y" if known else {"v": "y", "seen": [1, (2, None)]}
        assert (kv.value.time, kv.value.timestamp, kv.value.new) == (0, 10, expected)
        i.pipe_input("b", "z", 100)
        out = d.create_output_topic("out", S, J).read_key_values_to_list()
        assert out == [("a", expected if known else {"v": "y", "seen": [1, [2, None]]})]


def _fk_driver(joiner):
    b = StreamsBuilder()
    orders = b.table("orders", key_serde=S, value_serde=S)
    products = b.table("products", key_serde=S, value_serde=S)
    joined = orders.join(products, lambda v: v.split("|")[0], joiner)
    joined.to_stream().map_values(repr).to("out", value_serde=S)
    # a join reading the result materializes its store (unnamed: kspark's plain encoding)
    joined.join(b.table("extra", key_serde=S, value_serde=S), lambda r, e: r)
    return TopologyTestDriver(b.build(), NO_CACHE)


def test_unnamed_fk_join_results_round_trip_as_plain_data():
    with _fk_driver(lambda o, p: (o, {"product": p, "n": 2})) as d:
        d.create_input_topic("products", S, S).pipe_input("p1", "apple", 1)
        d.create_input_topic("orders", S, S).pipe_input("o1", "p1|3", 2)
        assert d.create_output_topic("out", S, S).read_values_to_list() == [
            "('p1|3', {'product': 'apple', 'n': 2})"]
        store = _store(d, FK_RESULT)
        (raw,) = [v for k, v in bottom(store).range(None, None) if k == b"o1"]
        assert raw[8:11] == b"K\x01V"
        assert store.get("o1").value == ("p1|3", {"product": "apple", "n": 2})


def test_an_fk_joiner_result_the_encoding_cannot_hold_asks_for_a_value_serde():
    with _fk_driver(lambda o, p: Custom(1)) as d:
        d.create_input_topic("products", S, S).pipe_input("p1", "apple", 1)
        with pytest.raises(SerializationError, match=r"store 'KTABLE-FK-JOIN-OUTPUT-"
                           r"STATE-STORE-\d+' .*Custom.*with_value_serde"):
            d.create_input_topic("orders", S, S).pipe_input("o1", "p1|3", 2)


def _grace_driver(known):
    b = StreamsBuilder()
    rates = b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 100)))
    orders = b.stream("orders", key_serde=S, value_serde=L)
    if not known:
        orders = orders.map_values(lambda v: {"qty": v})
    orders.left_join(rates, lambda v, r: repr((v, r)), joined=Joined().with_grace_period(10)).to(
        "o", key_serde=S, value_serde=S)
    return TopologyTestDriver(b.build())


@pytest.mark.parametrize("known", [True, False], ids=["stream-serde", "plain"])
def test_grace_buffer_round_trip_through_the_driver(known):
    with _grace_driver(known) as d:
        r, o = d.create_input_topic("rates", S, L), d.create_input_topic("orders", S, L)
        o.pipe_input("eur", 1, 12)
        (raw,) = [v for _, v in bottom(_store(d, "-Buffer")).range(None, None)]
        assert raw[:4] == b"K\x01G" + (b"\x01" if known else b"\x02")
        r.pipe_input("eur", 2, 10)
        o.pipe_input("eur", 1, 22)
        value = 1 if known else {"qty": 1}
        assert d.create_output_topic("o", S, S).read_values_to_list() == [repr((value, 2))]


@pytest.mark.parametrize("kind", ["suppress", "fk", "grace"])
def test_a_crafted_pickle_in_a_live_store_fails_when_read(kind, crafted):
    payloads, marker = crafted
    if kind == "suppress":
        d, part, key = _suppress_driver(False), "SUPPRESS", b"a"
    elif kind == "fk":
        d, part, key = _fk_driver(lambda o, p: (o, p)), FK_RESULT, b"o1"
    else:
        d, part, key = _grace_driver(False), "-Buffer", (5).to_bytes(8, "big") + b"eur" + bytes(4)
    with d:
        store = _store(d, part)
        for data in payloads:
            bottom(store).put(key, data)
            with pytest.raises(CorruptStateError, match=rf"store '{store.name()}'"):
                list(store.all())
        if kind == "suppress":  # the processor reads its buffer on every record of the key
            with pytest.raises(CorruptStateError, match="suppress buffer"):
                d.create_input_topic("in", S, S).pipe_input("a", "x", 0)
    assert not marker.exists()


# -- the restore path (the Spark host's restore_task, with a fake changelog) ---------------

class _Message:
    def __init__(self, key, value, offset, headers=None):
        self._k, self._v, self._o, self._h = key, value, offset, headers

    def key(self):
        return self._k

    def value(self):
        return self._v

    def offset(self):
        return self._o

    def timestamp(self):
        return (0, 0)

    def headers(self):
        return self._h


class _Admin:
    def __init__(self, ends):
        self.ends = ends

    def end_offsets(self, parts, earliest=False):
        return {tp: 0 if earliest else self.ends[tp[0]] for tp in parts}

    def topic_ids(self, topics):
        return {}


def _restore_with(monkeypatch, tmp_path, build, changelog_values, batch=None, headers=None):
    """Build ``build``'s task as the Spark host does (for micro-batch ``batch``), every
    changelog holding ``changelog_values(store name)`` (a list of (key, value)); returns
    the task."""
    import kspark._host.restore as spark_state
    from kspark._host.state import TaskHostState
    from kspark import StreamsConfig
    from kspark._engine.collector import MemoryCollector
    from kspark._engine.state.build import changelog_topic
    from kspark._graph.instantiate import build_task

    b = StreamsBuilder()
    build(b)
    graph = b.build()._graph
    config = StreamsConfig({"application.id": "evil", "bootstrap.servers": "localhost:1",
                            "state.dir": str(tmp_path / "state")})  # a fresh state: restored
    logs = {changelog_topic("evil", n): changelog_values(n) for n in graph.stores}
    monkeypatch.setattr(spark_state, "admin_for",
                        lambda *_: _Admin({t: len(v) for t, v in logs.items()}))

    def read_range(where, topic, partition, start, end, *args, **kwargs):
        yield [_Message(k, v, o, headers) for o, (k, v) in enumerate(logs[topic])
               if start <= o < end]

    monkeypatch.setattr(spark_state, "read_range", read_range)
    builders = {name: builder for name, (builder, _) in graph.stores.items()}
    return build_task(graph, "0_0", config, MemoryCollector(), batch_buffer=True,
                      restore=lambda t: spark_state.restore_task(t, builders, batch,
                                                                host=TaskHostState()))


def _suppress_app(b):
    (b.stream("in", key_serde=S, value_serde=S).group_by_key()
      .windowed_by(TimeWindows.of_size_and_grace(10, 5)).count()
      .suppress(Suppressed.until_window_closes()).to_stream().to("out", value_serde=L))


def _fk_app(b):
    orders = b.table("orders", key_serde=S, value_serde=S)
    joined = orders.join(b.table("products", key_serde=S, value_serde=S), lambda v: v,
                         lambda o, p: (o, p))
    joined.to_stream().to("out", value_serde=J)
    joined.join(b.table("extra", key_serde=S, value_serde=S), lambda r, e: r)  # materialized


def _grace_app(b):
    rates = b.table("rates", key_serde=S, value_serde=L, materialized=Materialized.as_(
        Stores.persistent_versioned_key_value_store("rates", 100)))
    b.stream("orders", key_serde=S, value_serde=L).join(
        rates, lambda v, r: v, joined=Joined().with_grace_period(10)).to("o", value_serde=L)


@pytest.mark.parametrize("app,part,good", [
    (_suppress_app, "SUPPRESS",
     SuppressBufferSerde(L).serialize("s", Buffered(10, 2, None, None, 3, (), "in", 0, 0))),
    # a timestamped store's changelog holds the value alone (Kafka Streams' layout); the
    # record's timestamp (0 here) goes back in front of it in the store
    (_fk_app, FK_RESULT, PlainValueSerde().serialize("r", ("o", "p"))),
    (_grace_app, "-Buffer", GraceBufferSerde(L).serialize("g", (4, ()))),
], ids=["suppress", "fk", "grace"])
def test_a_crafted_changelog_record_fails_the_restore_naming_it(app, part, good, monkeypatch,
                                                                 tmp_path, crafted):
    payloads, marker = crafted
    key = {"SUPPRESS": b"k" + bytes(8), "-Buffer": (5).to_bytes(8, "big") + b"k" + bytes(4)}.get(
        part, b"k")  # a windowed key, a grace buffer's key, a plain key
    for data in payloads:
        def values(store, data=data):
            if not re.search(part, store):
                return []
            return [(key, good), (key, None), (key, good), (key, data)]

        with pytest.raises(CorruptStateError) as e:  # with Java's header of a buffered record
            _restore_with(monkeypatch, tmp_path, app, values, headers=[("v", b"\x03")])
        message = str(e.value)
        assert message.startswith("task 0_0: cannot restore store ")
        assert re.search(part.rstrip("$"), message) and "-changelog' partition 0" in message
        assert "the record at offset 3 of changelog topic 'evil-" in message
    assert not marker.exists()
    task = _restore_with(monkeypatch, tmp_path, app,  # a well-formed changelog restores
                         lambda store: [(key, good)] if re.search(part, store) else [],
                         headers=[("v", b"\x03")])
    (store,) = [s for n, s in task.stores.items() if re.search(part, n)]
    kept = bytes(8) + good if part == FK_RESULT else good
    assert [v for _, v in bottom(store).range(None, None)] == [kept]


def test_a_crafted_delayed_records_changelog_fails_the_restore(monkeypatch, tmp_path, crafted):
    payloads, marker = crafted

    def app(b):
        b.stream("in", key_serde=S, value_serde=S).delay(100).to("out")

    for data in payloads + [b'{"k": null}', b'{"k": null, "v": "!!", "t": 1, "n": "p", '
                            b'"h": [], "o": null}']:
        with pytest.raises(CorruptStateError, match=r"cannot restore store .*delayed records.*"
                                                    r"offset 0 of changelog topic"):
            _restore_with(monkeypatch, tmp_path, app, lambda store, data=data: [(bytes(16), data)])
    assert not marker.exists()


def test_a_malformed_batch_header_on_a_changelog_record_is_named(monkeypatch, tmp_path):
    good = GraceBufferSerde(L).serialize("g", (4, ()))
    key = (5).to_bytes(8, "big") + b"k" + bytes(4)
    for header in (b"no-colon", b"q:x", b"\xff\xfe", None):
        with pytest.raises(CorruptStateError, match=r"the record at offset 0 of changelog topic "
                                                    r"'evil-.*-changelog' partition 0 has a "
                                                    r"kspark.batch header"):
            _restore_with(monkeypatch, tmp_path, _grace_app,
                          lambda store: [(key, good)] if "-Buffer" in store else [],
                          ("q", 1), [("kspark.batch", header)])
    task = _restore_with(monkeypatch, tmp_path, _grace_app,  # a retried batch's own record
                         lambda store: [(key, good)] if "-Buffer" in store else [],
                         ("q", 1), [("kspark.batch", b"q:1")])
    assert all(not list(bottom(s).range(None, None)) for n, s in task.stores.items()
               if "-Buffer" in n)
