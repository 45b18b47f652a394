"""The ``kspark`` command: one module per group of sub-commands.

Imports anything; imported by nothing but the entry point.
"""

__all__: list[str] = []
