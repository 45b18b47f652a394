"""examples/avro_registry.py runs against a broker and a Schema Registry and prints the big
orders it wrote, decoded (issue 41).

The example runs in this process on the session's SparkSession, with the session's broker
and registry given as its command-line arguments. ``runpy`` loads it under a module name
that is not left in ``sys.modules``, so Spark's workers get its dataclasses and functions by
value, as they do when the example runs as a script.
"""

from __future__ import annotations

import pathlib
import runpy

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "avro_registry.py"


def test_the_avro_example_prints_the_big_orders(broker, schema_registry, spark, capsys):
    example = runpy.run_path(str(EXAMPLE), run_name="avro_registry_example")
    assert example["main"](["--bootstrap-servers", broker,
                            "--schema-registry-url", schema_registry.url], spark=spark) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("produced 5 orders to orders-")
    assert "(Avro, schema id " in lines[0]
    assert lines[1].startswith("big orders in big-orders-")
    assert lines[2:] == [
        "ann: BigOrder(id='o-1', customer='ann', total=120.0)",
        "cy: BigOrder(id='o-3', customer='cy', total=125.0)",
        "dee: BigOrder(id='o-5', customer='dee', total=250.0)",
    ]
