"""Fixtures of the unit tests: the interactive-query tests' drivers (``iq_topologies.py``)."""

import pytest

from tests.unit.iq_topologies import dsl_driver, papi_driver


@pytest.fixture
def dsl():
    with dsl_driver() as d:
        yield d


@pytest.fixture
def papi():
    with papi_driver() as d:
        yield d
