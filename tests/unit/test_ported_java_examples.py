"""Kafka Streams' own examples and TopologyTestDriver tests, ported line by line (issue 40).

Each test names its source: a test class of ``streams/examples`` (Apache Kafka 4.1) or an
example of the Kafka Streams documentation (``docs/streams/...``). The topology, the inputs
and the assertions are Java's, with only the syntax changed: ``Consumed.with(...)`` is
``Consumed.with_(...)``, ``Duration.ofMinutes(5)`` is ``timedelta(minutes=5)``, an
``Instant`` is a ``datetime``, a lambda is a lambda. Where the documentation describes the
output in prose or in a table rather than in an assertion, the expected output is computed
from the documented semantics, and a comment says so.

Deviations forced by a missing API are named where they happen (``API gap:``).
"""

import re
from datetime import datetime, timedelta, timezone

import pytest

from kspark import (
    BufferConfig,
    Branched,
    Consumed,
    Grouped,
    JoinWindows,
    KeyValue,
    Materialized,
    Named,
    Produced,
    Serdes,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TimeWindowedSerde,
    TimeWindows,
)
from kspark.processor import Processor, PunctuationType, Record, Topology
from kspark.state import Stores
from kspark.testing import TestRecord, TopologyTestDriver

STRING_SERDE = "org.apache.kafka.common.serialization.Serdes$StringSerde"  # StringSerde.class
LONG_SERDE = "org.apache.kafka.common.serialization.Serdes$LongSerde"


def java_split(regex, text):
    """Java's ``String.split(regex)``: trailing empty strings are dropped."""
    parts = re.split(regex, text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_str(value):
    """Java's string concatenation of a value: ``null`` for null."""
    return "null" if value is None else str(value)


# --- streams/examples: WordCountDemo and WordCountDemoTest ------------------------------------

INPUT_TOPIC = "streams-plaintext-input"
OUTPUT_TOPIC = "streams-wordcount-output"


def streams_config():
    """WordCountDemo.streamsConfig(null)."""
    return {
        "application.id": "streams-wordcount",
        "bootstrap.servers": "localhost:9092",
        "statestore.cache.max.bytes": 0,
        "default.key.serde": STRING_SERDE,
        "default.value.serde": STRING_SERDE,
        "auto.offset.reset": "earliest",
    }


def create_word_count_stream(builder):
    """WordCountDemo.createWordCountStream(builder)."""
    source = builder.stream(INPUT_TOPIC)

    counts = (source
              .flat_map_values(lambda value: java_split(r"\W+", value.lower()))
              .group_by(lambda key, value: value)
              .count())

    # need to override value serde to Long type
    counts.to_stream().to(OUTPUT_TOPIC, Produced.with_(Serdes.String(), Serdes.Long()))


@pytest.fixture
def word_count_demo():
    """WordCountDemoTest.setup()."""
    builder = StreamsBuilder()
    create_word_count_stream(builder)
    test_driver = TopologyTestDriver(builder.build(), streams_config())
    input_topic = test_driver.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.String())
    output_topic = test_driver.create_output_topic(OUTPUT_TOPIC, Serdes.String(), Serdes.Long())
    yield input_topic, output_topic
    test_driver.close()


def test_word_count_demo__test_one_word(word_count_demo):
    # streams/examples/.../wordcount/WordCountDemoTest.java, testOneWord()
    input_topic, output_topic = word_count_demo
    # Feed word "Hello" to inputTopic and no kafka key, timestamp is irrelevant in this case
    input_topic.pipe_input("Hello")
    # Read and validate output to match word as key and count as value
    assert output_topic.read_key_value() == KeyValue("hello", 1)
    # No more output in topic
    assert output_topic.is_empty() is True


def test_word_count_demo__test_count_list_of_words(word_count_demo):
    # streams/examples/.../wordcount/WordCountDemoTest.java, testCountListOfWords()
    input_topic, output_topic = word_count_demo
    input_values = [
        "Apache   Kafka Streams   Example",
        "Using  \t\t Kafka   Streams\tTest Utils",
        "Reading and Writing Kafka Topic",
    ]
    expected_word_counts = {}
    expected_word_counts["apache"] = 1
    expected_word_counts["kafka"] = 3
    expected_word_counts["streams"] = 2
    expected_word_counts["example"] = 1
    expected_word_counts["using"] = 1
    expected_word_counts["test"] = 1
    expected_word_counts["utils"] = 1
    expected_word_counts["reading"] = 1
    expected_word_counts["and"] = 1
    expected_word_counts["writing"] = 1
    expected_word_counts["topic"] = 1

    input_topic.pipe_value_list(input_values)
    actual_word_counts = output_topic.read_key_values_to_map()
    assert actual_word_counts == expected_word_counts
    # (testStreamsConfig(), the third test, checks WordCountDemo's loading of a properties
    # file given on its command line: a main() concern, not a topology's; not ported.)


# --- streams/examples: WordCountProcessorDemo and WordCountProcessorTest -----------------------

class WordCountProcessor(Processor):
    """WordCountProcessorDemo.WordCountProcessor (its System.out lines left out)."""

    def init(self, context):
        def punctuate(timestamp):
            with self.kv_store.all() as iter_:
                while iter_.has_next():
                    entry = next(iter_)
                    context.forward(Record(entry.key, str(entry.value), timestamp))

        context.schedule(timedelta(seconds=1), PunctuationType.STREAM_TIME, punctuate)
        self.kv_store = context.get_state_store("Counts")

    def process(self, record):
        words = java_split(r"\W+", record.value.lower())

        for word in words:
            old_value = self.kv_store.get(word)

            if old_value is None:
                self.kv_store.put(word, 1)
            else:
                self.kv_store.put(word, old_value + 1)


