"""Lint the SQL of the package and of the example project with sqlfluff (dbt templater, sparksql).

Exits non-zero on any violation. `dbt deps` runs first because the templater compiles the example
project, which installs the package from `../`.
"""
from __future__ import annotations

import os
import subprocess
import sys

from harness.paths import INTEGRATION_TESTS, REPO

LINTED = ["integration_tests/models", "models"]


def main() -> int:
    from dbt.cli.main import dbtRunner

    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    deps = dbtRunner().invoke(["deps", "--quiet", "--project-dir", str(INTEGRATION_TESTS),
                               "--profiles-dir", str(INTEGRATION_TESTS)])
    if not deps.success:
        print(f"dbt deps failed: {deps.exception}", file=sys.stderr)
        return 2
    paths = [p for p in LINTED if any((REPO / p).rglob("*.sql"))]
    cmd = [sys.executable, "-m", "sqlfluff", "lint", *paths, "--disable-progress-bar"]
    return subprocess.call(cmd, cwd=REPO)


if __name__ == "__main__":
    sys.exit(main())
