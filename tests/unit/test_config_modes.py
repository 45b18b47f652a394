"""Every config key declares the execution modes it applies to (``ConfigKey.modes``), and a
key given for the other mode's use alone is refused when the config is built, in both
directions, never silently ignored.

A new key in kspark/config.py must declare its modes and be listed below: the first tests
fail until it is."""

import pytest

from kspark import KafkaStreams, StreamsBuilder, StreamsConfig
from kspark.config import BOTH, CONFIG_KEYS, MICRO_BATCH, MODES, REAL_TIME
from kspark.errors import ConfigError, KSparkError
from kspark.serde._registry_keys import registry_config
from kspark.testing import TopologyTestDriver

# key -> a value it accepts (what the refusal tests give)
MICRO_BATCH_ONLY = {
    "max.offsets.per.trigger": 100,  # real_time threads poll continuously
    "checkpoint.location": "/tmp/kspark-checkpoint",  # real_time keeps progress in Kafka alone
    "placement.replacement.wait.ms": 0,  # real_time places threads at each epoch's start
    "delayed.records.check.interval.ms": 100,  # real_time fires them on the wall clock
}
REAL_TIME_ONLY = {
    "real_time.epoch.ms": 60_000,
    "num.stream.threads": 2,
    "repartition.purge.interval.ms": 1000,  # micro_batch does not purge repartition records
}
BOTH_MODES = {"application.id", "bootstrap.servers", "state.dir", "commit.interval.ms",
              "processing.guarantee", "default.key.serde", "default.value.serde",
              "default.timestamp.extractor", "deserialization.exception.handler",
              "production.exception.handler", "errors.dead.letter.queue.topic.name",
              "processing.exception.handler",
              "statestore.cache.max.bytes", "replication.factor", "request.timeout.ms",
              "async.max.in.flight", "global.consumer.auto.offset.reset", "autostop.at",
              "execution.mode", "source.read.timeout.ms", "task.timeout.ms",
              "retry.backoff.ms", "auto.offset.reset", "max.task.idle.ms"}
# standby replicas and warm-up (KIP-441): kept by the stream threads or, in micro-batch
# mode, by rounds of updates between the batches
BOTH_MODES |= {"num.standby.replicas", "acceptable.recovery.lag", "max.warmup.replicas",
               "probing.rebalance.interval.ms", "rack.aware.assignment.tags",
               "ensure.explicit.internal.resource.naming", "topology.optimization",
               "batch.aggregation.enabled"}
BOTH_MODES |= {k[0] for k in registry_config()}  # the Schema Registry serdes' keys
BOTH_MODES |= {"metrics.recording.level", "metrics.http.port", "metrics.http.host"}
BOTH_MODES |= {"sink.trigger.interval.ms"}  # the Spark sinks' queries run in both modes
BOTH_MODES |= {"query.endpoint.enabled", "query.endpoint.host",
               "query.timeout.ms"}  # interactive queries, answered by tasks in either mode
BOTH_MODES |= {"query.endpoint.ssl.certfile", "query.endpoint.ssl.keyfile",  # their TLS
               "query.endpoint.ssl.keyfile.password", "query.endpoint.ssl.cafile"}

BASE = {"application.id": "app", "bootstrap.servers": "localhost:9092"}
OTHER = {MICRO_BATCH: REAL_TIME, REAL_TIME: MICRO_BATCH}


def _config(mode: str, **extra) -> StreamsConfig:
    return StreamsConfig({**BASE, "execution.mode": mode, **extra})


def test_every_declared_key_declares_the_modes_it_applies_to():
    unclassified = sorted(n for n, k in CONFIG_KEYS.items() if k.modes is None)
    assert unclassified == [], "declare modes= on these keys in kspark/config.py"
    bad = {n: k.modes for n, k in CONFIG_KEYS.items()
           if not k.modes or not set(k.modes) <= set(MODES) or len(set(k.modes)) != len(k.modes)}
    assert bad == {}, "modes must be BOTH or one of MODES"


