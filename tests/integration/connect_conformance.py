"""The Java-referenced conformance sample on a Spark Connect server, as a script: a Connect
session cannot share a process with the suite's classic one (PySpark's functions choose
classic or Connect per process).

``python -m tests.integration.connect_conformance BOOTSTRAP URL MODE COUNT SEED STATE_DIR``
prints ``disagreements N`` (and the first ones) and ``output M`` (records Java wrote).
"""

from __future__ import annotations

import sys

from kspark._kafka.admin import Admin
from tests.conformance.spark_host import REAL_TIME, disagreements, report, run_on_spark, sample
from tests.integration.app_base import connect_session, end


def main(argv: list[str]) -> int:
    bootstrap, url, mode, count, seed, state = argv
    spark = connect_session(url)
    admin = Admin(bootstrap, 20000)
    if mode == "micro_batch":
        got = sample(int(count), int(seed))
        run_on_spark(got.cases, bootstrap, spark, admin, state)
    else:
        got = sample(int(count), int(seed), REAL_TIME)
        run_on_spark(got.cases, bootstrap, spark, admin, state, REAL_TIME, mode="real_time")
    bad = disagreements(got.cases)
    print(f"output {sum(len(c.java) for c in got.cases)}", flush=True)
    print(f"disagreements {len(bad)}", flush=True)
    if bad:
        print(report(bad), flush=True)
    return end(spark)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
