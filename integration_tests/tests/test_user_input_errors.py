"""Mistakes a user can make, each answered before any write by an error that names the model (or
table), the config key or argument, and the fix; the table that existed stays intact and nothing
is left behind. Also: the audit model goes on past a broken table, and `dbt compile` works on a
fresh checkout before any model was built."""
from __future__ import annotations

import json
import os
import uuid
from urllib.parse import urlparse

import pytest

from spark_clustering_dev.dbt import dbt_output as harness_dbt_output
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import confs

# Own target dir: other processes may run dbt on the same project at the same time.
TARGET_PATH = WORK / "pytest" / "dbt_target_user_input_errors"


def dbt_output(dbt, args, expect_success=True, **kw):
    return harness_dbt_output(dbt, args, TARGET_PATH, expect_success=expect_success, **kw)


def build_input(dbt, source, config, expect_success=True, extra_vars=None):
    """`dbt run` of models/cases/input_case.sql with this config; returns everything dbt printed
    plus the messages of failed nodes."""
    vars_ = {"input_case_source": source, "input_case_config": config, **(extra_vars or {})}
    run, out = dbt_output(dbt, ["run", "--select", "input_case"], expect_success, vars=vars_)
    return out + "\n" + "\n".join(run.messages)


def recluster_op(dbt, args, expect_success=True, vars=None):
    return dbt_output(dbt, ["run-operation", "spark_clustering.recluster", "--args", json.dumps(args)],
                      expect_success, vars=vars)[1]


def make_table(spark, name, sql):
    spark.sql(f"drop view if exists {name}")
    spark.sql(f"drop table if exists {name}")
    spark.sql(f"create table {name} using parquet as {sql}")
    return name


def sidecars(spark, schema, alias):
    """Tables and views the package may leave beside `alias` (`<alias>__sc_staging`, ...)."""
    return sorted(r.tableName for r in spark.sql(f"show tables in {schema}").collect()
                  if r.tableName.startswith(alias + "__sc_"))


def table_files(spark, table):
    return sorted(r[0] for r in spark.sql(f"select distinct input_file_name() from {table}").collect())


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


SOURCE_SQL = "select id, cast(id % 97 as int) as a, cast(id % 89 as int) as b from range(3000)"

# (config, fragments the error must contain). Every key read by clustering_config, each with a
# value of the wrong type or out of range.
BAD_CONFIGS = [
    ({"cluster_by": 5}, ["config 'cluster_by' = 5", "a number 5", "list of column names"]),
    ({"cluster_by": {"a": 1}}, ["config 'cluster_by'", "a dict", "list of column names"]),
    ({"cluster_by": ["a", 7]}, ["config 'cluster_by'", "every entry must be a column name", "a number 7"]),
    ({"cluster_by": True}, ["config 'cluster_by' = True", "a boolean true"]),
    ({"cluster_by": ["a"], "cluster_method": 5}, ["config 'cluster_method' = 5", "use one of: hilbert, zorder, linear"]),
    ({"cluster_by": ["a"], "cluster_ranges": "100"}, ["config 'cluster_ranges' = 100", "whole number from 2 to 65535"]),
    ({"cluster_by": ["a"], "cluster_ranges": {"a": True}}, ["config 'cluster_ranges'", "whole number from 2 to 65535"]),
    ({"cluster_by": ["a"], "cluster_ranges": [10]}, ["config 'cluster_ranges'", "or a dict {column: number}"]),
    ({"cluster_by": ["a"], "cluster_target_file_rows": True}, ["config 'cluster_target_file_rows' = True", "positive whole number"]),
    ({"cluster_by": ["a"], "cluster_target_file_rows": 2.5}, ["config 'cluster_target_file_rows' = 2.5", "positive whole number"]),
    ({"cluster_by": ["a"], "cluster_target_file_bytes": "128MB"}, ["config 'cluster_target_file_bytes' = 128MB", "134217728"]),
    ({"cluster_by": ["a"], "cluster_num_files": True}, ["config 'cluster_num_files' = True", "positive whole number"]),
    ({"cluster_by": ["a"], "cluster_num_files": 200000}, ["config 'cluster_num_files' = 200000", "at most 100000 files",
                                                          "cluster_target_file_rows"]),
    ({"cluster_by": ["a"], "file_format": ["parquet"]}, ["config 'file_format'", "use one of: parquet, orc, delta, iceberg"]),
    ({"cluster_by": ["a"], "file_format": "hudi"}, ["config 'file_format' = hudi", "Hudi's own clustering service"]),
    ({"cluster_by": ["a"], "partition_by": 5}, ["config 'partition_by' = 5", "a number 5", "list of column names"]),
    ({"cluster_by": ["a"], "partition_by": [["b"]]}, ["config 'partition_by'", "every entry must be a column name"]),
    ({"cluster_by": ["a"], "partition_by": ["bucket(4, b)"]},
     ["config 'partition_by'", "'bucket(4, b)' is a partition transform", "partition_by that column"]),
    ({"cluster_by": ["a"], "cluster_sample_rows_per_range": True},
     ["config 'cluster_sample_rows_per_range' = True", "positive number"]),
    ({"cluster_by": ["a"], "cluster_validate": "false"},
     ["config 'cluster_validate' = false", "use true or false", "not a string 'false'"]),
    ({"cluster_by": ["a"], "cluster_validate": 0}, ["config 'cluster_validate' = 0", "use true or false", "a number 0"]),
]


