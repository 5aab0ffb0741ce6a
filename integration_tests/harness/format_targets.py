"""The documented dbt targets of docs/table_formats.md and the child process that builds the example
project through one (harness.format_target_child): shared by test_format_targets.py (an embedded
session dbt creates from the target) and test_spark_connect.py (a Connect server set up with the
target's settings, reached by the documented `connect` target)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from harness.format_target_child import EXAMPLE_VARS
from spark_clustering_dev.dbt import install_packages
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO
from spark_clustering_dev.spark import jvm_options_env

DOC = REPO / "docs" / "table_formats.md"
PROFILE = "spark_clustering_integration_tests"  # the project's `profile`, which the docs' block stands for
CLUSTERED = ["telemetry_hilbert", "telemetry_zorder", "telemetry_linear", "telemetry_by_region", "telemetry_auto"]


def documented_targets() -> dict:
    """The `outputs` of the yaml block that follows the docs' `format-targets` marker."""
    text = DOC.read_text()
    found = re.search(r"<!-- format-targets[^>]*-->\s*```yaml\n(.*?)```", text, re.S)
    assert found, f"{DOC}: no yaml block after a format-targets marker"
    [profile] = yaml.safe_load(found.group(1)).values()
    return profile["outputs"]


def run_target_child(table_format: str, target: dict, tmp_path, mode: str = "jar",
                     env: dict[str, str] | None = None, increment_recluster: dict | None = None) -> tuple[dict, str]:
    """harness.format_target_child on `target`, in an empty working directory: (its report, its output).
    `env`: more of the child's environment (e.g. SPARK_REMOTE for a Connect target);
    `increment_recluster`: the incremental model's `recluster` setting on its second run."""
    install_packages()  # the child runs dbt on the project as it is
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump({PROFILE: {"target": table_format, "outputs": {table_format: target}}}))
    work = tmp_path / "cwd"
    work.mkdir()
    env = {**os.environ, "SPARK_CLUSTERING_ROOT": str(REPO), "PYTHONUNBUFFERED": "1",
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **jvm_options_env(),
           "PYTHONPATH": os.pathsep.join([str(REPO / "dev"), str(INTEGRATION_TESTS), str(REPO / "udfs" / "python")]),
           **(env or {})}
    done = subprocess.run([sys.executable, "-m", "harness.format_target_child", table_format, str(tmp_path),
                           str(tmp_path / "target"), mode, json.dumps(increment_recluster or {})], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    lines = [x for x in done.stdout.splitlines() if x.startswith("format_target: ")]
    assert done.returncode == 0 and lines, out[-6000:]
    return json.loads(lines[-1].split(": ", 1)[1]), out


def without_the_jar(target: dict) -> dict:
    """`target` without the package's jar in spark.jars and its extension in spark.sql.extensions."""
    params = dict(target["server_side_parameters"])
    params["spark.jars"] = ",".join(j for j in params["spark.jars"].split(",") if "spark-clustering-udfs" not in j)
    params["spark.sql.extensions"] = ",".join(e for e in params["spark.sql.extensions"].split(",")
                                              if "sparkclustering" not in e)
    return {**target, "server_side_parameters": params}


def assert_every_model_built(got: dict, table_format: str, tables: list[str] | None = None) -> None:
    """Every model of the example (or of `tables`, the ones a job built) is a table of the format
    with every row; the clustered ones carry the package's record, the same keys on every format."""
    tables = tables or ["telemetry_events", "telemetry_insertion_order", "telemetry_incremental", *CLUSTERED]
    for table in tables:
        assert got[table]["provider"] == table_format, (table, got[table])
        assert got[table]["rows"] == EXAMPLE_VARS["telemetry_rows"], (table, got[table])
    for table in CLUSTERED:
        if table in tables:
            assert got[table]["properties"]["spark_clustering.cluster_by"], (table, got[table])
