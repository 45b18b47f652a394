"""A short run of the exactly-once soak harness (``make soak`` runs the long one), so the
harness itself cannot rot: one round SIGKILLing the driver or an executor at a random moment
(the seed fixes which); read_committed output exact. Three rounds took 490 s of the suite."""

from __future__ import annotations

import pytest

from tests.integration import soak

pytestmark = pytest.mark.integration


@pytest.mark.timeout(900)  # a restart of Spark; slow on a busy 2-core machine
def test_soak_one_round_exactly_once(broker, tmp_path):
    f = soak.soak(broker, rounds=1, records=8_000, guarantee="exactly_once_v2", keys=50,
                  seed=20261122, work_dir=str(tmp_path))
    print(f.line(1))
    assert (f.duplicates, f.lost, f.wrong, f.open_transactions, f.disordered) == (0, 0, 0, 0, 0), f