def test_every_declared_key_is_classified_here_as_in_config():
    here = {**{k: BOTH for k in BOTH_MODES}, **{k: (MICRO_BATCH,) for k in MICRO_BATCH_ONLY},
            **{k: (REAL_TIME,) for k in REAL_TIME_ONLY}}
    assert len(here) == len(BOTH_MODES) + len(MICRO_BATCH_ONLY) + len(REAL_TIME_ONLY)
    assert sorted(set(CONFIG_KEYS) - set(here)) == [], "classify the new key(s) above"
    assert sorted(set(here) - set(CONFIG_KEYS)) == []
    declared = {n: tuple(sorted(k.modes or ())) for n, k in CONFIG_KEYS.items()}
    assert declared == {n: tuple(sorted(m)) for n, m in here.items()}


@pytest.mark.parametrize("key", sorted(REAL_TIME_ONLY))
def test_a_real_time_key_set_under_micro_batch_is_refused_naming_key_and_both_modes(key):
    with pytest.raises(ConfigError) as e:
        _config(MICRO_BATCH, **{key: REAL_TIME_ONLY[key]})
    assert str(e.value) == (f"{key} applies to execution.mode=real_time only; this "
                            "application runs micro_batch: remove it or set "
                            "execution.mode=real_time")


@pytest.mark.parametrize("key", sorted(MICRO_BATCH_ONLY))
def test_a_micro_batch_key_set_under_real_time_is_refused_naming_key_and_both_modes(key):
    with pytest.raises(ConfigError) as e:
        _config(REAL_TIME, **{key: MICRO_BATCH_ONLY[key]})
    assert str(e.value) == (f"{key} applies to execution.mode=micro_batch only; this "
                            "application runs real_time: remove it or set "
                            "execution.mode=micro_batch")


def test_a_micro_batch_key_is_refused_under_the_default_mode_too():
    # the default is real_time: a micro-batch key without execution.mode is refused
    with pytest.raises(ConfigError, match="max.offsets.per.trigger applies to "
                                          "execution.mode=micro_batch only; this application "
                                          "runs real_time"):
        StreamsConfig({**BASE, "max.offsets.per.trigger": 2})


def test_a_mode_only_key_is_accepted_in_its_own_mode(execution_mode):
    own = MICRO_BATCH_ONLY if execution_mode == MICRO_BATCH else REAL_TIME_ONLY
    c = _config(execution_mode, **own)
    assert all(c[k] == v and c.is_set(k) for k, v in own.items())


def test_the_other_modes_keys_keep_their_defaults_unrefused_when_not_given(execution_mode):
    c = _config(execution_mode)
    other = MICRO_BATCH_ONLY if execution_mode == REAL_TIME else REAL_TIME_ONLY
    assert all(c[k] == CONFIG_KEYS[k].default and not c.is_set(k) for k in other)


def test_a_key_given_as_a_string_from_a_properties_file_is_refused_alike():
    with pytest.raises(ConfigError, match="real_time.epoch.ms applies to"):
        StreamsConfig({**BASE, "execution.mode": "micro_batch", "real_time.epoch.ms": "1000"})


def test_switching_the_mode_with_with_values_refuses_the_old_modes_keys():
    c = _config(MICRO_BATCH, **{"max.offsets.per.trigger": 10})
    with pytest.raises(ConfigError, match="max.offsets.per.trigger applies to "
                                          "execution.mode=micro_batch only"):
        c.with_values({"execution.mode": REAL_TIME})


def test_the_refusal_is_a_kspark_config_error_raised_by_kafka_streams_and_the_driver():
    b = StreamsBuilder()
    b.stream("in").to("out")
    assert issubclass(ConfigError, KSparkError)
    with pytest.raises(ConfigError, match="placement.replacement.wait.ms applies to"):
        KafkaStreams(b.build(), {**BASE, "execution.mode": REAL_TIME,
                                 "placement.replacement.wait.ms": 0})
    with pytest.raises(ConfigError, match="max.offsets.per.trigger applies to"):
        TopologyTestDriver(b.build(), {"max.offsets.per.trigger": 1})
