"""The secured application for ``kspark run`` in test_security: its topic names come from the
environment (``SECURE_APP_TOPICS=src,long,counts``)."""

from __future__ import annotations

import os

from tests.integration.test_security import topology


def build():
    """The topology of test_security on the topics the test made."""
    src, long_out, counts_out = os.environ["SECURE_APP_TOPICS"].split(",")
    return topology(src, long_out, counts_out)
