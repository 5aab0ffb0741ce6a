"""Lint the SQL of the package and of the example project with sqlfluff (dbt templater, sparksql).

Exits non-zero on any violation. `dbt deps` runs first because the templater compiles the example
project, which installs the package from `../`.
"""
from __future__ import annotations

import os
import subprocess
import sys

from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO

# (paths, extra config): the package's models compile in the package project, the rest in integration_tests.
LINTED = [(["integration_tests/models"], None), (["models"], ".sqlfluff.package")]


def main() -> int:
    from dbt.cli.main import dbtRunner

    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    # the templater only compiles: no need to list every schema's relations first (35 CPU-s, not 40)
    os.environ.setdefault("DBT_POPULATE_CACHE", "false")
    # under scripts/test (SPARK_CLUSTERING_TEST_JVM=1) the templater's Spark JVMs, one per sqlfluff
    # run, are short-lived JVMs of the tests': C1, the serial collector (spark_clustering_dev.spark)
    from spark_clustering_dev.spark import jvm_options_env

    os.environ.update(jvm_options_env())
    deps = dbtRunner().invoke(["deps", "--quiet", "--project-dir", str(INTEGRATION_TESTS),
                               "--profiles-dir", str(INTEGRATION_TESTS)])
    if not deps.success:
        print(f"dbt deps failed: {deps.exception}", file=sys.stderr)
        return 2
    status = 0
    for paths, config in LINTED:
        cmd = [sys.executable, "-m", "sqlfluff", "lint", *paths, "--disable-progress-bar"]
        if config:
            cmd += ["--config", config]
        status |= subprocess.call(cmd, cwd=REPO)
    return status


if __name__ == "__main__":
    sys.exit(main())
