"""A new user's Delta and Iceberg set-up, from the docs alone: the dbt targets docs/table_formats.md
shows (the block after its `format-targets` marker), copied as they are into a profiles.yml, build
the example project in a process where dbt creates the Spark session itself from the target, in an
empty working directory (Spark's default metastore and warehouse there: a fresh machine's first
run). Nothing of the harness's session set-up is used; the jars are the ones scripts/setup built.
Only the JVM's own flags are the tests' (jvm_options_env: C1, the serial collector and the class data
archive, as for every short-lived JVM of the tests), outside the target."""
from __future__ import annotations

import pytest

from harness.format_targets import assert_every_model_built, documented_targets, run_target_child, without_the_jar
from spark_clustering_dev.spark import formats_this_run


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
