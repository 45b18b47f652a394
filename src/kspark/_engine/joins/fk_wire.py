"""A foreign-key join's messages and keys, byte for byte as Kafka Streams 4.1 writes them.

- ``SubscriptionWrapper`` (the subscription-registration topic, and after the timestamp
  the subscription store's values): a byte ``version`` (its top bit set when there is no
  hash), the instruction byte, the 128-bit Murmur3 hash of the left row's serialized
  value (two big-endian longs, left out when the row is deleted), the serialized left key,
  then (version 1, as 4.1 writes) the left record's partition in 4 bytes;
- ``CombinedKey`` (the subscription store's keys): the serialized foreign key's length in 4
  bytes, the foreign key, then the serialized left key;
- ``SubscriptionResponseWrapper`` (the subscription-response topic): the version byte (top
  bit: no hash), the hash, then the serialized foreign value (nothing for none).

Keys travel here serialized: the processors serialize and deserialize them with the
tables' serdes.

Example:
    >>> s = Subscription((1, 2), PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, b"k", 0)
    >>> encode_subscription(s).hex()
    '0103000000000000000100000000000000026b00000000'
    >>> decode_subscription(encode_subscription(s)) == s
    True
    >>> encode_response(Response(None, b"v", 0)).hex()
    '8076'
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["DELETE_KEY_NO_PROPAGATE", "DELETE_KEY_AND_PROPAGATE",
           "PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE", "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE",
           "Subscription", "Response", "Framed", "FramedSerde", "framed_partition", "hash128",
           "encode_subscription", "decode_subscription", "encode_response", "decode_response",
           "combined_key", "fk_prefix"]

# SubscriptionWrapper.Instruction
DELETE_KEY_NO_PROPAGATE, DELETE_KEY_AND_PROPAGATE = 0, 1
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 2, 3

SUBSCRIPTION_VERSION = 1  # SubscriptionWrapper.CURRENT_VERSION
RESPONSE_VERSION = 0  # SubscriptionResponseWrapper.CURRENT_VERSION

_M64 = (1 << 64) - 1
_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
_SEED = 104729  # Murmur3.DEFAULT_SEED


class Subscription(NamedTuple):
    """A SubscriptionWrapper: ``hash`` (two signed longs, None for a deleted row), the
    instruction, the serialized left key, the left record's partition (None: version 0)."""

    hash: tuple[int, int] | None
    instruction: int
    primary_key: bytes
    primary_partition: int | None
    version: int = SUBSCRIPTION_VERSION


class Response(NamedTuple):
    """A SubscriptionResponseWrapper: the subscribed row's hash, the serialized foreign
    value (None: none), and (not written) the left partition the response goes to."""

    hash: tuple[int, int] | None
    foreign_value: bytes | None
    primary_partition: int | None = None
    version: int = RESPONSE_VERSION


class Framed(NamedTuple):
    """Bytes ready for an internal topic, with the partition to write them to (None: by key)."""

    data: bytes
    partition: int | None = None


class FramedSerde:
    """The sink's and source's value serde of the two internal topics: a :class:`Framed`'s
    bytes out, plain bytes in."""

    def serialize(self, topic: str, data: Framed | None) -> bytes | None:
        return None if data is None else data.data

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return data

    def __repr__(self) -> str:
        return "FramedSerde()"


def framed_partition(topic: str, key: object, value: Framed | None, n: int) -> int | None:
    """The response sink's partitioner: the left record's partition, as Java's default."""
    return None if value is None else value.partition


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    return k ^ (k >> 33)


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def hash128(data: bytes) -> tuple[int, int]:
    """Kafka Streams' ``Murmur3.hash128`` (x64 128-bit, seed 104729), as two signed longs.

    >>> hash128(b"")
    (-7122613646888064702, -8341524471658347240)
    """
    h1 = h2 = _SEED
    n = len(data)
    blocks = n // 16
    for i in range(blocks):
        k1, k2 = struct.unpack_from("<QQ", data, i * 16)
        k1 = (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
        h1 = ((_rotl(h1 ^ k1, 27) + h2) * 5 + 0x52DCE729) & _M64
        k2 = (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
        h2 = ((_rotl(h2 ^ k2, 31) + h1) * 5 + 0x38495AB5) & _M64
    tail = data[blocks * 16:]
    k1 = int.from_bytes(tail[:8], "little")
    k2 = int.from_bytes(tail[8:], "little")
    if len(tail) > 8:
        h2 ^= (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
    if tail:
        h1 ^= (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return _signed(h1), _signed(h2)


def encode_subscription(s: Subscription) -> bytes:
    """SubscriptionWrapperSerde's bytes of ``s`` (version 0 has no partition)."""
    head = bytes([s.version if s.hash is not None else s.version | 0x80, s.instruction])
    hashed = b"" if s.hash is None else struct.pack(">qq", *s.hash)
    tail = b"" if s.version == 0 else struct.pack(">i", s.primary_partition)
    return head + hashed + s.primary_key + tail


def decode_subscription(data: bytes) -> Subscription:
    """A SubscriptionWrapper read back (version 0 or 1)."""
    version, no_hash = data[0] & 0x7F, bool(data[0] & 0x80)
    instruction, at = data[1], 2
    hashed = None
    if not no_hash:
        hashed = struct.unpack_from(">qq", data, at)
        at += 16
    end = len(data) - (4 if version > 0 else 0)
    partition = struct.unpack_from(">i", data, end)[0] if version > 0 else None
    return Subscription(hashed, instruction, bytes(data[at:end]), partition, version)


def encode_response(r: Response) -> bytes:
    """SubscriptionResponseWrapperSerde's bytes of ``r``."""
    if r.hash is None:
        return bytes([r.version | 0x80]) + (r.foreign_value or b"")
    return bytes([r.version]) + struct.pack(">qq", *r.hash) + (r.foreign_value or b"")


def decode_response(data: bytes) -> Response:
    """A SubscriptionResponseWrapper read back; no value bytes read as no value, as Java."""
    version, no_hash = data[0] & 0x7F, bool(data[0] & 0x80)
    hashed = None if no_hash else struct.unpack_from(">qq", data, 1)
    rest = bytes(data[1 if no_hash else 17:])
    return Response(hashed, rest or None, None, version)


def fk_prefix(fk: bytes) -> bytes:
    """The subscription store's key prefix of a serialized foreign key."""
    return struct.pack(">i", len(fk)) + fk


def combined_key(fk: bytes, pk: bytes) -> bytes:
    """CombinedKeySchema's key of (foreign key, left key), both serialized.

    >>> combined_key(b"p1", b"o1")
    b'\\x00\\x00\\x00\\x02p1o1'
    """
    return fk_prefix(fk) + pk
