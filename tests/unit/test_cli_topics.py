"""``kspark topics`` without a broker: the produce command's line format, the parser, and
where the commands find the cluster."""

import pytest

from kspark._cli.topics import BOOTSTRAP_ENV, default_bootstrap, parse_line
from kspark._cli.main import build_parser


def test_a_line_is_split_into_key_and_value_at_the_first_separator():
    assert parse_line('ann:{"page": "/docs", "duration_s": 90}\n', ":") == (
        "ann", '{"page": "/docs", "duration_s": 90}')
    assert parse_line("k:v\r\n", ":") == ("k", "v")
    assert parse_line(":v", ":") == ("", "v")  # an empty key is a key, as Kafka's
    assert parse_line("k:", ":") == ("k", "")


def test_a_line_without_the_separator_is_a_value_with_a_null_key():
    assert parse_line("just a value\n", ":") == (None, "just a value")
    assert parse_line("k:v", "") == (None, "k:v")  # --key-separator '': values only
    assert parse_line("k\tv:w", "\t") == ("k", "v:w")


def test_blank_lines_are_skipped():
    assert parse_line("\n", ":") is None
    assert parse_line("   \r\n", ":") is None


def test_the_topics_parser():
    p = build_parser()
    args = p.parse_args(["topics", "create", "a", "b", "--partitions", "3"])
    assert (args.action, args.names, args.partitions, args.bootstrap_servers) == (
        "create", ["a", "b"], 3, None)
    args = p.parse_args(["topics", "produce", "t", "--key-separator", "|", "--bootstrap", "h:1"])
    assert (args.name, args.key_separator, args.bootstrap_servers) == ("t", "|", "h:1")
    args = p.parse_args(["topics", "consume", "t", "--from-beginning", "--max", "2",
                         "--value-serde", "long"])
    assert (args.from_beginning, args.max, args.timeout, args.key_serde, args.value_serde) == (
        True, 2, 10.0, "string", "long")
    with pytest.raises(SystemExit):
        p.parse_args(["topics", "consume", "t", "--value-serde", "xml"])


def test_the_cluster_is_the_env_var_else_the_local_brokers(monkeypatch, tmp_path):
    monkeypatch.setenv(BOOTSTRAP_ENV, "elsewhere:9093")
    assert default_bootstrap() == "elsewhere:9093"
    monkeypatch.delenv(BOOTSTRAP_ENV)
    monkeypatch.setenv("KSPARK_HOME", str(tmp_path))  # no local broker runs there
    assert default_bootstrap() == "127.0.0.1:9092"
