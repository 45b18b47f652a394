"""The Spark Connect glue that needs no server (``_spark/connect.py``): recognising a
Connect session and a Connect client's error, and the server's URL from the config or the
environment. Running on a server: ``tests/integration/test_spark_connect.py``."""

from kspark._spark.connect import is_connect, is_connect_error, remote_url


def test_the_config_names_the_server_before_the_environment():
    assert remote_url({"spark.remote": "sc://a:1"}, {"SPARK_REMOTE": "sc://b:2"}) == "sc://a:1"
    assert remote_url({}, {"SPARK_REMOTE": "sc://b:2"}) == "sc://b:2"
    assert remote_url({"spark.master": "local[2]"}, {}) is None


def test_a_connect_session_is_told_from_a_classic_one_by_its_class():
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert is_connect(object.__new__(ConnectSession))
    assert not is_connect(object())


def test_a_connect_clients_error_is_told_from_others():
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    assert is_connect_error(SparkConnectGrpcException("UNAVAILABLE"))
    assert not is_connect_error(RuntimeError("UNAVAILABLE"))
