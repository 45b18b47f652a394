"""``kspark reset``'s offset-reset scenarios (``_control/reset_plan.py``), rule by rule, as
Java's ``StreamsResetter`` reads and applies them; and the CLI's options (``_cli/reset.py``)."""

from __future__ import annotations

import pytest

from kspark._cli.main import build_parser
from kspark._cli.reset import reset_options
from kspark._control.reset_plan import (
    Scenario,
    choose_scenario,
    make_scenario,
    parse_datetime,
    parse_duration,
    parse_offsets_file,
    plan_offsets,
)
from kspark.errors import KSparkError

A0, A1 = ("a", 0), ("a", 1)
EARLIEST = {A0: 10, A1: 0}
LATEST = {A0: 50, A1: 20}


def _plan(scenario: Scenario, current=None, by_time=None, start_at="earliest"):
    return plan_offsets([A0, A1], scenario, current=current or {}, earliest=EARLIEST,
                        latest=LATEST, by_time=by_time, start_at=start_at)


def test_earliest_and_latest_are_the_log_bounds():
    assert _plan(Scenario())[0] == EARLIEST
    assert _plan(Scenario("latest"))[0] == LATEST


def test_shift_by_moves_the_committed_offset_clamped_at_both_ends():
    offsets, notes = _plan(Scenario("shift", -15), current={A0: 30, A1: 5})
    assert offsets == {A0: 15, A1: 0}
    assert notes == {A1: "5 - 15 = -10 is before the log start 0"}
    offsets, notes = _plan(Scenario("shift", 25), current={A0: 30, A1: 5})
    assert offsets == {A0: 50, A1: 20}
    assert notes[A0] == "30 + 25 = 55 is past the log end 50"


def test_shift_by_without_a_committed_offset_starts_where_the_application_would():
    assert _plan(Scenario("shift", 3))[0] == {A0: 13, A1: 3}
    assert _plan(Scenario("shift", -3), start_at="latest")[0] == {A0: 47, A1: 17}


def test_to_offset_is_clamped_to_each_log():
    offsets, notes = _plan(Scenario("offset", 15))
    assert offsets == {A0: 15, A1: 15}
    assert _plan(Scenario("offset", 5))[0] == {A0: 10, A1: 5}
    assert _plan(Scenario("offset", 99))[1][A1] == "--to-offset 99 is past the log end 20"


def test_time_scenarios_take_the_first_record_at_the_time_else_the_end():
    offsets, notes = _plan(Scenario("datetime", 0), by_time={A0: 12, A1: None})
    assert offsets == {A0: 12, A1: 20}
    assert notes == {A1: "no record at or after 1970-01-01T00:00:00.000+00:00: the log's end"}


def test_from_file_offsets_are_clamped_and_name_their_line():
    offsets, lines = parse_offsets_file("a,0,5\na,1,7\n", "f.csv")
    got, notes = _plan(Scenario("file", offsets, "--from-file f.csv", lines))
    assert got == {A0: 10, A1: 7}
    assert notes == {A0: "5 (line 1) is before the log start 10"}


@pytest.mark.parametrize("text, ms", [
    ("2024-03-01T12:00:00.250", 1709294400250),           # no zone: UTC, as Java
    ("2024-03-01T12:00:00.250Z", 1709294400250),
    ("2024-03-01T13:00:00.250+01:00", 1709294400250),     # XXX
    ("2024-03-01T13:00:00.250+0100", 1709294400250),      # XX (and Z)
    ("2024-03-01T13:00:00.250+01", 1709294400250),        # X
    ("2024-03-01T07:30:00.250-04:30", 1709294400250),
])
def test_datetime_formats_and_zones_are_javas(text, ms):
    assert parse_datetime(text) == ms


@pytest.mark.parametrize("text", [
    "2024-03-01 12:00:00.000",          # no T
    "2024-03-01T12:00:00",              # the milliseconds are required
    "2024-03-01T12:00:00.123456",       # microseconds: Java refuses them too
    "2024-03-01T12:00:00.000+1",
])
def test_datetime_other_formats_are_refused_with_the_format(text):
    with pytest.raises(KSparkError, match="YYYY-MM-DDTHH:mm:SS.sss"):
        parse_datetime(text)


def test_datetime_out_of_range_fields_are_refused_not_rolled_over():
    with pytest.raises(KSparkError, match="is no date and time"):
        parse_datetime("2024-02-30T12:00:00.000")


