"""Issue 10's rules as fixed scenarios (the language of ``lang.py``), each run against Java.

Rule 26 (timestamp 0 on Spark) is not here: it concerns only the Spark host. Rule 24
(cached window-store reads past retention) is issue 26's rule 2.
"""

from __future__ import annotations

__all__ = ["RULES"]


def _count(windows: str = "", cache: int = 0, tail: tuple[str, ...] = ()) -> list[str]:
    lines = [f"cache {cache}", "op s stream in", "op g group_by_key s"]
    if windows:
        kind, *args = windows.split()
        lines += [f"op w {kind} g {' '.join(args)}", "op c count w st", "op t to_stream c",
                  "op o unwindow t"]
    else:
        lines += ["op c count g st", "op o to_stream c"]
    return lines + ["to o out", *tail]


_TABLE_JOIN = ["cache 0", "op l table in0 -", "op r table in1 -"]
_LATE = [("a", 1), ("b", 3), ("a", 12), ("b", 11), ("a", 25), ("b", 2), ("a", 40), ("b", 60)]
_STREAM_JOIN = ["cache 0", "op l stream in0", "op r stream in1"]
# left rows that move to another foreign key and go; right rows that change and go
_FK_INPUTS = ["input in0 x 2 1", "input in1 c 7 5", "input in0 y 5 2", "input in0 x 3 6",
              "input in1 a 1 2", "input in1 a 4 9", "input in0 y 6 11", "input in1 c ~ 12",
              "input in0 x ~ 10", "input in0 y ~ 13"]


def _rekeyed(i: str, src: str, flat: bool = False) -> list[str]:
    """Stream ``src`` (flat-mapped: each value and ten times it) re-keyed, repartitioned and
    grouped as ``g<i>``."""
    head = [f"op f{i} flat_map_values {src}"] if flat else []
    return [*head, f"op k{i} select_key {'f' + i if flat else src} flip",
            f"op r{i} repartition k{i}", f"op g{i} group_by_key r{i}"]


def _merged_repartitions(n: int) -> list[str]:
    """``n`` flat-mapped, re-keyed and repartitioned copies of one stream (the second one a
    millisecond later), merged and summed; the merged stream is written out too."""
    lines = ["cache 0", "op s stream in", "op p process_values s"]
    for i in range(n):
        lines += [f"op f{i} flat_map_values {'p' if i == 1 else 's'}",
                  f"op m{i} map_values f{i} {'inc' if i % 2 else 'dbl'}",
                  f"op k{i} select_key m{i} flip", f"op r{i} repartition k{i}"]
    lines += ["op u1 merge r0 r1", *(f"op u{i} merge u{i - 1} r{i}" for i in range(2, n))]
    return lines + [f"op g group_by_key u{n - 1}", "op c aggregate g -", "op o to_stream c",
                    "to o out", f"to u{n - 1} raw"]


_COGROUP = ["op c cogroup g1 g2", "op t aggregate c -", "op o to_stream t", "to o out"]
# issue 42: user code that raises ("boom": on a multiple of 5) under Java's
# LogAndContinueProcessingExceptionHandler; the answer ends with dropped-records-total
_BOOM = ["cache 0", "handler continue", "dropped", "op s stream in"]
_BOOM_INPUTS = ["input in a 1 1", "input in b 5 2", "input in a 10 3", "input in c 7 4",
                "input in b 15 5"]

# issue 42: Kafka Streams' metrics; the answer ends with dropped-records-total and the
# names, groups and tag keys of the task, node and topic metrics
_DROPS = ["cache 0", "op s stream in", "op g group_by_key s", "op w time_windows g 10 10 0",
         "op c count w st", "op o to_stream c", "op u unwindow o", "to u out",
         "input in a 1 1", "input in a 1 30", "input in a 1 2", "input in ~ 1 31",
         "input in b ~ 32", "store st win", "dropped"]