def test_word_count_processor__test():
    # streams/examples/.../wordcount/WordCountProcessorTest.java, test()
    # API gap: kspark.testing has no MockProcessorContext (nor its forwarded() and
    # scheduledPunctuators()). Java's test-utils docs recommend "a simple topology with your
    # processor and the TopologyTestDriver" for punctuations, which is what this does: the
    # topology of WordCountProcessorDemo.main(), the store without logging as in the test.
    # Its stream-time punctuation fires at the first record (stream time 0), as Java's
    # (StreamTask aligns STREAM_TIME schedules to 0): that is the test's punctuate(0L).
    builder = Topology()
    builder.add_source("Source", INPUT_TOPIC)
    builder.add_processor("Process", WordCountProcessor, "Source")
    builder.add_state_store(Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("Counts"),
        Serdes.String(),
        Serdes.Integer()).with_logging_disabled(),  # as the test's store
        "Process")
    builder.add_sink("Sink", "streams-wordcount-processor-output", "Process")

    props = {"default.key.serde": STRING_SERDE, "default.value.serde": STRING_SERDE}
    with TopologyTestDriver(builder, props) as driver:
        inputs = driver.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.String())
        forwarded = driver.create_output_topic("streams-wordcount-processor-output",
                                               Serdes.String(), Serdes.String())
        # send a record to the processor (its punctuation follows at stream time 0)
        inputs.pipe_input(TestRecord("key", "alpha beta\tgamma\n\talpha", 0))

        # finally, we can verify the output.
        expected = [
            TestRecord("alpha", "2", 0),
            TestRecord("beta", "1", 0),
            TestRecord("gamma", "1", 0),
        ]
        assert forwarded.read_records_to_list() == expected


# --- streams/examples: WordCountTransformerDemo and WordCountTransformerTest -------------------

class MyProcessorSupplier:
    """WordCountTransformerDemo.MyProcessorSupplier: ``get()`` and ``stores()``."""

    def get(self):
        class _Processor(Processor):
            def init(self, context):
                def punctuate(timestamp):
                    with self.kv_store.all() as iter_:
                        while iter_.has_next():
                            entry = next(iter_)
                            context.forward(Record(entry.key, str(entry.value), timestamp))

                context.schedule(timedelta(seconds=1), PunctuationType.STREAM_TIME, punctuate)
                self.kv_store = context.get_state_store("Counts")

            def process(self, record):
                words = java_split(r"\W+", record.value.lower())

                for word in words:
                    old_value = self.kv_store.get(word)

                    if old_value is None:
                        self.kv_store.put(word, 1)
                    else:
                        self.kv_store.put(word, old_value + 1)

        return _Processor()

    def stores(self):
        return {Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("Counts"),
            Serdes.String(),
            Serdes.Integer())}


def test_word_count_transformer__test():
    # streams/examples/.../wordcount/WordCountTransformerTest.java, test()
    # API gap: no MockProcessorContext (see test_word_count_processor__test); and
    # KStream.process() takes a callable, not a ProcessorSupplier object, and does not read
    # a supplier's stores() (Java's ConnectedStoreProvider): the supplier's stores are
    # added with add_state_store and named in process(), and process() is given supplier.get.
    supplier = MyProcessorSupplier()
    builder = StreamsBuilder()
    for store_builder in supplier.stores():
        builder.add_state_store(store_builder.with_logging_disabled())  # as the test's
    (builder.stream(INPUT_TOPIC)
            .process(supplier.get, "Counts")
            .to("streams-wordcount-processor-output"))

    props = {"default.key.serde": STRING_SERDE, "default.value.serde": STRING_SERDE}
    with TopologyTestDriver(builder.build(), props) as driver:
        inputs = driver.create_input_topic(INPUT_TOPIC, Serdes.String(), Serdes.String())
        captured_forwards = driver.create_output_topic("streams-wordcount-processor-output",
                                                       Serdes.String(), Serdes.String())
        # send a record to the transformer (its punctuation follows at stream time 0)
        record = TestRecord("key", "alpha beta\tgamma\n\talpha", 0)
        inputs.pipe_input(record)

        # finally, we can verify the output.
        expected = [
            TestRecord("alpha", "2", 0),
            TestRecord("beta", "1", 0),
            TestRecord("gamma", "1", 0),
        ]
        assert captured_forwards.read_records_to_list() == expected


# --- streams/examples: TemperatureDemo and TemperatureDemoTest ---------------------------------

TEMPERATURE_THRESHOLD = 20
TEMPERATURE_WINDOW_SIZE = 5


def build_temperature_topology(input_topic_name, output_topic_name):
    """TemperatureDemoTest.buildTemperatureTopology()."""
    duration24_hours = timedelta(hours=24)
    builder = StreamsBuilder()

    source = builder.stream(input_topic_name)

    max_ = (source
            # temperature values are sent without a key (null), so in order
            # to group and reduce them, a key is needed ("temp" has been chosen)
            .select_key(lambda key, value: "temp")
            .group_by_key()
            .windowed_by(TimeWindows.of_size_and_grace(timedelta(seconds=TEMPERATURE_WINDOW_SIZE),
                                                       duration24_hours))
            .reduce(lambda value1, value2: value1 if int(value1) > int(value2) else value2)
            .to_stream()
            .filter(lambda key, value: int(value) > TEMPERATURE_THRESHOLD))

    # WindowedSerdes.timeWindowedSerdeFrom(String.class, TEMPERATURE_WINDOW_SIZE)
    # API gap: there is no WindowedSerdes factory; TimeWindowedSerde(inner, size) is its serde.
    windowed_serde = TimeWindowedSerde(Serdes.String(), TEMPERATURE_WINDOW_SIZE)

    # need to override key serde to Windowed<String> type
    max_.to(output_topic_name, Produced.with_(windowed_serde, Serdes.String()))

    return builder.build()


