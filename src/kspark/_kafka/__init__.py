"""Kafka clients, admin helpers and the local broker kspark manages."""