RULES: dict[str, list[str]] = {
    "issue 42 a late record and a null key are dropped and counted, a null value is not (INFO)": [
        *_DROPS, "metrics INFO"],
    "issue 42 the metrics of a windowed count with suppress (DEBUG)": [
        *_DROPS[:5], "op p suppress c", "op o to_stream p", *_DROPS[6:], "metrics DEBUG"],
    "issue 42 a record whose processing raises is dropped at that node and counted": [
        *_BOOM, "op m map_values s boom", "to m out", *_BOOM_INPUTS],
    "issue 42 the other branch still processes the record that raised": [
        *_BOOM, "op m map_values s boom", "op n map_values s inc", "to m out", "to n out2",
        *_BOOM_INPUTS],
    "issue 42 each forwarded record is decided on its own": [
        *_BOOM, "op f flat_map_values s", "op m map_values f boom", "to m out", *_BOOM_INPUTS],
    "issue 42 an aggregation after the failing step counts the rest": [
        *_BOOM, "op m map_values s boom", "op g group_by_key m", "op c count g st",
        "op o to_stream c", "to o out", *_BOOM_INPUTS, "store st kv"],
    "issue 42 a failing step after a repartition": [
        *_BOOM, "op k select_key s flip", "op r repartition k", "op m map_values r boom",
        "to m out", *_BOOM_INPUTS],
    # issue 53: the state stores' metrics (stream-state-metrics: put, get, fetch, flush,
    # restore, ... and the records' end-to-end latency) and the record caches' hit ratio
    "issue 53 the store and cache metrics of a cached count (DEBUG)": _count(
        cache=1 << 20, tail=("input in a 1 1", "input in b 1 2", "input in a 1 3",
                             "metrics DEBUG stores")),
    "issue 53 the store metrics of a windowed count with suppress (TRACE)": [
        *_DROPS[:5], "op p suppress c", "op o to_stream p", *_DROPS[6:], "metrics TRACE stores"],
    "issue 53 the store metrics of a session count and a table (INFO)": [
        *_count("session_windows 5 0", tail=("input in a 1 1", "input in a 1 2")),
        "op x table in1 tst", "op y to_stream x", "to y out1", "input in1 a 1 1",
        "metrics INFO stores"],
    "1 aggregate timestamp is the max": _count(tail=(
        "input in a 1 10", "input in a 1 5", "input in b 1 3", "store st kv")),
    "2 windowed count counts null values": _count("time_windows 10 10 0", tail=(
        "input in a ~ 1", "input in a 1 2", "input in ~ 1 3")),
    "2 session count counts null values": _count("session_windows 5 0", tail=(
        "input in a ~ 1", "input in a 1 2")),
    "2 sliding count skips null values": _count("sliding_windows 10 0", tail=(
        "input in a ~ 1", "input in a 1 2")),
    "3 a tombstone for an unknown key": [
        "cache 0", "op t table in st", "op o to_stream t", "to o out", "input in a ~ 1"],
    "3 cached: no tombstone for an unknown key": [
        "cache 1048576", "op t table in st", "op o to_stream t", "to o out", "input in a ~ 1"],
    "4 a filter forwards a delete per failing update": [
        "cache 0", "op t table in -", "op f tfilter t even", "op o to_stream f", "to o out",
        "input in a 1 1", "input in a 3 2", "input in a 2 3", "input in a 5 4"],
    "5 a cached delete carries its own timestamp": [
        "cache 1048576", "op t table in st", "op o to_stream t", "to o out",
        "input in a 1 5", "input in a ~ 9"],
    "6 7 session merges": _count("session_windows 5 0", tail=(
        "input in a 1 1", "input in a 1 10", "input in a 1 6", "input in a 1 20")),
    "8 expired sessions cannot merge": _count("session_windows 5 0", tail=(
        "input in a 1 1", "input in a 1 30", "input in a 1 4")),
    "9 window retention": _count("time_windows 10 10 0", tail=(
        "input in a 1 5", "input in a 1 20", "input in a 1 31", "store st window")),
    "10 suppress on sessions": [
        "cache 0", "op s stream in", "op g group_by_key s", "op w session_windows g 5 3",
        "op c count w -", "op p suppress c", "op t to_stream p", "op o unwindow t", "to o out",
        "input in a 1 1", "input in a 1 4", "input in b 1 5", "input in a 1 12",
        "input in c 1 30"],
    "11 suppress ties by key": [
        "cache 0", "op s stream in", "op g group_by_key s", "op w time_windows g 10 10 0",
        "op c count w -", "op p suppress c", "op t to_stream p", "op o unwindow t", "to o out",
        "input in c 1 1", "input in a 1 2", "input in b 1 3", "input in a 1 30"],
    "12 KIP-904 same-group update": [
        "cache 0", "op t table in -", "op g tgroup_by t flip", "op c aggregate g st",
        "op o to_stream c", "to o out",
        "input in a 1 5", "input in a 2 3", "input in c 4 1", "input in a ~ 9"],
    "13 cached aggregation through a repartition": [
        "cache 1048576", "op s stream in", "op k select_key s mod", "op g group_by_key k",
        "op c count g st", "op o to_stream c", "to o out",
        "input in a 1 1", "input in b 4 2", "input in c 2 3"],
    "14 15 foreign-key join": [
        "cache 0", "op l table in0 -", "op r table in1 -", "op j fk_join l r mod",
        "op o to_stream j", "to o out",
        "input in0 x 2 1", "input in1 c 7 5", "input in0 x 3 6", "input in1 a 1 2",
        "input in1 a 4 9", "input in0 x ~ 10"],
    "foreign-key left join, its subscription store's changelog": [
        "cache 0", "changelog KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010",
        "op l table in0 -", "op r table in1 -", "op j fk_left_join l r mod",
        "op o to_stream j", "to o out", *_FK_INPUTS],
    "foreign-key join named by TableJoined, its subscription store's changelog": [
        "cache 0", "changelog orders-subscription-store", "op l table in0 -",
        "op r table in1 -", "op j fk_join l r mod orders", "op o to_stream j", "to o out",
        *_FK_INPUTS],
    "foreign-key left join named by TableJoined, cached": [
        "cache 1048576", "op l table in0 -", "op r table in1 -",
        "op j fk_left_join l r mod orders", "op o to_stream j", "to o out", *_FK_INPUTS],
    "foreign-key left join after a stream-stream join": [
        "cache 0", "op l stream in0", "op r stream in1", "op j join l r 5 0", "op t to_table j",
        "op u table in2 -", "op f fk_left_join t u mod", "op o to_stream f", "to o out",
        "input in2 a 7 0", "input in2 b 8 0", "input in2 c 9 0", "input in0 a 1 1",
        "input in0 a 2 2", "input in1 a 3 3"],
    "foreign-key join of a mapped table": [
        "cache 0", "op l table in0 -", "op r table in1 -", "op m tmap_values r inc",
        "op j fk_join l m mod", "op o to_stream j", "to o out", *_FK_INPUTS],
    "foreign-key left join of a filtered mapped table, named, cached": [
        "cache 1048576", "op l table in0 -", "op r table in1 -", "op m tmap_values r inc",
        "op n tfilter m big", "op j fk_left_join l n mod x", "op o to_stream j", "to o out",
        *_FK_INPUTS],
    "16 17 18 outer join": [*_STREAM_JOIN, "op j outer_join l r 5 0", "to j out",
                            "input in0 a 1 10", "input in1 b 2 3", "input in0 b 3 30",
                            "input in1 a 4 12", "input in0 c 5 40", "input in1 a 6 1"],
    "19 null keys in a left join": [*_STREAM_JOIN, "op j left_join l r 5 0", "to j out",
                                   "input in0 ~ 1 1", "input in0 a 2 2", "input in1 a 3 3"],
    "20 stream-table left join drops null values": [
        "cache 0", "op s stream in0", "op t table in1 st", "op j left_join s t", "to j out",
        "input in1 a 5 1", "input in0 a ~ 2", "input in0 a 1 3", "input in0 ~ 2 4"],
    "21 a zero join window without grace": [*_STREAM_JOIN, "op j join l r 0 -1", "to j out",
                                           "input in0 a 1 5", "input in1 a 2 5"],
    "22 sliding windows order": _count("sliding_windows 10 0", tail=(
        "input in a 1 1", "input in a 1 2", "input in a 1 15", "input in a 1 9")),
    "23 repartition drops null keys": [
        "cache 0", "op s stream in", "op k select_key s flip", "op r repartition k", "to r out",
        "input in a 1 1", "input in b 2 2", "input in c 3 3"],
    "27 a zero cache forwards every update": _count(cache=0, tail=(
        "input in a 1 1", "input in a 1 2", "input in a 1 3")),
    **{f"emit on window close: {w}, cache {c}": [
        f"cache {c}", "op s stream in", "op g group_by_key s",
        f"op w {w.split()[0]} g {w.split(' ', 1)[1]}", "op e emit_final w",
        "op c count e", "op t to_stream c", "op o unwindow t", "to o out",
        *(f"input in {k} 1 {ts}" for k, ts in _LATE)]
       for w in ("time_windows 10 10 2", "time_windows 10 5 2", "sliding_windows 10 2",
                 "session_windows 5 2") for c in (0, 10485760)},
    "cogroup": ["cache 0", "op a stream in0", "op b stream in1", "op ga group_by_key a",
                "op gb group_by_key b", "op c cogroup ga gb", "op t aggregate c st",
                "op o to_stream t", "to o out", "input in0 a 1 5", "input in1 a 2 3",
                "input in1 a ~ 9", "input in0 a 4 4", "store st kv"],
    "windowed cogroup": ["cache 0", "op a stream in0", "op b stream in1",
                         "op ga group_by_key a", "op gb group_by_key b", "op c cogroup ga gb",
                         "op w session_windows c 5 0", "op t aggregate w -", "op u to_stream t",
                         "op o unwindow u", "to o out", "input in0 a 1 5", "input in1 a 2 8",
                         "input in1 a 3 30", "input in0 a ~ 9"],
    "transform_values calls": ["cache 0", "op t table in st", "op u transform_values t",
                               "op g tgroup_by u key", "op c count g -", "op o to_stream c",
                               "to o out", "input in a 1 1", "input in a 2 2", "input in a ~ 3"],
    "versioned stream-table join": [
        "cache 0", "op s stream in0", "op t vtable in1 10", "op j left_join s t", "to j out",
        "input in1 a 2 10", "input in1 a 3 20", "input in1 a 5 15", "input in0 a 1 12",
        "input in0 a 1 16", "input in0 a 1 25", "input in0 a 1 5", "input in1 a 7 40",
        "input in1 a 0 25", "input in0 a 1 26"],
    "stream-table join with a grace period (Joined.with_grace_period)": [
        "cache 0", "op s stream in0", "op t vtable in1 100", "op j left_join s t 10", "to j out",
        "input in1 a 2 10", "input in0 a 1 12", "input in1 a 3 20", "input in0 b 4 11",
        "input in0 a 5 15", "input in1 a 5 14", "input in0 a 6 40", "input in0 a 7 5",
        "input in0 b 9 30", "input in1 b 1 1", "input in0 a ~ 50", "input in0 a 10 60"],
    "process_values and to_stream(mapper)": [
        "cache 0", "op s stream in", "op p process_values s", "op t to_table p st",
        "op o to_stream_by t flip", "to o out", "input in a 1 1", "input in b 2 2",
        "input in a ~ 3", "store st kv"],
    "table-table joins": [*_TABLE_JOIN, "op j touter_join l r", "op o to_stream j", "to o out",
                          "input in0 a 1 1", "input in1 a 2 2", "input in0 a ~ 3",
                          "input in1 a ~ 4", "input in1 b 5 5"],
    # issue 26 rule 1: emit-on-close sliding and session aggregations never cache their store
    # (SlidingWindowStoreMaterializer, SessionStoreMaterializer), so their close-time reads
    # apply the store's retention: d's window [0, 3] is past it when a@30 closes it
    "issue 26 rule 1 sliding emit-on-close never caches": [
        "cache 10485760", "op s stream in", "op g group_by_key s", "op w sliding_windows g 3 5",
        "op f emit_final w", "op c count f -", "op t to_stream c", "op o unwindow t", "to o out",
        "input in d 1 0", "input in a 1 30"],
    "issue 26 rule 1 session emit-on-close never caches": [
        "cache 10485760", "op s stream in", "op g group_by_key s",
        "op w session_windows g 5 10", "op f emit_final w", "op c count f -",
        "op t to_stream c", "op o unwindow t", "to o out",
        "input in a 1 1", "input in b 1 16", "input in a 1 6", "input in c 1 40"],
    # issue 26 rule 2: the record cache returns what it holds, also past the store's retention
    # (ThreadCache; CachingSessionStore / CachingWindowStore merge it over the store)
    "issue 26 rule 2 a cached session past retention still merges": [
        *_count("session_windows 5 10", cache=10485760)[:-1], "to o out",
        "input in a 1 1", "input in b 1 16", "input in a 1 6"],
    "issue 26 rule 2 a cached window past retention is still read": [
        *_count("time_windows 10 10 5", cache=10485760), "input in a 1 1", "input in b 1 30",
        "input in a 1 2", "store st window"],
    "issue 26 rule 2 a windowed cogroup input with a lagging stream time": [
        "cache 10485760", "op s0 stream in0", "op s1 stream in1", "op g0 group_by_key s0",
        "op g1 group_by_key s1", "op c cogroup g0 g1", "op w time_windows c 10 10 0",
        "op a aggregate w st", "op t to_stream a", "op o unwindow t", "to o out",
        "input in1 a 1 5", "input in0 a 1 30", "input in1 a 1 6", "store st window"],
    # issue 26 rule 3: Java's driver queues what the task writes to its own input topics on
    # each topic's partition and takes the next record from the partition whose head has the
    # lowest timestamp (PartitionGroup.nextRecord, a priority queue re-offered after each
    # record): equal timestamps alternate between repartition topics, a lower timestamp
    # written later goes first, and ties among more partitions follow the queue's heap
    "issue 26 rule 3 two repartitions into a cogroup alternate on equal timestamps": [
        "cache 0", "op s stream in", *_rekeyed("1", "s", True), *_rekeyed("2", "s", True),
        *_COGROUP, "input in a 1 5", "input in c 2 6"],
    "issue 26 rule 3 a lower timestamp written later is read back first": [
        "cache 0", "op s stream in", "op p process_values s", *_rekeyed("1", "p"),
        *_rekeyed("2", "s"), *_COGROUP, "input in a 1 5", "input in a 2 3", "input in c 3 1"],
    "issue 26 rule 3 a re-keyed stream joins a table from the same stream re-keyed later": [
        "cache 0", "op s stream in", "op p process_values s", "op k1 select_key p flip",
        "op t to_table k1 -", "op k2 select_key s flip", "op j left_join k2 t", "to j out",
        "input in a 1 5", "input in a 2 3", "input in c 3 9"],
    "issue 26 rule 3 four repartitions merged: ties in Java's priority-queue order": [
        *_merged_repartitions(4), "input in a 1 5", "input in c 3 6"],
    # a tombstone as old as a versioned table's latest value deletes it and leaves no
    # tombstone in history (RocksDBVersionedStore), so an older record put after it is the
    # latest (a and c); with a version before, that one still ends at the tombstone (b)
    "issue 26 rule 4 equal-timestamp tombstone in a versioned table, regrouped and counted": [
        "cache 0", "op t vtable in 100", "op g tgroup_by t key", "op c count g -",
        "op o to_stream c", "to o out",
        "input in a 1 10", "input in a ~ 10", "input in a 2 5", "input in b 1 10",
        "input in b 3 20", "input in b ~ 20", "input in b 2 15", "input in b 4 22",
        "input in c ~ 5", "input in c 1 10", "input in c ~ 10", "input in c 2 7",
        "input in c 3 3"],
    "issue 26 rule 4 equal-timestamp tombstone in a versioned table, stream-table join": [
        "cache 0", "op s stream in0", "op t vtable in1 100", "op j left_join s t", "to j out",
        "input in1 a 1 10", "input in1 a ~ 10", "input in1 a 2 5", "input in0 a 1 12",
        "input in0 a 2 7", "input in0 a 3 3", "input in1 b 1 10", "input in1 b 3 20",
        "input in1 b ~ 20", "input in1 b 2 15", "input in0 b 1 17", "input in0 b 2 25"],
    "issue 26 rule 4 equal-timestamp tombstone in a versioned table, table-table join": [
        "cache 0", "op l vtable in0 100", "op r table in1 -", "op j touter_join l r",
        "op o to_stream j", "to o out", "input in1 a 7 1", "input in0 a 1 10",
        "input in0 a ~ 10", "input in0 a 2 5", "input in0 b 5 30", "input in0 b ~ 30",
        "input in0 b ~ 30", "input in0 b 6 29"],
    # found by rule 4's generated inputs: a row a table mapper maps to None reads as missing,
    # timestamp included (KTableMapValues' getter, ValueAndTimestamp.make)
    "a row mapped to None joins without its timestamp": [
        *_TABLE_JOIN, "op m tmap_values l nul", "op j touter_join m r", "op o to_stream j",
        "to o out", "input in0 a 3 40", "input in1 a 1 33", "input in0 b 4 40",
        "input in1 b 1 33"],
    # Java's processReverse reads on past a record's left window to the next older one and
    # takes its newest timestamp as the previous record's: b@42's left window [32, 42] was
    # closed (stream time 45), so it lacks 42 and b@49 makes no right window [43, 53]
    "sliding windows: a closed left window leaves no right window for the next record": [
        "cache 0", "op v1 stream in0", "op v2 group_by_key v1", "op v3 sliding_windows v2 10 0",
        "op v4 aggregate v3 st0", "op v5 to_stream v4", "op v6 unwindow v5", "to v6 out",
        "input in0 b 3 38", "input in0 b 5 31", "input in0 c 0 45", "input in0 b 8 42",
        "input in0 b 3 49", "store st0 window"],
    # issue 54: changelogs in Kafka Streams' byte layouts (a Java application's restore in
    # kspark, and back): a timestamped value alone with its timestamp as the record's, a
    # window key's 4-byte sequence number, a session key (key, end, start)
    "changelog: a count's records are Java's bytes": [
        "cache 0", "op s stream in", "op g group_by_key s", "op c count g st",
        "op o to_stream c", "to o out", "input in a 1 1700000000000", "input in a 2 1700000000007",
        "input in b 2 1700000000003", "changelog st"],
    "changelog: a windowed count's keys carry Java's sequence number": [
        "cache 0", "op s stream in", "op g group_by_key s", "op w time_windows g 10 10 5",
        "op c count w st", "op t to_stream c", "op o unwindow t", "to o out", "input in a 1 5",
        "input in a 2 7", "input in b 2 19", "input in a 3 2", "changelog st"],
    "changelog: a session count merges and deletes as Java logs it": [
        "cache 0", "op s stream in", "op g group_by_key s", "op w session_windows g 10 5",
        "op c count w st", "op t to_stream c", "op o unwindow t", "to o out", "input in a 1 5",
        "input in a 2 7", "input in a 3 30", "changelog st"],
    "changelog: a materialized table source and a table aggregation": [
        "cache 0", "op t table in ts", "op g tgroup_by t mod", "op c count g st",
        "op o to_stream c", "to o out", "input in a 1 5", "input in b 2 6", "input in a 4 9",
        "input in a ~ 11", "changelog ts", "changelog st"],
    # a versioned store logs each put as Java does: key -> the value alone, at its
    # valid-from time, also a put too old to be kept and a tombstone
    "changelog: a versioned table logs each version": [
        "op t vtable in 10", "op o to_stream t", "to o out", "input in a 1 5",
        "input in a 2 30", "input in a 3 10", "input in a ~ 30", "input in b 2 6",
        "input in a 4 25", "input in b ~ 40", "changelog v-in"],
    # a suppress buffer logs at each commit, in Java's layout (record context, prior, old
    # and new values, buffer time; header v=3, no timestamp), its dirty keys in the order
    # of Java's HashSet (four keys evicted by one record here)
    "changelog: a suppress buffer logs Java's buffered records": [
        "cache 0", "op s stream in", "op g group_by_key s", "op w time_windows g 10 10 5",
        "op c count w st", "op u suppress c", "op t to_stream u", "op o unwindow t",
        "to o out", "input in a 1 5", "input in a 2 7", "input in b 2 19", "input in a 3 2",
        "input in c 3 12", "input in d 3 13", "input in b 4 14", "input in e 3 40",
        "changelog KTABLE-SUPPRESS-STATE-STORE-0000000003"],
    # until_time_limit buffers at the record's time; a full buffer emits its oldest early,
    # bounded in records or in Java's estimate of a buffered record's bytes
    **{f"changelog: a time-limited suppress bounded by {bound}": [
        "cache 0", "op s stream in", "op g group_by_key s", "op c count g",
        f"op u suppress_limit c 10 {bound}", "op o to_stream u", "to o out",
        "input in a 1 1", "input in b 1 2", "input in a 1 3", "input in c 1 4",
        "input in d 1 5", "input in b 1 6", "input in e 1 7", "input in a 1 20",
        "input in f 1 21", "input in g 1 40", "changelog KTABLE-SUPPRESS-STATE-STORE-0000000005"]
       for bound in ("2 -", "- 150", "3 200")},
    # suppress emits the new value with the old value of the last buffered change (Java's
    # BufferValue.oldValue, not the first one's): a filter passing only that old value
    # forwards a delete
    "suppress emits the last buffered change's old value": [
        "cache 10000", "op s stream in", "op g group_by_key s", "op w time_windows g 10 10 0",
        "op c count w", "op u suppress c", "op f tfilter u even", "op t to_stream f",
        "op o unwindow t", "to o out", "input in a 1 1", "input in a 2 2", "input in a 3 3",
        "input in b 1 4", "input in b 1 5", "input in c 1 30"],
    # a stream-stream join's window stores number every put as Java's changelog does (a
    # null value and an expired record are logged too); the outer join's shared store
    # deletes only what waits and holds Java's LeftOrRightValue list
    "changelog: an inner join's stores keep duplicates with Java's sequence numbers": [
        "op l stream in0", "op r stream in1", "op j join l r 5 10", "to j out",
        "input in0 a 1 5", "input in0 a ~ 5", "input in0 a 2 5", "input in1 a 3 5",
        "input in1 a 4 5", "input in0 b 4 100", "input in0 a 7 5", "input in0 a 8 6",
        "changelog KSTREAM-JOINTHIS-0000000004-store",
        "changelog KSTREAM-JOINOTHER-0000000005-store"],
    # a null value is logged with a sequence number but not stored, nor does it move the
    # window store's stream time: b@4 is still there for b@14 after a null at 31
    "changelog: a null value in a join window moves no stream time": [
        "op l stream in0", "op r stream in1", "op j join l r 10 -1", "to j out",
        "input in0 b 7 4", "input in0 a ~ 31", "input in1 b 1 14",
        "changelog KSTREAM-JOINTHIS-0000000004-store"],
    "changelog: an outer join's shared store in Java's layout": [
        "cache 0", "op l stream in0", "op r stream in1", "op j outer_join l r 5 2", "to j out",
        "input in0 a 1 5", "input in0 a 2 5", "input in1 a 2 6", "input in1 a 3 6",
        "input in0 a 4 7", "input in1 b 5 7", "input in0 b ~ 8", "input in0 c 6 30",
        "input in1 c 7 30", "changelog KSTREAM-OUTERTHIS-0000000004-store",
        "changelog KSTREAM-OUTEROTHER-0000000005-store",
        "changelog KSTREAM-OUTERSHARED-0000000004-store"],
}
