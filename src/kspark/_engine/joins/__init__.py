"""Joins: a stream against a KTable or GlobalKTable (``stream_table``), two KTables
(``table_table``), two streams within a join window (``stream_stream``), and foreign-key
table joins as Kafka Streams runs them, through two internal topics (``foreign_key``,
``fk_wire``)."""