def test_every_config_key_is_type_checked_before_any_write(spark, dbt, s):
    src = make_table(spark, f"{s}.typed_src", SOURCE_SQL)
    alias = "typed_live"
    build_input(dbt, src, {"alias": alias, "cluster_by": ["a", "b"], "cluster_num_files": 2})
    before = fingerprint(spark, f"{s}.{alias}")
    files = table_files(spark, f"{s}.{alias}")
    failures = []
    for config, fragments in BAD_CONFIGS:
        text = build_input(dbt, src, {"alias": alias, **config}, expect_success=False)
        missing = [f for f in ["model 'input_case'", *fragments] if f not in text]
        if missing:
            failures.append((config, missing, text[-1500:]))
    assert not failures, failures
    # no write happened: same rows, same files, no staging or backup table
    assert fingerprint(spark, f"{s}.{alias}") == before
    assert table_files(spark, f"{s}.{alias}") == files
    assert sidecars(spark, s, alias) == []


def test_few_rows_per_file_is_a_warning(spark, dbt, s):
    src = make_table(spark, f"{s}.small_src", SOURCE_SQL)
    text = build_input(dbt, src, {"alias": "small_files", "cluster_by": ["a", "b"], "cluster_num_files": 10})
    assert "3000 rows in 10 files is about 300 rows per file (fewer than 1000)" in text, text[-3000:]
    assert "lower cluster_num_files or raise cluster_target_file_rows" in text
    assert fingerprint(spark, f"{s}.small_files") == fingerprint(spark, src)


INT96_NOTE = "clustering column ts (timestamp) written as INT96"


def footer_ts(path):
    """(physical type, has min/max) of column `ts` in every row group of a parquet file."""
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(urlparse(path).path).metadata
    found = set()
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            if col.path_in_schema == "ts":
                found.add((col.physical_type, bool(col.statistics is not None and col.statistics.has_min_max)))
    return found


def test_a_timestamp_written_as_int96_is_named_with_its_fix(spark, dbt, s):
    """A parquet model clustered on a timestamp, in a session that writes INT96 (Spark's default):
    the run says which column and how to fix it, and it is right to: no footer of the table has a
    bound for that column. Written as TIMESTAMP_MICROS (the fix), every footer has one, the note is
    not given, and the statistics sidecar is written from footers alone (no column read)."""
    src = make_table(spark, f"{s}.ts_src", "select id, timestamp_seconds(1600000000 + id * 37) as ts, "
                                            "cast(id % 89 as int) as b from range(3000)")
    config = {"cluster_by": ["ts", "b"], "cluster_num_files": 2}
    with confs(spark, {"spark.sql.parquet.outputTimestampType": "INT96"}):
        text = build_input(dbt, src, {"alias": "ts_int96", **config})
    assert INT96_NOTE in text, text[-3000:]
    assert "spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS in the session" in text
    assert "input_case: " + INT96_NOTE in text, text[-3000:]
    files = table_files(spark, f"{s}.ts_int96")
    assert len(files) == 2 and set().union(*map(footer_ts, files)) == {("INT96", False)}
    assert fingerprint(spark, f"{s}.ts_int96") == fingerprint(spark, src)
    rebuilt = spark.sql(f"select * from write_file_stats('{s}.ts_int96', true, true)").collect()[0].asDict()
    assert rebuilt["columns_scanned"] == ["ts"], rebuilt

    with confs(spark, {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}):
        text = build_input(dbt, src, {"alias": "ts_micros", **config})
    assert INT96_NOTE not in text, text[-3000:]
    files = table_files(spark, f"{s}.ts_micros")
    assert len(files) == 2 and set().union(*map(footer_ts, files)) == {("INT64", True)}
    assert fingerprint(spark, f"{s}.ts_micros") == fingerprint(spark, src)
    rebuilt = spark.sql(f"select * from write_file_stats('{s}.ts_micros', true, true)").collect()[0].asDict()
    assert rebuilt["columns_scanned"] == [], rebuilt


