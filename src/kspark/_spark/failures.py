r"""What a failed application's error says: the kspark error in a failed query's trace
(:func:`explain`), or that the Spark Connect server was lost (:func:`connect_lost`). Plain
text work, no pyspark: the application (``app.py``) and its Spark sinks (``spark_sinks.py``)
both word their failures here.

Example:
    >>> explain("a", RuntimeError("x\nkspark.errors.StreamsError: boom\n  at ..."))
    "application 'a' failed: kspark.errors.StreamsError: boom"
"""

from __future__ import annotations

import logging
import re

__all__ = ["explain", "connect_lost"]

log = logging.getLogger("kspark")


def explain(app_id: str, e: BaseException) -> str:
    """The first kspark error named in a failed query's trace, else its first line (the
    whole trace, with the Python worker's traceback, goes to the log)."""
    text = str(getattr(e, "desc", None) or e)
    log.error("application %r failed:\n%s", app_id, text)
    m = re.search(r"(kspark\.errors\.\w+: [^\n]*)", text)  # kspark's messages are one line
    reason = m.group(1).strip() if m else _raised(text) or (
        text.strip().splitlines()[0] if text.strip() else repr(e))
    return f"application {app_id!r} failed: {reason}"


def connect_lost(app_id: str, e: BaseException) -> str:
    """The error of an application whose Spark Connect server stopped answering.

    >>> connect_lost("a", RuntimeError('status = UNAVAILABLE\\n details = "refused"'))
    "application 'a' failed: the Spark Connect server did not answer (refused) and the \
application's query is lost with it: start the server again, then the application, which \
resumes from its last commit"
    """
    text = str(e)
    log.error("application %r failed:\n%s", app_id, text)
    m = re.search(r'details = "([^"]*)"', text)
    why = m.group(1) if m else (text.strip().splitlines() or [repr(e)])[0]
    return (f"application {app_id!r} failed: the Spark Connect server did not answer ({why}) "
            "and the application's query is lost with it: start the server again, then the "
            "application, which resumes from its last commit")


def _raised(text: str) -> str | None:
    r"""The exception line ending the first Python traceback in ``text`` (``Type: message``).

    >>> _raised("worker failed: Traceback (most recent call last):\n  File 'x', line 1\n"
    ...         "    f()\nKeyError: 'x'\n\tat org.apache...")
    "KeyError: 'x'"
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Traceback (most recent call last):"):
            for after in lines[i + 1:]:
                if after and not after[0].isspace():
                    return after.strip()
    return None
