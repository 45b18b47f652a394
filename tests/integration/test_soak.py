"""A short run of the exactly-once soak harness (``make soak`` runs the long one), so the
harness itself cannot rot: 3 rounds, each SIGKILLing the driver or an executor at a random
moment; read_committed output exact."""

from __future__ import annotations

import pytest

from tests.integration import soak

pytestmark = pytest.mark.integration


@pytest.mark.timeout(1500)  # three restarts of Spark; slow on a busy 2-core machine
def test_soak_three_rounds_exactly_once(broker, tmp_path):
    f = soak.soak(broker, rounds=3, records=15_000, guarantee="exactly_once_v2", keys=50,
                  seed=20261122, work_dir=str(tmp_path))
    print(f.line(3))
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions, f.disordered) == (0, 0, 0, 0, 0), f