BAD_RECLUSTER_CONFIGS = [
    ({"recluster": "often"}, ["config 'recluster' = often", "use a dict"]),
    ({"recluster": {"min_new_rows": 1.5}}, ["config 'recluster'", "min_new_rows must be a whole number"]),
    ({"recluster": {"max_rounds": True}}, ["config 'recluster'", "max_rounds must be a whole number"]),
    ({"recluster": {"max_average_depth": "4"}}, ["config 'recluster'", "max_average_depth must be 'auto' or a number"]),
    ({"recluster": {"every": 3}}, ["config 'recluster'", "unknown key 'every'"]),
    ({"recluster": {"cache_bytes": -1}}, ["config 'recluster'", "cache_bytes must be a whole number of bytes >= 0"]),
    ({"recluster": {"policy": "cheap"}}, ["config 'recluster'", "policy must be 'gate'", "e.g. {policy: cost}"]),
    ({"recluster": {"policy": "cost", "horizon_runs": 0}}, ["config 'recluster'", "horizon_runs must be a number > 0"]),
    ({"recluster": {"horizon_runs": -2}}, ["config 'recluster'", "horizon_runs must be a number > 0"]),
    ({"recluster": {"horizon_runs": "lost"}}, ["config 'recluster'", "or 'lost_reads'"]),
    ({"recluster": {"queries_per_run": "lots"}}, ["config 'recluster'", "queries_per_run must be 'observed'",
                                                  "e.g. {queries_per_run: 20}"]),
    ({"skip_recluster": "false"}, ["config 'skip_recluster' = false", "use true or false", "not a string 'false'"]),
    ({"cluster_validate": "no"}, ["config 'cluster_validate' = no", "use true or false"]),
]


def test_recluster_settings_are_type_checked(spark, dbt, s):
    """The keys only recluster reads, through a run-operation that finds the model in the graph."""
    alias = "rc_typed"
    table = make_table(spark, f"{s}.{alias}", SOURCE_SQL)
    before = fingerprint(spark, table)
    failures = []
    for config, fragments in BAD_RECLUSTER_CONFIGS:
        case = {"alias": alias, "materialized": "incremental", "cluster_by": ["a", "b"], **config}
        text = recluster_op(dbt, {"relation": table}, expect_success=False,
                            vars={"input_case_source": table, "input_case_config": case})
        missing = [f for f in [f"model 'input_case' (table {table})", *fragments] if f not in text]
        if missing:
            failures.append((config, missing, text[-1500:]))
    assert not failures, failures
    assert fingerprint(spark, table) == before
    assert sidecars(spark, s, alias) == []


def test_recluster_of_a_view_says_it_is_a_view(spark, dbt, s):
    table = make_table(spark, f"{s}.viewed_src", SOURCE_SQL)
    spark.sql(f"create or replace view {s}.a_view as select * from {table}")
    text = recluster_op(dbt, {"relation": f"{s}.a_view", "columns": ["a"]}, expect_success=False)
    assert f"recluster: table {s}.a_view is a view: it has no data files to rewrite" in text, text[-2000:]
    assert "Recluster the parquet/orc table the view reads" in text
    assert "'None'" not in text


def test_recluster_columns_argument_is_checked_against_the_table(spark, dbt, s):
    table = make_table(spark, f"{s}.rc_args", SOURCE_SQL)
    before = fingerprint(spark, table)
    files = table_files(spark, table)
    text = recluster_op(dbt, {"relation": table, "columns": ["a", "bx"]}, expect_success=False)
    for fragment in [f"table {table}: argument 'columns' = ['a', 'bx'] is not valid",
                     f"column 'bx' is not a column of {table} (its columns: id, a, b)",
                     "pass columns of the table"]:
        assert fragment in text, (fragment, text[-2000:])
    assert "UNRESOLVED_COLUMN" not in text
    assert fingerprint(spark, table) == before and table_files(spark, table) == files
    assert sidecars(spark, s, "rc_args") == []


