"""Rack-aware standby placement (``rack.aware.assignment.tags``, Kafka Streams' KIP-708).

Each executor carries *client tags*: for each tag key in ``rack.aware.assignment.tags``
(say ``zone``), a value read on the executor from the environment variable
``KSPARK_CLIENT_TAG_<KEY>`` (``KSPARK_CLIENT_TAG_ZONE=eu-1a``; a platform sets it per
node, e.g. from a Kubernetes node's zone label), else the value of ``client.tag.<key>`` in
the application's config (every executor the same, as one Kafka Streams instance's tags).
Standby copies of a task then go, best effort, to holders whose tag values differ from
those of the task's active holder and of its other copies, in as many tag dimensions as
can be: Kafka Streams' client-tag-aware standby assignment, with executors for instances.

- :func:`tag_env_name`: the environment variable of a tag key.
- :func:`executor_tags`: an executor's tag values, from its environment and the defaults;
  :func:`tag_config`, the keys and defaults of a config; :func:`tags_by_executor` and
  :func:`missing_tags` over every executor.
- :func:`spread_copies`: which holders (executors in micro-batch mode, stream threads in
  real-time mode) keep copies of which tasks.

Example:
    >>> tags = {"0": {"zone": "a"}, "1": {"zone": "a"}, "2": {"zone": "b"}}
    >>> spread_copies({"0_0": "0", "0_1": "1", "0_2": "2"}, ["0", "1", "2"], 1, tags)
    {'0': ['0_2'], '1': [], '2': ['0_0', '0_1']}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["TAG_ENV_PREFIX", "tag_env_name", "executor_tags", "tag_config", "tags_by_executor",
           "missing_tags", "spread_copies"]

TAG_ENV_PREFIX = "KSPARK_CLIENT_TAG_"

H = TypeVar("H", bound=Hashable)
T = TypeVar("T", int, str)


def tag_env_name(key: str) -> str:
    """The environment variable carrying tag ``key``'s value on an executor: upper case,
    every character but letters and digits as ``_``.

    >>> tag_env_name("zone"), tag_env_name("cloud.region")
    ('KSPARK_CLIENT_TAG_ZONE', 'KSPARK_CLIENT_TAG_CLOUD_REGION')
    """
    return TAG_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def executor_tags(keys: Sequence[str], defaults: Mapping[str, str],
                  environ: Mapping[str, str]) -> dict[str, str]:
    """The tag values of an executor whose environment is ``environ`` (only the
    ``KSPARK_CLIENT_TAG_*`` variables are needed): per key of ``keys``, its variable's value,
    else ``defaults[key]`` (``client.tag.<key>``); a key with neither is left out (the
    executor's value for it is unknown).

    >>> executor_tags(["zone", "rack"], {"rack": "r1"}, {"KSPARK_CLIENT_TAG_ZONE": "a"})
    {'zone': 'a', 'rack': 'r1'}
    """
    out: dict[str, str] = {}
    for key in keys:
        value = environ.get(tag_env_name(key)) or defaults.get(key)
        if value:
            out[key] = str(value)
    return out


def tag_config(config: Mapping[str, Any]) -> tuple[tuple[str, ...], dict[str, str]]:
    """``rack.aware.assignment.tags`` and the ``client.tag.*`` defaults of ``config``.

    >>> tag_config({"rack.aware.assignment.tags": ("zone",), "client.tag.zone": "a"})
    (('zone',), {'zone': 'a'})
    """
    defaults = {k[len("client.tag."):]: str(v) for k, v in config.items()
                if k.startswith("client.tag.")}
    return tuple(config.get("rack.aware.assignment.tags") or ()), defaults


def tags_by_executor(config: Mapping[str, Any], environs: Mapping[str, Mapping[str, str]]
                     ) -> dict[str, dict[str, str]]:
    """Per executor id, its tag values (``environs``: executor id -> its client-tag
    environment variables, as probed); empty without ``rack.aware.assignment.tags``.

    >>> tags_by_executor({"rack.aware.assignment.tags": ("zone",)},
    ...                  {"0": {"KSPARK_CLIENT_TAG_ZONE": "a"}, "1": {}})
    {'0': {'zone': 'a'}, '1': {}}
    """
    keys, defaults = tag_config(config)
    if not keys:
        return {}
    return {e: executor_tags(keys, defaults, env) for e, env in environs.items()}


def missing_tags(config: Mapping[str, Any], tags: Mapping[str, Mapping[str, str]]
                 ) -> dict[str, list[str]]:
    """Per executor id, the tag keys it has no value for (to be named in a warning).

    >>> missing_tags({"rack.aware.assignment.tags": ("zone", "rack")}, {"0": {"zone": "a"}})
    {'0': ['rack']}
    """
    keys, _ = tag_config(config)
    out = {e: [k for k in keys if k not in t] for e, t in tags.items()}
    return {e: ks for e, ks in out.items() if ks}


def spread_copies(owners: Mapping[T, H], holders: Sequence[H], copies: int,
                  tags: Mapping[H, Mapping[str, str]],
                  machine: Callable[[H], Hashable] | None = None) -> dict[H, list[T]]:
    """Per holder of ``holders`` (in preference order), the tasks it keeps copies of: for
    each task (``owners``: task -> its active holder), up to ``copies`` holders, never the
    owner nor one on the same machine as the owner or another copy (``machine``: a holder's
    executor; by default the holder itself), each chosen as the one whose ``tags`` differ
    from those already holding the task in the most tag keys, then the one keeping the
    fewest copies so far, then the first. Fewer copies when fewer machines are left.

    >>> spread_copies({"t": 0}, [0, 1, 2, 3], 2, {0: {"zone": "a", "rack": "1"},
    ...     1: {"zone": "a", "rack": "2"}, 2: {"zone": "b", "rack": "1"},
    ...     3: {"zone": "b", "rack": "2"}})
    {0: [], 1: ['t'], 2: [], 3: ['t']}
    """
    machine_of = machine or (lambda h: h)
    load = dict.fromkeys(holders, 0)
    out: dict[H, list[T]] = {h: [] for h in holders}
    rank = {h: i for i, h in enumerate(holders)}
    for task in sorted(owners):
        used = [owners[task]]
        for _ in range(copies):
            taken = {machine_of(u) for u in used}
            free = [h for h in holders if h not in used and machine_of(h) not in taken]
            if not free:
                break
            best = min(free, key=lambda h: (-_differing(h, used, tags), load[h], rank[h]))
            used.append(best)
            load[best] += 1
            out[best].append(task)
    return out


def _differing(holder: H, used: Sequence[H], tags: Mapping[H, Mapping[str, str]]) -> int:
    """In how many tag keys ``holder``'s known value is one no holder of ``used`` has."""
    mine = tags.get(holder, {})
    return sum(1 for key, value in mine.items()
               if all(tags.get(u, {}).get(key) != value for u in used))
