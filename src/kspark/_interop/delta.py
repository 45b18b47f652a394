"""The Delta sink's writer: one Delta commit per Spark micro-batch, exactly once.

Each commit carries a Delta transaction id (``txn``: an application id and a version, the
protocol's idempotent-write marker that Spark's own Delta writer sets with ``txnAppId`` and
``txnVersion``): the sink's id and the batch id. A batch Spark runs again after a failure
finds its id already committed and writes nothing. The sink's id includes its Spark query's
id, so a sink whose checkpoint was deleted (a new query: batch ids from 0 again) is never
mistaken for the old one.

Written with ``deltalake`` (delta-rs): Delta Lake's Spark writer (``delta-spark``) has no
release for Spark 4.3 yet (docs/spark-interop.md). Any Delta reader reads the table.

Example:
    >>> import tempfile, pyarrow as pa
    >>> path = tempfile.mkdtemp()
    >>> t = pa.table({"key": ["a"], "value": [1]})
    >>> write_batch(path, t, "app.sink.q1", 0), write_batch(path, t, "app.sink.q1", 0)
    (True, False)
    >>> from deltalake import DeltaTable
    >>> DeltaTable(path).to_pyarrow_table().num_rows
    1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kspark.errors import PrerequisiteError

__all__ = ["write_batch", "committed_version", "require_deltalake"]


def require_deltalake(sink: str) -> None:
    """The Delta writer's package is installed, else a PrerequisiteError saying how."""
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise PrerequisiteError(
            f"Spark sink {sink!r} writes Delta tables with the 'deltalake' package, which is "
            "not installed: pip install 'kspark[delta]'") from None


def committed_version(path: str, txn_id: str, storage: Mapping[str, str] | None = None
                      ) -> int | None:
    """The last batch the sink ``txn_id`` committed to the table at ``path`` (None: no
    table yet, or none of its commits)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path, storage_options=dict(storage or {}) or None)
    except TableNotFoundError:
        return None
    return table.transaction_version(txn_id)


def write_batch(path: str, data: Any, txn_id: str, batch_id: int,
                partition_by: Sequence[str] = (), storage: Mapping[str, str] | None = None
                ) -> bool:
    """Append ``data`` (an Arrow table) to the Delta table at ``path`` (created by the first
    batch) as batch ``batch_id`` of ``txn_id``; False when that batch is already in."""
    from deltalake import CommitProperties, Transaction, write_deltalake

    done = committed_version(path, txn_id, storage)
    if done is not None and done >= batch_id:
        return False
    write_deltalake(path, data, mode="append", partition_by=list(partition_by) or None,
                    storage_options=dict(storage or {}) or None,
                    commit_properties=CommitProperties(
                        app_transactions=[Transaction(txn_id, batch_id)]))
    return True
