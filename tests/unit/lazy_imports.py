"""The kspark modules imported inside a function (lazy imports), each with why it must wait.

tests/unit/test_import_cycles.py fails on a lazy import of a kspark module missing here, and
on an entry no longer made. Hoist an import to the top of its module unless one of these
reasons holds; a reason is ``<kind>: <why>``, its kind one of ``REASONS``.
"""

REASONS = {
    "start-up": "importing it loads pyspark, confluent_kafka or many modules that the importer "
                "(kspark.testing, the DSL, the CLI, Spark's planning processes) does not need",
    "heavy": "a third-party library that costs import time and is needed on one path only",
    "optional dependency": "a package of an extra (kspark[delta]) that may not be installed",
    "cycle": "the modules import each other: the DSL's types (ALLOWED_GROUPS), and DSL "
             "modules whose package (kspark.dsl's __init__) imports the importer",
    "test seam": "tests patch the name in its module, so it is looked up when called",
}

# (importing module, imported module): reason
LAZY_IMPORTS = {
    ("kspark._cli.main", "kspark._cli.properties"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.topics", "kspark._cli.properties"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.registry", "kspark._local.broker_process"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.registry", "kspark._local.registry"):
        "test seam: tests patch the name in its module, so it is looked up when called",
    ("kspark._cli.store", "kspark._iq.client"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.store", "kspark._iq.tls"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.store", "kspark._kafka.settings"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.store", "kspark._cli.run"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.topics", "kspark._kafka.admin"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.topics", "kspark._local.broker"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.topics", "kspark._kafka.factory"):
        "test seam: tests patch the name in its module, so it is looked up when called",
    ("kspark._cli.topics", "kspark._kafka.settings"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.topics", "kspark.serde"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._engine.state.changelog_format", "kspark._engine.state.buffer_value"):
        "heavy: orjson load only when used",
    ("kspark._engine.state.metered", "kspark._engine.state.session"):
        "heavy: orjson load only when used",
    ("kspark._engine.state.metered", "kspark._engine.state.window"):
        "heavy: orjson load only when used",
    ("kspark._host.context", "kspark._host.restore"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._iq.interactive", "kspark._iq.client"): "heavy: orjson load only when used",
    ("kspark._iq.interactive", "kspark._iq.facade"): "heavy: orjson load only when used",
    ("kspark._iq.interactive", "kspark._iq.global_copy"):
        "start-up: importing it loads confluent_kafka (an admin client), which kspark.testing "
        "must not load; only a read of a global store needs it",
    ("kspark._iq.host", "kspark._graph.instantiate"): "heavy: orjson load only when used",
    ("kspark._iq.host", "kspark._iq.messages"): "heavy: orjson load only when used",
    ("kspark._interop.columns", "kspark.serde._registry_types"):
        "heavy: orjson load only when used",
    ("kspark._plan.describe", "kspark._kafka.admin"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._cli.run", "kspark.streams"):
        "test seam: tests patch the name in its module, so it is looked up when called",
    ("kspark._spark.globals", "kspark._host.restore"):
        "test seam: tests patch the name in its module, so it is looked up when called",
    ("kspark._spark.modes", "kspark._spark.micro_batch"): "heavy: pyarrow load only when used",
    ("kspark._spark.modes", "kspark._spark.planner"): "heavy: pyarrow load only when used",
    ("kspark._spark.modes", "kspark._spark.realtime.query"): "heavy: pyarrow load only when used",
    ("kspark._spark.modes", "kspark._spark.source"): "heavy: pyarrow load only when used",
    ("kspark._spark.read_topic", "kspark._graph.instantiate"): "heavy: orjson load only when used",
    ("kspark._spark.read_topic", "kspark.config"): "heavy: orjson load only when used",
    ("kspark._spark.realtime.batch_end", "kspark._host.restore"):
        "heavy: orjson load only when used",
    ("kspark._spark.realtime.global_feed", "kspark._spark.globals"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._spark.realtime.thread_jobs", "kspark._spark.located"):
        "start-up: pyspark loads only when Spark is used",
    ("kspark._spark.realtime.thread_jobs", "kspark._spark.probe"):
        "start-up: pyspark loads only when Spark is used",
    ("kspark._spark.session", "kspark._spark.source"): "heavy: pyarrow load only when used",
    ("kspark._spark.session", "kspark._spark.wire"): "heavy: pyarrow load only when used",
    ("kspark._spark.sink_writers", "kspark._spark.checkpoint"):
        "start-up: pyspark loads only when Spark is used",
    ("kspark._spark.source", "kspark._kafka.admin"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._spark.source", "kspark._kafka.range_reader"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._spark.standby_rounds", "kspark._host.standby"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._spark.topic_source", "kspark._kafka.admin"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._spark.topic_source", "kspark._kafka.range_reader"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark._cli.main", "kspark._kafka.admin"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._local.broker"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._local.cluster"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._kafka.clients"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._local.jars"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._kafka.rebuild"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._control.reset"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._kafka.settings"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._plan.describe"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark._cli.run"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark.config"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark.demo.run"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark._cli.main", "kspark.errors"):
        "start-up: the CLI loads a command's modules only when that command runs",
    ("kspark.demo.run", "kspark._kafka.admin"):
        "start-up: confluent_kafka loads only when a Kafka client is made",
    ("kspark.dsl._aggregation", "kspark.dsl._forms"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl._aggregation", "kspark.dsl.ktable"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl._forms", "kspark.dsl._overloads"):
        "cycle: importing kspark.dsl._overloads runs kspark.dsl's __init__, which imports _forms",
    ("kspark.dsl._forms", "kspark.dsl.global_table"):
        "cycle: importing kspark.dsl.global_table runs kspark.dsl's __init__, which imports _forms",
    ("kspark.dsl._forms", "kspark.dsl.kstream"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl._forms", "kspark.dsl.ktable"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl._join_steps", "kspark.dsl._stream_joins"):
        "cycle: "
        "importing kspark.dsl._stream_joins runs kspark.dsl's __init__, which imports _join_steps",
    ("kspark.dsl._join_steps", "kspark.dsl.joined"):
        "cycle: importing kspark.dsl.joined runs kspark.dsl's __init__, which imports _join_steps",
    ("kspark.dsl._join_steps", "kspark.dsl.kstream"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.branched", "kspark.dsl._overloads"):
        "cycle: importing kspark.dsl._overloads runs kspark.dsl's __init__, which imports branched",
    ("kspark.dsl.branched", "kspark.dsl.kstream"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.builder", "kspark.dsl.global_table"):
        "cycle: "
        "importing kspark.dsl.global_table runs kspark.dsl's __init__, which imports builder",
    ("kspark.dsl.builder", "kspark.dsl.ktable"):
        "cycle: importing kspark.dsl.ktable runs kspark.dsl's __init__, which imports builder",
    ("kspark.dsl.builder", "kspark.dsl.materialized"):
        "cycle: "
        "importing kspark.dsl.materialized runs kspark.dsl's __init__, which imports builder",
    ("kspark.dsl.builder", "kspark.dsl.topic_options"):
        "cycle: "
        "importing kspark.dsl.topic_options runs kspark.dsl's __init__, which imports builder",
    ("kspark.dsl.grouped", "kspark.dsl.cogrouped"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.grouped_table", "kspark.dsl.ktable"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.kstream", "kspark.dsl.branched"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.kstream", "kspark.dsl.grouped"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.kstream", "kspark.dsl.ktable"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.kstream", "kspark.dsl.materialized"):
        "cycle: "
        "importing kspark.dsl.materialized runs kspark.dsl's __init__, which imports kstream",
    ("kspark.dsl.kstream", "kspark.dsl.named"):
        "cycle: importing kspark.dsl.named runs kspark.dsl's __init__, which imports kstream",
    ("kspark.dsl.kstream", "kspark.dsl.topic_options"):
        "cycle: "
        "importing kspark.dsl.topic_options runs kspark.dsl's __init__, which imports kstream",
    ("kspark.dsl.ktable", "kspark.dsl._foreign_key"):
        "cycle: importing kspark.dsl._foreign_key runs kspark.dsl's __init__, which imports ktable",
    ("kspark.dsl.ktable", "kspark.dsl.kstream"):
        "cycle: the DSL's types name one another (allowed group)",
    ("kspark.dsl.ktable", "kspark.dsl.named"):
        "cycle: importing kspark.dsl.named runs kspark.dsl's __init__, which imports ktable",
    ("kspark.spark", "kspark._spark.read_topic"): "start-up: pyspark loads only when Spark is used",
    ("kspark.streams", "kspark._client.metrics_endpoint"):
        "heavy: prometheus_client load only when used",
    ("kspark.streams", "kspark._spark.app"): "start-up: pyspark loads only when Spark is used",
    ("kspark.streams", "kspark._spark.session"): "start-up: pyspark loads only when Spark is used",
    ("kspark.testing.driver", "kspark._interop.rows"): "heavy: pyarrow load only when used",
}