def test_incremental_model_whose_cluster_column_was_renamed(spark, dbt, s):
    """The model now computes `bx` and clusters on it; the incremental table (schema changes
    ignored) still has `b`: the recluster post-hook names the model, the column and the fix."""
    alias = "renamed_incr"
    spark.sql(f"drop table if exists {s}.{alias}")
    v1 = make_table(spark, f"{s}.renamed_v1", "select id, cast(id % 97 as int) as a, cast(id % 89 as int) as b "
                                              "from range(2000)")
    v2 = make_table(spark, f"{s}.renamed_v2", "select id, cast(id % 97 as int) as a, cast(id % 89 as int) as b, "
                                              "cast(id % 89 as int) * 2 as bx from range(2000, 3000)")
    base = {"alias": alias, "materialized": "incremental", "incremental_strategy": "append", "file_format": "parquet"}
    build_input(dbt, v1, {**base, "cluster_by": ["a", "b"]})
    expected = fingerprint(spark, f"(select * from {v1} union all select id, a, b from {v2}) t", ["id", "a", "b"])
    text = build_input(dbt, v2, {**base, "cluster_by": ["a", "bx"],
                                 "post_hook": "{{ spark_clustering.recluster() }}"}, expect_success=False)
    for fragment in [f"model 'input_case' (table {s}.{alias}): config 'cluster_by' = ['a', 'bx'] is not valid",
                     f"column 'bx' is not a column of {s}.{alias} (its columns: id, a, b)",
                     "dbt run --full-refresh --select input_case"]:
        assert fragment in text, (fragment, text[-2000:])
    assert "UNRESOLVED_COLUMN" not in text
    # the append itself went in; the recluster stopped before reading or writing anything
    assert fingerprint(spark, f"{s}.{alias}", ["id", "a", "b"]) == expected
    assert sidecars(spark, s, alias) == []
    location = spark.sql(f"describe table extended {s}.{alias}").where("col_name = 'Location'").first().data_type
    assert not [n for n in os.listdir(urlparse(location).path) if n.startswith("_sc_")], os.listdir(urlparse(location).path)


def test_audit_reports_a_broken_table_and_measures_the_others(spark, dbt, s):
    good_src = make_table(spark, f"{s}.audit_good_src", SOURCE_SQL)
    dbt_output(dbt, ["run", "--select", "cluster_case"],
               vars={"case_source": good_src, "case_alias": "audit_good", "case_num_files": 2})
    # a table whose model clusters on a column it does not have (renamed since it was built)
    make_table(spark, f"{s}.audit_broken", SOURCE_SQL)
    # and a model materialized as a view: no data files to measure
    spark.sql(f"drop table if exists {s}.metrics_points_clustered")
    spark.sql(f"create or replace view {s}.metrics_points_clustered as select * from {good_src}")
    vars_ = {"case_source": good_src, "case_alias": "audit_good",
             "input_case_config": {"alias": "audit_broken", "cluster_by": ["a", "gone"]}}
    run, out = dbt_output(dbt, ["run", "--select", "spark_clustering_audit"], vars=vars_)
    rows = spark.sql(f"""select model_id, relation_name, column_name, total_file_count, error
                         from {s}.spark_clustering_audit""").collect()
    good = [r for r in rows if r.relation_name == f"{s}.audit_good"]
    assert sorted(r.column_name for r in good) == ["a", "b"] and all(r.total_file_count == 2 and r.error is None
                                                                     for r in good), rows
    broken = [r for r in rows if r.relation_name == f"{s}.audit_broken"]
    assert len(broken) == 1 and broken[0].column_name is None, rows
    assert "column 'gone' in argument `columns` is not a column of" in broken[0].error, broken
    view = [r for r in rows if r.relation_name == f"{s}.metrics_points_clustered"]
    assert len(view) == 1 and "is a view" in view[0].error, rows
    assert "spark_clustering_audit: model.spark_clustering_integration_tests.input_case not measured" in out
    spark.sql(f"drop view {s}.metrics_points_clustered")


def test_compile_and_docs_on_a_fresh_checkout_need_no_table(spark, dbt):
    """No model of the project was built in this schema: compiling must not look at any table."""
    schema = "it_fresh_" + uuid.uuid4().hex[:8]
    for command in (["compile"], ["docs", "generate"]):
        run, out = dbt_output(dbt, command, schema=schema)
        assert run.success and run.exception is None, out[-3000:]
        assert "TABLE_OR_VIEW_NOT_FOUND" not in "\n".join(run.messages), run.messages
        assert "Compilation Error" not in out, out[-3000:]
