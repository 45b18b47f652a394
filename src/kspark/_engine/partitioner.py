"""Kafka's default partitioner: murmur2 of the serialized key, as Java's producer computes it."""

from __future__ import annotations

__all__ = ["murmur2", "default_partition"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c) as a signed 32-bit int.

    Example:
        >>> murmur2(b"21"), murmur2(b"foobar")
        (-973932308, -790332482)
    """
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail, rem = length - length % 4, length % 4
    if rem == 3:
        h ^= data[tail + 2] << 16
    if rem >= 2:
        h ^= data[tail + 1] << 8
    if rem >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes | None, num_partitions: int, fallback: int = 0) -> int:
    """``toPositive(murmur2(key)) % num_partitions``; a null key goes to ``fallback``.

    Example:
        >>> default_partition(b"21", 3)
        0
    """
    if key is None:
        return fallback % num_partitions
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
