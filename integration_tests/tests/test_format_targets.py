"""A new user's Delta and Iceberg set-up, from the docs alone: the dbt targets docs/table_formats.md
shows (the block after its `format-targets` marker), copied as they are into a profiles.yml, build
the example project in a process where dbt creates the Spark session itself from the target, in an
empty working directory (Spark's default metastore and warehouse there: a fresh machine's first
run). Nothing of the harness's session set-up is used; the jars are the ones scripts/setup built.
Only the JVM's own flags are the tests' (jvm_options_env: C1, the serial collector and the class data
archive, as for every short-lived JVM of the tests), outside the target."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from harness.format_target_child import EXAMPLE_VARS
from spark_clustering_dev.dbt import install_packages
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO
from spark_clustering_dev.spark import formats_this_run, jvm_options_env

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


def run_target_child(table_format: str, target: dict, tmp_path, mode: str = "jar") -> tuple[dict, str]:
    """harness.format_target_child on `target`, in an empty working directory: (its report, its output)."""
    install_packages()  # the child runs dbt on the project as it is
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump({PROFILE: {"target": table_format, "outputs": {table_format: target}}}))
    work = tmp_path / "cwd"
    work.mkdir()
    env = {**os.environ, "SPARK_CLUSTERING_ROOT": str(REPO), "PYTHONUNBUFFERED": "1",
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **jvm_options_env(),
           "PYTHONPATH": os.pathsep.join([str(REPO / "dev"), str(INTEGRATION_TESTS), str(REPO / "udfs" / "python")])}
    done = subprocess.run([sys.executable, "-m", "harness.format_target_child", table_format, str(tmp_path),
                           str(tmp_path / "target"), mode], cwd=work, env=env, capture_output=True, text=True, timeout=900)
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


def assert_every_model_built(got: dict, table_format: str) -> None:
    """Every model of the example is a table of the format with every row; the clustered ones carry
    the package's record, the same keys on every format."""
    for table in ["telemetry_events", "telemetry_insertion_order", "telemetry_incremental", *CLUSTERED]:
        assert got[table]["provider"] == table_format, (table, got[table])
        assert got[table]["rows"] == EXAMPLE_VARS["telemetry_rows"], (table, got[table])
    for table in CLUSTERED:
        assert got[table]["properties"]["spark_clustering.cluster_by"], (table, got[table])


@pytest.mark.parametrize("table_format", formats_this_run())  # one per run of scripts/test
def test_the_documented_target_builds_the_example_on_a_fresh_metastore(table_format, tmp_path):
    work = tmp_path / "cwd"
    got, out = run_target_child(table_format, documented_targets()[table_format], tmp_path)

    # the session is the one the target describes, its metastore and warehouse Spark's defaults in the cwd
    assert got["conf"]["spark.sql.extensions"].startswith("org.apache.spark.sql.sparkclustering.SparkClusteringExtensions,")
    assert got["conf"]["spark.sql.warehouse.dir"].rstrip("/").endswith(str(work / "spark-warehouse")), got["conf"]
    assert (work / "metastore_db").is_dir()
    assert_every_model_built(got, table_format)
    # an auto layout's record: its name, simulated ratio and search time
    auto = got["telemetry_auto"]["properties"]
    for key in ("spark_clustering.layout_name", "spark_clustering.layout_simulated_ratio", "spark_clustering.layout_seconds"):
        assert auto.get(key), (key, auto)
    assert got["audit_rows"] > 0
    # a first run that shows no dbt warning (the example's generic tests passed: the build succeeded)
    assert got["warnings"] == [], got["warnings"]
    # the package names Iceberg's metadata tables with their catalog: no CATALOG_NOT_FOUND on either
    # format; and Delta logs none of the metastore lines the docs name for Iceberg
    assert "CATALOG_NOT_FOUND" not in out
    if table_format == "delta":
        assert "MissingTableException" not in out


@pytest.mark.parametrize("table_format", formats_this_run())  # one per run of scripts/test
def test_without_the_jar_the_documented_target_builds_every_model_and_recluster_says_what_to_load(table_format, tmp_path):
    """A Spark that cannot load the package's jar (a managed SQL warehouse, a serverless pool): the
    documented target without the jar and the extension. Every model of the example builds on the
    format with the pure-SQL keys, and the example's generic tests (clustering depth, files scanned)
    pass on its tables; the incremental model's recluster() post-hook stops, naming the model, what
    to load and how to switch it off, and leaves the appended rows in place."""
    got, out = run_target_child(table_format, without_the_jar(documented_targets()[table_format]), tmp_path, "no-jar")
    assert got["native_functions"] == [], got["native_functions"]
    assert "sparkclustering" not in got["conf"]["spark.sql.extensions"], got["conf"]
    assert_every_model_built(got, table_format)
    assert got["audit_rows"] > 0
    [error] = got["recluster_errors"]
    assert "telemetry_incremental" in error and "the spark_clustering Spark extension is not loaded" in error, error
    assert "spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions" in error, error
    assert "skip_recluster" in error, error