@pytest.fixture
def temperature_demo():
    """TemperatureDemoTest.setup()."""
    props = {
        "application.id": "temperature-demo-test",
        "bootstrap.servers": "dummy:1234",
        "default.key.serde": STRING_SERDE,
        "default.value.serde": STRING_SERDE,
        "auto.offset.reset": "earliest",
        "statestore.cache.max.bytes": 0,
    }
    topology = build_temperature_topology("iot-temperature", "iot-temperature-max")
    test_driver = TopologyTestDriver(topology, props)
    input_topic = test_driver.create_input_topic("iot-temperature", Serdes.String(),
                                                 Serdes.String())
    windowed_serde = TimeWindowedSerde(Serdes.String(), TEMPERATURE_WINDOW_SIZE)
    output_topic = test_driver.create_output_topic("iot-temperature-max", windowed_serde,
                                                   Serdes.String())
    yield input_topic, output_topic
    test_driver.close()


def test_temperature_demo__should_compute_max_temperature_in_window(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java,
    # shouldComputeMaxTemperatureInWindow()
    input_topic, output_topic = temperature_demo
    base_time = datetime.fromtimestamp(0, timezone.utc)  # Instant.ofEpochMilli(0)
    input_records = [
        TestRecord(None, "15", base_time),
        TestRecord(None, "25", base_time + timedelta(milliseconds=1000)),
        TestRecord(None, "18", base_time + timedelta(milliseconds=2000)),
        TestRecord(None, "30", base_time + timedelta(milliseconds=3000)),
        TestRecord(None, "22", base_time + timedelta(milliseconds=4000)),
    ]

    input_topic.pipe_record_list(input_records)

    output_records = output_topic.read_records_to_list()
    assert output_records, "Should have output records"
    found_max = False
    for record in output_records:
        if record.value == "30":
            found_max = True
            assert record.key.key == "temp", "Key should be 'temp'"
            break
    assert found_max, "Should find max temperature 30 in output"


def test_temperature_demo__should_filter_temperatures_below_threshold(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java,
    # shouldFilterTemperaturesBelowThreshold()
    input_topic, output_topic = temperature_demo
    base_time = datetime.fromtimestamp(0, timezone.utc)
    input_records = [
        TestRecord(None, "10", base_time),
        TestRecord(None, "15", base_time + timedelta(milliseconds=1000)),
        TestRecord(None, "18", base_time + timedelta(milliseconds=2000)),
        TestRecord(None, "19", base_time + timedelta(milliseconds=3000)),
    ]

    input_topic.pipe_record_list(input_records)

    output_records = output_topic.read_records_to_list()
    assert not output_records, ("Should have no output records when all temperatures are "
                                "below threshold")


def test_temperature_demo__should_output_only_when_max_exceeds_threshold(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java,
    # shouldOutputOnlyWhenMaxExceedsThreshold()
    input_topic, output_topic = temperature_demo
    base_time = datetime.fromtimestamp(0, timezone.utc)
    input_records = [
        TestRecord(None, "15", base_time),
        TestRecord(None, "25", base_time + timedelta(milliseconds=1000)),  # Above threshold
        TestRecord(None, "18", base_time + timedelta(milliseconds=2000)),
        TestRecord(None, "21", base_time + timedelta(milliseconds=3000)),  # Above threshold
    ]

    input_topic.pipe_record_list(input_records)

    # Then - should output max value (25) since it exceeds threshold
    output_records = output_topic.read_records_to_list()
    assert output_records, "Should have output records"
    found_correct_max = False
    for record in output_records:
        if record.value == "25":
            found_correct_max = True
            break
    assert found_correct_max, "Should output max temperature 25"


def test_temperature_demo__should_handle_different_time_windows(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java,
    # shouldHandleDifferentTimeWindows()
    input_topic, output_topic = temperature_demo
    base_time = datetime.fromtimestamp(0, timezone.utc)
    input_records = [
        # First window (0-5 seconds)
        TestRecord(None, "25", base_time),
        TestRecord(None, "30", base_time + timedelta(milliseconds=2000)),
        # Second window (5-10 seconds)
        TestRecord(None, "22", base_time + timedelta(milliseconds=6000)),
        TestRecord(None, "35", base_time + timedelta(milliseconds=8000)),
    ]

    input_topic.pipe_record_list(input_records)

    output_records = output_topic.read_records_to_list()
    assert output_records, "Should have output records"
    found_first_window_max = False
    found_second_window_max = False
    for record in output_records:
        if record.value == "30":
            found_first_window_max = True
        if record.value == "35":
            found_second_window_max = True
    assert found_first_window_max, "Should find max from first window (30)"
    assert found_second_window_max, "Should find max from second window (35)"


def test_temperature_demo__should_handle_invalid_temperature_values(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java,
    # shouldHandleInvalidTemperatureValues()
    input_topic, output_topic = temperature_demo
    base_time = datetime.fromtimestamp(0, timezone.utc)

    # Send some valid temperatures first (Java: an epoch-millis long, then an Instant)
    input_topic.pipe_input(None, "25", int(base_time.timestamp() * 1000))
    input_topic.pipe_input(None, "30", base_time + timedelta(milliseconds=1000))

    # Then - should have processed valid temperatures
    output_records = output_topic.read_records_to_list()
    assert output_records, "Should have processed valid temperatures"
    found_valid_max = False
    for record in output_records:
        if record.value == "30":
            found_valid_max = True
            break
    assert found_valid_max, "Should process valid temperature values"


def test_temperature_demo__should_process_empty_input(temperature_demo):
    # streams/examples/.../temperature/TemperatureDemoTest.java, shouldProcessEmptyInput()
    _, output_topic = temperature_demo
    # Given - no input records; Then - should handle gracefully with no output
    output_records = output_topic.read_records_to_list()
    assert not output_records, "Should have no output records for empty input"


# --- docs/streams/developer-guide/testing.html (DeveloperGuideTesting.java) --------------------

class CustomMaxAggregator(Processor):
    """The guide's CustomMaxAggregator: the maximum per key, flushed by punctuations."""

    def init(self, context):
        self.context = context
        context.schedule(timedelta(seconds=60), PunctuationType.WALL_CLOCK_TIME, self.flush_store)
        context.schedule(timedelta(seconds=10), PunctuationType.STREAM_TIME, self.flush_store)
        self.store = context.get_state_store("aggStore")

    def process(self, record):
        old_value = self.store.get(record.key)
        if old_value is None or record.value > old_value:
            self.store.put(record.key, record.value)

    def flush_store(self, timestamp):
        with self.store.all() as it:
            while it.has_next():
                next_ = next(it)
                self.context.forward(Record(next_.key, next_.value, timestamp))


@pytest.fixture
def developer_guide_testing():
    """DeveloperGuideTesting.setup(): its driver, topics and pre-populated store."""
    topology = Topology()
    topology.add_source("sourceProcessor", "input-topic")
    topology.add_processor("aggregator", CustomMaxAggregator, "sourceProcessor")
    topology.add_state_store(
        Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("aggStore"),
            Serdes.String(),
            # need to disable logging to allow store pre-populating
            Serdes.Long()).with_logging_disabled(),
        "aggregator")
    topology.add_sink("sinkProcessor", "result-topic", "aggregator")

    # setup test driver
    props = {}
    props["default.key.serde"] = STRING_SERDE
    props["default.value.serde"] = LONG_SERDE
    test_driver = TopologyTestDriver(topology, props)

    # setup test topics
    input_topic = test_driver.create_input_topic("input-topic", Serdes.String(), Serdes.Long())
    output_topic = test_driver.create_output_topic("result-topic", Serdes.String(),
                                                   Serdes.Long())

    # pre-populate store
    store = test_driver.get_key_value_store("aggStore")
    store.put("a", 21)
    yield test_driver, input_topic, output_topic, store
    test_driver.close()


def test_developer_guide_testing__should_flush_store_for_first_input(developer_guide_testing):
    # docs/streams/developer-guide/testing.html (DeveloperGuideTesting.java),
    # shouldFlushStoreForFirstInput()
    _, input_topic, output_topic, _ = developer_guide_testing
    input_topic.pipe_input("a", 1)
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty() is True


def test_developer_guide_testing__should_not_update_store_for_smaller_value(
        developer_guide_testing):
    # testing.html (DeveloperGuideTesting.java), shouldNotUpdateStoreForSmallerValue()
    _, input_topic, output_topic, store = developer_guide_testing
    input_topic.pipe_input("a", 1)
    assert store.get("a") == 21
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty() is True


def test_developer_guide_testing__should_not_update_store_for_larger_value(
        developer_guide_testing):
    # testing.html (DeveloperGuideTesting.java), shouldNotUpdateStoreForLargerValue()
    _, input_topic, output_topic, store = developer_guide_testing
    input_topic.pipe_input("a", 42)
    assert store.get("a") == 42
    assert output_topic.read_key_value() == KeyValue("a", 42)
    assert output_topic.is_empty() is True


def test_developer_guide_testing__should_update_store_for_new_key(developer_guide_testing):
    # testing.html (DeveloperGuideTesting.java), shouldUpdateStoreForNewKey()
    _, input_topic, output_topic, store = developer_guide_testing
    input_topic.pipe_input("b", 21)
    assert store.get("b") == 21
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.read_key_value() == KeyValue("b", 21)
    assert output_topic.is_empty() is True


def test_developer_guide_testing__should_punctuate_if_even_time_advances(
        developer_guide_testing):
    # testing.html (DeveloperGuideTesting.java), shouldPunctuateIfEvenTimeAdvances()
    _, input_topic, output_topic, _ = developer_guide_testing
    record_time = datetime.now(timezone.utc)  # Instant.now()
    input_topic.pipe_input("a", 1, record_time)
    assert output_topic.read_key_value() == KeyValue("a", 21)

    input_topic.pipe_input("a", 1, record_time)
    assert output_topic.is_empty() is True

    input_topic.pipe_input("a", 1, record_time + timedelta(seconds=10))
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty() is True


def test_developer_guide_testing__should_punctuate_if_wall_clock_time_advances(
        developer_guide_testing):
    # testing.html (DeveloperGuideTesting.java), shouldPunctuateIfWallClockTimeAdvances()
    test_driver, _, output_topic, _ = developer_guide_testing
    test_driver.advance_wall_clock_time(timedelta(seconds=60))
    assert output_topic.read_key_value() == KeyValue("a", 21)
    assert output_topic.is_empty() is True


# --- streams/examples: PipeDemo ------------------------------------------------------------------

def test_pipe_demo__pipes_each_record_unchanged():
    # streams/examples/.../pipe/PipeDemo.java (no Java test: the expected output is computed
    # from the documented semantics of stream().to(): each record, key and value unchanged)
    props = {}
    props["application.id"] = "streams-pipe"
    props["bootstrap.servers"] = "localhost:9092"
    props["default.key.serde"] = STRING_SERDE
    props["default.value.serde"] = STRING_SERDE
    props["auto.offset.reset"] = "earliest"

    builder = StreamsBuilder()

    builder.stream("streams-plaintext-input").to("streams-pipe-output")

    with TopologyTestDriver(builder.build(), props) as driver:
        inputs = driver.create_input_topic("streams-plaintext-input", Serdes.String(),
                                           Serdes.String())
        outputs = driver.create_output_topic("streams-pipe-output", Serdes.String(),
                                             Serdes.String())
        inputs.pipe_value_list(["all streams lead to kafka", "hello kafka streams"])
        inputs.pipe_input("k", "join kafka summit", 5)
        assert outputs.read_records_to_list() == [
            TestRecord(None, "all streams lead to kafka", 0),
            TestRecord(None, "hello kafka streams", 0),
            TestRecord("k", "join kafka summit", 5),
        ]


# --- docs/streams/quickstart.html: the WordCount demo's gist and its console output -------------

def test_quickstart__word_count_output():
    # docs/streams/quickstart.html, "Step 5: Process some data": the three lines typed into
    # the console producer, and what the console consumer prints after the last one (the
    # demo runs with WordCountDemo's config: no record cache, so every update is written)
    builder = StreamsBuilder()

    # Serializers/deserializers (serde) for String and Long types
    string_serde = Serdes.String()
    long_serde = Serdes.Long()

    # Construct a `KStream` from the input topic "streams-plaintext-input", where message values
    # represent lines of text (for the sake of this example, we ignore whatever may be stored
    # in the message keys).
    text_lines = builder.stream(
        "streams-plaintext-input",
        Consumed.with_(string_serde, string_serde),
    )

    word_counts = (text_lines
                   # Split each text line, by whitespace, into words.
                   .flat_map_values(lambda value: java_split(r"\W+", value.lower()))
                   # Group the text words as message keys
                   .group_by(lambda key, value: value)
                   # Count the occurrences of each word (message key).
                   .count())

    # Store the running counts as a changelog stream to the output topic.
    word_counts.to_stream().to("streams-wordcount-output",
                               Produced.with_(Serdes.String(), Serdes.Long()))

    with TopologyTestDriver(builder.build(), streams_config()) as driver:
        producer = driver.create_input_topic("streams-plaintext-input", string_serde,
                                             string_serde)
        consumer = driver.create_output_topic("streams-wordcount-output", string_serde,
                                              long_serde)
        producer.pipe_input("all streams lead to kafka")
        producer.pipe_input("hello kafka streams")
        producer.pipe_input("join kafka summit")
        assert consumer.read_key_values_to_list() == [
            ("all", 1), ("streams", 1), ("lead", 1), ("to", 1), ("kafka", 1),
            ("hello", 1), ("kafka", 2), ("streams", 2),
            ("join", 1), ("kafka", 3), ("summit", 1),
        ]


# --- docs/streams/developer-guide/dsl-api.html ---------------------------------------------------

NO_CACHE = {"statestore.cache.max.bytes": 0}  # the guide's tables show every update


def test_dsl_api__stream_aggregation_semantics():
    # dsl-api.html, "Aggregating", "Example of semantics for stream aggregations": its code and
    # its table (input record per timestamp; the "KTable aggregated" state after each),
    # checked on the store after each record
    builder = StreamsBuilder()
    # Key: word, value: count
    word_counts = builder.stream("word-counts", Consumed.with_(Serdes.String(), Serdes.Integer()))

    grouped_stream = word_counts.group_by_key(Grouped.with_(Serdes.String(), Serdes.Integer()))

    aggregated = grouped_stream.aggregate(  # noqa: F841 - the guide's name
        lambda: 0,  # initializer
        lambda agg_key, new_value, agg_value: agg_value + new_value,  # adder
        Materialized.as_("aggregated-stream-store")  # state store name
        .with_key_serde(Serdes.String())  # key serde
        .with_value_serde(Serdes.Integer()))  # serde for aggregate value

    table = [  # timestamp, input record, state
        (1, ("hello", 1), {"hello": 1}),
        (2, ("kafka", 1), {"hello": 1, "kafka": 1}),
        (3, ("streams", 1), {"hello": 1, "kafka": 1, "streams": 1}),
        (4, ("kafka", 1), {"hello": 1, "kafka": 2, "streams": 1}),
        (5, ("kafka", 1), {"hello": 1, "kafka": 3, "streams": 1}),
        (6, ("streams", 1), {"hello": 1, "kafka": 3, "streams": 2}),
    ]
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        inputs = driver.create_input_topic("word-counts", Serdes.String(), Serdes.Integer())
        store = driver.get_key_value_store("aggregated-stream-store")
        for timestamp, (key, value), state in table:
            inputs.pipe_input(key, value, timestamp)
            with store.all() as rows:
                assert {row.key: row.value for row in rows} == state, timestamp


def test_dsl_api__table_aggregation_semantics():
    # dsl-api.html, "Aggregating", "Example of semantics for table aggregations": its code and
    # its table, checked on the store after each record. The guide's groupBy(selector,
    # Serdes.String(), Serdes.Integer()) is the removed pre-2.1 form of
    # groupBy(selector, Grouped.with(...)), written here as in Kafka 4.1.
    builder = StreamsBuilder()
    # Key: username, value: user region (abbreviated to "E" for "Europe", "A" for "Asia")
    user_profiles = builder.table("user-profiles", Consumed.with_(Serdes.String(),
                                                                  Serdes.String()))

    # Re-group `userProfiles`.  Don't read too much into what the grouping does:
    # its prime purpose in this example is to show the *effects* of the grouping
    # in the subsequent aggregation.
    grouped_table = user_profiles.group_by(
        lambda user, region: KeyValue.pair(region, len(user)),
        Grouped.with_(Serdes.String(), Serdes.Integer()))

    aggregated = grouped_table.aggregate(  # noqa: F841 - the guide's name
        lambda: 0,  # initializer
        lambda agg_key, new_value, agg_value: agg_value + new_value,  # adder
        lambda agg_key, old_value, agg_value: agg_value - old_value,  # subtractor
        Materialized.as_("aggregated-table-store")  # state store name
        .with_key_serde(Serdes.String())  # key serde
        .with_value_serde(Serdes.Integer()))  # serde for aggregate value

    table = [  # timestamp, input record, state
        (1, ("alice", "E"), {"E": 5}),
        (2, ("bob", "A"), {"A": 3, "E": 5}),
        (3, ("charlie", "A"), {"A": 10, "E": 5}),
        (4, ("alice", "A"), {"A": 15, "E": 0}),
        (5, ("charlie", None), {"A": 8, "E": 0}),
        (6, (None, "E"), {"A": 8, "E": 0}),  # ignored: a null key
        (7, ("bob", "E"), {"A": 5, "E": 3}),
    ]
    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        inputs = driver.create_input_topic("user-profiles", Serdes.String(), Serdes.String())
        store = driver.get_key_value_store("aggregated-table-store")
        for timestamp, (key, value), state in table:
            inputs.pipe_input(key, value, timestamp)
            with store.all() as rows:
                assert {row.key: row.value for row in rows} == state, timestamp


def joiner(left_value, right_value):
    """The joins' ValueJoiner: ``[left, right]``, as the guide's semantics tables write the
    arguments it is called with."""
    return f"[{java_str(left_value)}, {java_str(right_value)}]"


# The guide's semantics tables of the joins: (timestamp, side, value), one key for all.
JOIN_INPUTS = [
    (1, "left", None), (2, "right", None), (3, "left", "A"), (4, "right", "a"),
    (5, "left", "B"), (6, "right", "b"), (7, "left", None), (8, "right", None),
    (9, "left", "C"), (10, "right", "c"), (11, "right", None), (12, "left", None),
    (13, "right", None), (14, "right", "d"), (15, "left", "D"),
]


def _pipe_join_inputs(driver, rows, unit_ms=1):
    left = driver.create_input_topic("left", Serdes.String(), Serdes.String())
    right = driver.create_input_topic("right", Serdes.String(), Serdes.String())
    for timestamp, side, value in rows:
        (left if side == "left" else right).pipe_input("k", value, timestamp * unit_ms)


STREAM_STREAM_EXPECTED = {  # the guide's table, each kind's column, in order
    "join": ["[A, a]", "[B, a]", "[A, b]", "[B, b]", "[C, a]", "[C, b]",
             "[A, c]", "[B, c]", "[C, c]", "[A, d]", "[B, d]", "[C, d]",
             "[D, a]", "[D, b]", "[D, c]", "[D, d]"],
}
STREAM_STREAM_EXPECTED["left_join"] = STREAM_STREAM_EXPECTED["join"] + ["[E, null]", "[F, null]"]
# The guide's table ends the OUTER JOIN column with [null, f] at timestamp 100. Java 4.1
# does not emit it there: a record's window counts as open while its timestamp + window +
# grace >= stream time (KStreamKStreamJoin.isOuterJoinWindowOpen), and 80 + 15 + 5 = 100.
# Java 4.1.1's TopologyTestDriver (the tests/conformance reference, run on these inputs)
# emits the LEFT JOIN column for the outer join too, and so does kspark; [null, f] comes with
# the first record after 100 (the last input below).
STREAM_STREAM_EXPECTED["outer_join"] = STREAM_STREAM_EXPECTED["left_join"]


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_dsl_api__kstream_kstream_join_semantics(kind):
    # dsl-api.html, "KStream-KStream Join": the example's join and the table "Semantics of
    # stream-stream joins" (window 15 s with a 5 s grace; the table's timestamps in seconds).
    # The guide's example passes Joined.with(...), which Kafka 4.1 no longer accepts there:
    # StreamJoined.with(...) is its form.
    builder = StreamsBuilder()
    left = builder.stream("left", Consumed.with_(Serdes.String(), Serdes.String()))
    right = builder.stream("right", Consumed.with_(Serdes.String(), Serdes.String()))
    joined = getattr(left, kind)(
        right,
        joiner,  # ValueJoiner
        JoinWindows.of_time_difference_and_grace(timedelta(seconds=15), timedelta(seconds=5)),
        StreamJoined.with_(
            Serdes.String(),  # key
            Serdes.String(),  # left value
            Serdes.String()))  # right value
    joined.to("joined", Produced.with_(Serdes.String(), Serdes.String()))

    rows = JOIN_INPUTS + [(40, "left", "E"), (60, "left", "F"), (80, "right", "f"),
                          (100, "left", "G")]
    with TopologyTestDriver(builder.build()) as driver:
        _pipe_join_inputs(driver, rows, unit_ms=1000)
        out = driver.create_output_topic("joined", Serdes.String(), Serdes.String())
        assert out.read_values_to_list() == STREAM_STREAM_EXPECTED[kind]
        driver.create_input_topic("left", Serdes.String(), Serdes.String()).pipe_input(
            "k", "H", 101 * 1000)
        assert out.read_values_to_list() == (["[null, f]"] if kind == "outer_join" else [])


TABLE_TABLE_EXPECTED = {  # the guide's table, each kind's column (None: a tombstone)
    "join": ["[A, a]", "[B, a]", "[B, b]", None, "[C, c]", None, "[D, d]"],
    "left_join": ["[A, null]", "[A, a]", "[B, a]", "[B, b]", None, "[C, null]", "[C, c]",
                  "[C, null]", None, "[D, d]"],
    "outer_join": ["[A, null]", "[A, a]", "[B, a]", "[B, b]", "[null, b]", None, "[C, null]",
                   "[C, c]", "[C, null]", None, "[null, d]", "[D, d]"],
}


@pytest.mark.parametrize("kind", ["join", "left_join", "outer_join"])
def test_dsl_api__ktable_ktable_join_semantics(kind):
    # dsl-api.html, "KTable-KTable Equi-Join": the example's join and the table "Semantics of
    # table-table equi-joins" (a "null" result there: a tombstone of the result table)
    builder = StreamsBuilder()
    left = builder.table("left", Consumed.with_(Serdes.String(), Serdes.String()))
    right = builder.table("right", Consumed.with_(Serdes.String(), Serdes.String()))
    joined = getattr(left, kind)(right, joiner)  # ValueJoiner
    joined.to_stream().to("joined", Produced.with_(Serdes.String(), Serdes.String()))

    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        _pipe_join_inputs(driver, JOIN_INPUTS)
        out = driver.create_output_topic("joined", Serdes.String(), Serdes.String())
        assert out.read_values_to_list() == TABLE_TABLE_EXPECTED[kind]


STREAM_TABLE_EXPECTED = {
    "join": ["[B, a]", "[D, d]"],
    "left_join": ["[A, null]", "[B, a]", "[C, null]", "[D, d]"],
}


@pytest.mark.parametrize("kind", ["join", "left_join"])
def test_dsl_api__kstream_ktable_join_semantics(kind):
    # dsl-api.html, "KStream-KTable Join": the example's join and the table "Semantics of
    # stream-table joins"
    builder = StreamsBuilder()
    left = builder.stream("left", Consumed.with_(Serdes.String(), Serdes.String()))
    right = builder.table("right", Consumed.with_(Serdes.String(), Serdes.String()))
    joined = getattr(left, kind)(right, joiner)  # ValueJoiner
    joined.to("joined", Produced.with_(Serdes.String(), Serdes.String()))

    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        _pipe_join_inputs(driver, JOIN_INPUTS)
        out = driver.create_output_topic("joined", Serdes.String(), Serdes.String())
        assert out.read_values_to_list() == STREAM_TABLE_EXPECTED[kind]


FOREIGN_KEY_EXPECTED = {  # the guide's table, (key, "left,right" or None: a tombstone)
    "join": [("k", "1,foo"), ("k", None), ("k", None), ("k", "3,bar"), ("k", None),
             ("k", "1,foo"), ("q", "10,baz"), ("r", "10,baz")],
    "left_join": [("k", "1,foo"), ("k", "2,null"), ("k", "3,null"), ("k", "3,bar"),
                  ("k", None), ("k", "1,foo"), ("q", "10,null"), ("r", "10,null"),
                  ("q", "10,baz"), ("r", "10,baz")],
}


@pytest.mark.parametrize("kind", ["join", "left_join"])
def test_dsl_api__ktable_ktable_foreign_key_join_semantics(kind):
    # dsl-api.html, "KTable-KTable Foreign-Key Join": the example (left KTable<String, Long>,
    # right KTable<Long, ...>, foreignKeyExtractor x -> x) and the table "Semantics of
    # table-table foreign-key joins", in offset order. Row 1 has a record on each side and
    # only the joined result, so the right one comes first; row 5's (k,null) is a tombstone
    # of the left row (its value is the foreign key), so both joins delete the result.
    builder = StreamsBuilder()
    left = builder.table("left", Consumed.with_(Serdes.String(), Serdes.Long()))
    right = builder.table("right", Consumed.with_(Serdes.Long(), Serdes.String()))
    # This foreignKeyExtractor simply uses the left-value to map to the right-key.
    foreign_key_extractor = lambda x: x  # noqa: E731 - the guide's Function variable
    joined = getattr(left, kind)(
        right, foreign_key_extractor,
        lambda left_value, right_value: f"{java_str(left_value)},{java_str(right_value)}")
    joined.to_stream().to("joined", Produced.with_(Serdes.String(), Serdes.String()))

    with TopologyTestDriver(builder.build(), NO_CACHE) as driver:
        lefts = driver.create_input_topic("left", Serdes.String(), Serdes.Long())
        rights = driver.create_input_topic("right", Serdes.Long(), Serdes.String())
        rights.pipe_input(1, "foo")
        lefts.pipe_input("k", 1)
        lefts.pipe_input("k", 2)
        lefts.pipe_input("k", 3)
        rights.pipe_input(3, "bar")
        lefts.pipe_input("k", None)
        lefts.pipe_input("k", 1)
        lefts.pipe_input("q", 10)
        lefts.pipe_input("r", 10)
        rights.pipe_input(10, "baz")
        out = driver.create_output_topic("joined", Serdes.String(), Serdes.String())
        assert out.read_key_values_to_list() == FOREIGN_KEY_EXPECTED[kind]


def test_dsl_api__window_final_results():
    # dsl-api.html, "Window Final Results": an hourly count with a 10-minute grace,
    # suppressed until the window closes, alerting users with fewer than three events.
    # The expected output follows the guide's prose: "if user U gets 10 events between 09:00
    # and 10:10, the filter downstream of the suppression will get no events for the windowed
    # key U@09:00-10:00 until 10:10, and then it will get exactly one with the value 10."
    alerts, seen_by_filter = [], []

    def send_alert(window, key, count):
        alerts.append((window, key, count))

    builder = StreamsBuilder()
    grouped = builder.stream("events", Consumed.with_(Serdes.String(),
                                                      Serdes.String())).group_by_key()
    (grouped
        .windowed_by(TimeWindows.of_size_and_grace(timedelta(hours=1), timedelta(minutes=10)))
        .count()
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .filter(lambda windowed_user_id, count: seen_by_filter.append(
            (windowed_user_id.key, count)) or count < 3)
        .to_stream()
        .foreach(lambda windowed_user_id, count: send_alert(windowed_user_id.window,
                                                            windowed_user_id.key, count)))

    nine = datetime(2024, 5, 6, 9, tzinfo=timezone.utc)
    with TopologyTestDriver(builder.build()) as driver:
        events = driver.create_input_topic("events", Serdes.String(), Serdes.String())
        for minute in range(0, 48, 6):  # 8 events of U between 09:00 and 10:00
            events.pipe_input("U", "click", nine + timedelta(minutes=minute))
        events.pipe_input("V", "click", nine + timedelta(minutes=5))
        events.pipe_input("V", "click", nine + timedelta(minutes=50))
        events.pipe_input("W", "click", nine + timedelta(minutes=65))  # stream time 10:05
        for _ in range(2):  # 2 more of U, late but within the grace period
            events.pipe_input("U", "click", nine + timedelta(minutes=59))
        assert seen_by_filter == []  # nothing before the window closes
        events.pipe_input("W", "click", nine + timedelta(minutes=70))  # 10:10: it closes
        # one record per window (the change to 10, and to 2); as Java's KTableFilter over a
        # materialized table, the predicate also reads the change's old value: the count
        # before the last buffered update (Java's BufferValue.oldValue)
        assert sorted(seen_by_filter) == [("U", 9), ("U", 10), ("V", 1), ("V", 2)]
        nine_ms = int(nine.timestamp() * 1000)
        assert [(w.start, w.end, key, count) for w, key, count in alerts] == [
            (nine_ms, nine_ms + 3_600_000, "V", 2)]


def test_dsl_api__split_branches():
    # dsl-api.html, "Stateless transformations", "Branch": the example, with the records each
    # branch "contains" (its comments) written to a topic per branch
    builder = StreamsBuilder()
    stream = builder.stream("numbers", Consumed.with_(Serdes.String(), Serdes.Long()))
    branches = (stream.split(Named.as_("Branch-"))
                .branch(lambda key, value: key.startswith("A"),  # first predicate
                        Branched.as_("A"))
                .branch(lambda key, value: key.startswith("B"),  # second predicate
                        Branched.as_("B"))
                .default_branch(Branched.as_("C")))  # default branch
    # KStream branches.get("Branch-A") contains all records whose keys start with "A"
    # KStream branches.get("Branch-B") contains all records whose keys start with "B"
    # KStream branches.get("Branch-C") contains all other records
    for name in ("Branch-A", "Branch-B", "Branch-C"):
        branches.get(name).to(name, Produced.with_(Serdes.String(), Serdes.Long()))

    with TopologyTestDriver(builder.build()) as driver:
        numbers = driver.create_input_topic("numbers", Serdes.String(), Serdes.Long())
        numbers.pipe_key_value_list([KeyValue.pair("Anna", 1), KeyValue.pair("Bob", 2),
                                     KeyValue.pair("Carl", 3), KeyValue.pair("Alan", 4),
                                     KeyValue.pair("Bea", 5)])
        read = {name: driver.create_output_topic(name, Serdes.String(), Serdes.Long())
                .read_key_values_to_list() for name in ("Branch-A", "Branch-B", "Branch-C")}
        assert read == {"Branch-A": [("Anna", 1), ("Alan", 4)],
                        "Branch-B": [("Bob", 2), ("Bea", 5)],
                        "Branch-C": [("Carl", 3)]}


def test_dsl_api__flat_map_and_flat_map_values():
    # dsl-api.html, "Stateless transformations": the FlatMap example, whose comment gives its
    # output, "(345L, "Hello") -> ("HELLO", 1000), ("hello", 9000)", and the FlatMapValues
    # example that splits a sentence into words (output by String.split semantics)
    builder = StreamsBuilder()
    stream = builder.stream("greetings", Consumed.with_(Serdes.Long(), Serdes.String()))
    transformed = stream.flat_map(
        # Here, we generate two output records for each input record.
        # We also change the key and value types.
        # Example: (345L, "Hello") -> ("HELLO", 1000), ("hello", 9000)
        lambda key, value: [KeyValue.pair(value.upper(), 1000),
                            KeyValue.pair(value.lower(), 9000)])
    transformed.to("transformed", Produced.with_(Serdes.String(), Serdes.Integer()))

    # Split a sentence into words.
    sentences = builder.stream("sentences", Consumed.with_(Serdes.ByteArray(), Serdes.String()))
    words = sentences.flat_map_values(lambda value: java_split(r"\s+", value))
    words.to("words", Produced.with_(Serdes.ByteArray(), Serdes.String()))

    with TopologyTestDriver(builder.build()) as driver:
        driver.create_input_topic("greetings", Serdes.Long(), Serdes.String()).pipe_input(
            345, "Hello")
        driver.create_input_topic("sentences", Serdes.ByteArray(), Serdes.String()).pipe_input(
            b"id-1", "all streams  lead\tto kafka")
        assert driver.create_output_topic("transformed", Serdes.String(), Serdes.Integer()) \
            .read_key_values_to_list() == [("HELLO", 1000), ("hello", 9000)]
        assert driver.create_output_topic("words", Serdes.ByteArray(), Serdes.String()) \
            .read_key_values_to_list() == [(b"id-1", w) for w in
                                           ("all", "streams", "lead", "to", "kafka")]