@pytest.mark.parametrize("text, ms", [
    ("PT1H", 3_600_000), ("P1D", 86_400_000), ("P1DT1H1M1.5S", 90_061_500),
    ("pt30m", 1_800_000), ("-PT1S", -1000), ("PT-0.5S", -500), ("PT1,25S", 1250),
    ("P-1DT24H", 0),
])
def test_duration_is_parsed_as_javas_duration_parse(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "1H", "PT1H30", "P1W", "PT1.5M", ""])
def test_duration_other_forms_are_refused_with_an_example(text):
    with pytest.raises(KSparkError, match="PnDTnHnMnS, e.g. PT1H"):
        parse_duration(text)


def test_by_duration_moves_back_from_now():
    s = make_scenario("--by-duration", "PT1M", now_ms=100_000, read_text=str)
    assert (s.kind, s.value, s.option) == ("duration", 40_000, "--by-duration PT1M")


def test_from_file_reads_csv_lines_ignoring_blank_lines_and_spaces():
    offsets, lines = parse_offsets_file("a,0,5\r\n\n b , 2 , -1 \n", "f.csv")
    assert offsets == {("a", 0): 5, ("b", 2): -1}
    assert lines == {("a", 0): 1, ("b", 2): 3}


@pytest.mark.parametrize("text, error", [
    ("a,0,5\na,1\n", r"f.csv line 2 \('a,1'\) is not TOPIC,PARTITION,OFFSET"),
    ("a,0,5,6\n", "line 1 .* is not TOPIC,PARTITION,OFFSET"),
    (",0,5\n", "line 1 .* is not TOPIC,PARTITION,OFFSET"),
    ("a,0,5\n\na,x,5\n", "line 3 .*partition and the offset must be whole numbers"),
    ("a,0,five\n", "line 1 .*whole numbers"),
    ("a,-1,5\n", "line 1 .*partition -1 is negative"),
    ("a,0,5\na,0,6\n", r"line 2 .*repeats topic 'a' partition 0 \(line 1\)"),
    ("\n\n", "f.csv is empty"),
])
def test_from_file_bad_lines_are_named_by_line_number(text, error):
    with pytest.raises(KSparkError, match=error):
        parse_offsets_file(text, "f.csv")


def test_from_file_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(KSparkError, match="--from-file .*missing.csv.* cannot be read"):
        make_scenario("--from-file", str(tmp_path / "missing.csv"), now_ms=0,
                      read_text=lambda p: open(p).read())


def test_one_offset_reset_option_at_a_time():
    assert choose_scenario({"--to-latest": False, "--to-offset": None}) == ("--to-earliest", True)
    with pytest.raises(KSparkError, match="not --to-offset and --shift-by"):
        choose_scenario({"--to-offset": 0, "--shift-by": -1})


@pytest.mark.parametrize("flags", [["--to-offset", "1", "--shift-by", "2"],
                                   ["--to-latest", "--by-duration", "PT1H"],
                                   ["--from-file", "f", "--to-datetime", "x"]])
def test_the_cli_refuses_two_offset_reset_options(flags, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reset", "--application-id", "a", *flags])
    assert "not allowed with argument" in capsys.readouterr().err


def _options(*flags, config=None):
    args = build_parser().parse_args(["reset", "--application-id", "a", *flags])
    return reset_options(args, config or {"state.dir": "/s"}, now_ms=1000)


def test_cli_options_become_the_plan_arguments(tmp_path):
    f = tmp_path / "plan.csv"
    f.write_text("a,0,3\n")
    o = _options("--from-file", str(f), "--internal-topics", "a-x-changelog", "--force")
    assert o["scenario"].kind == "file" and o["scenario"].value == {("a", 0): 3}
    assert (o["internal_topics"], o["force"], o["state_dir"]) == (["a-x-changelog"], True, "/s")
    assert _options("--to-datetime", "1970-01-01T00:00:01.000Z")["scenario"].value == 1000
    assert _options(config={"auto.offset.reset": "latest"})["start_at"] == "latest"


def test_delete_stopoffsets_stays_alone():
    with pytest.raises(KSparkError, match="give it alone"):
        _options("--delete-stopoffsets", "--shift-by", "1")
    with pytest.raises(KSparkError, match="give it alone"):
        _options("--delete-stopoffsets", "--internal-topics", "x")
