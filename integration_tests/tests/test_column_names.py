"""Column names that collide with the package's helper names (`__sc_key`, `__sc_in_sample`, range_id's
lambda variables, Spark's `_metadata`) or that need escaping (quotes, backticks, commas, unicode):
every row survives `clustered_table`, the metrics read the right files, and the table properties
keep every name intact."""
from __future__ import annotations

import json

import pytest

from spark_clustering_dev.dbt import dbt_output as harness_dbt_output
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import WORK

# Own target dir: other processes may run dbt on the same project at the same time.
TARGET_PATH = WORK / "pytest" / "dbt_target_column_names"


def dbt_output(dbt, args, expect_success=True, **kw):
    return harness_dbt_output(dbt, args, TARGET_PATH, expect_success=expect_success, **kw)


def build(dbt, source, alias, backend=None, **case):
    vars_ = {"case_source": source, "case_alias": alias, **{f"case_{k}": v for k, v in case.items()}}
    if backend:
        vars_["spark_clustering_udf_backend"] = backend
    return dbt_output(dbt, ["run", "--select", "cluster_case"], vars=vars_)[1]


def operation_json(dbt, macro, args, prefix=None, vars=None):
    _, out = dbt_output(dbt, ["run-operation", macro, "--args", json.dumps(args, ensure_ascii=False)], vars=vars)
    prefix = (prefix or macro.split(".")[-1]) + ": "
    lines = [line[line.index(prefix) + len(prefix):] for line in out.splitlines() if prefix in line]
    assert lines, out[-3000:]
    return json.loads(lines[-1])


def measured_by_recluster(dbt, table, reason="below min_new_rows"):
    """The recluster outcome of `table` without cluster_by anywhere in the graph (input_case takes the
    table's name but sets no cluster_by), so it is read back from the table property; a huge
    min_new_rows makes the gate stop after measuring: nothing is rewritten. `reason`: what the gate
    says (a clustered_table build's files are one clustered run: no new rows)."""
    schema, alias = table.split(".")
    vars_ = {"input_case_config": {"alias": alias, "materialized": "incremental",
                                   "recluster": {"min_new_rows": 10 ** 12}}}
    outcome = operation_json(dbt, "spark_clustering.recluster", {"relation": table}, prefix="recluster", vars=vars_)
    assert outcome["decision"] == "skipped" and reason in outcome["reason"], outcome
    return outcome


def quoted(name):
    return "`" + name.replace("`", "``") + "`"


def make_table(spark, name, columns_sql, rows=6000):
    spark.sql(f"drop table if exists {name}")
    spark.sql(f"create table {name} using parquet as select {columns_sql} from range({rows})")
    return name


def properties(spark, table):
    return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}


def sidecars(spark, schema, alias):
    return sorted(r.tableName for r in spark.sql(f"show tables in {schema}").collect()
                  if r.tableName.startswith(alias + "__sc_"))


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


# Every name the package uses next to the user's columns, as user columns.
RESERVED = ["__sc_key", "__sc_in_sample", "_metadata", "__sc_r", "__sc_i"]


@pytest.mark.parametrize("backend", ["native", "sql"])
def test_columns_named_like_the_package_helpers(spark, dbt, s, backend):
    columns = ", ".join(f"cast(abs(xxhash64(id, {i})) % 1000 as int) as {quoted(n)}" for i, n in enumerate(RESERVED))
    src = make_table(spark, f"{s}.reserved_src", "id, " + columns)
    alias = f"reserved_{backend}"
    # cluster on the sample flag's, the metadata column's and range_id's lambda variables' names;
    # __sc_key is the key's own alias
    cluster_by = ["__sc_in_sample", "_metadata", "__sc_r"]
    build(dbt, src, alias, cluster_by=cluster_by, num_files=4, backend=backend)
    assert fingerprint(spark, f"{s}.{alias}") == fingerprint(spark, src)
    # Spark renamed its metadata struct to __metadata; the package found it (4 real files)
    files = spark.sql(f"select distinct __metadata.file_path from {s}.{alias}").count()
    assert files == 4
    # what a recluster reads its selection through finds the metadata column under its new name too
    chosen = sorted(r[0] for r in spark.sql(f"select distinct __metadata.file_path from {s}.{alias}").collect())[:2]
    in_list = ", ".join(f"'{p}'" for p in chosen)
    spark.sql(f"select * from table_file_rows('{s}.{alias}', '', array({in_list}), 'reserved_rows')").collect()
    try:
        of_files = f"(select * from {s}.{alias} where __metadata.file_path in ({in_list})) f"
        wanted = fingerprint(spark, of_files, ["id"] + RESERVED)
        assert 0 < wanted[0] < fingerprint(spark, f"{s}.{alias}")[0]
        assert fingerprint(spark, "reserved_rows", ["id"] + RESERVED) == wanted
    finally:
        spark.sql("drop view if exists reserved_rows")
    props = properties(spark, f"{s}.{alias}")
    assert json.loads(props["spark_clustering.cluster_by"]) == cluster_by
    assert int(props["spark_clustering.num_files"]) == 4
    assert sidecars(spark, s, alias) == []

    info = operation_json(dbt, "spark_clustering.clustering_information",
                          {"relation": f"{s}.{alias}", "columns": cluster_by,
                           "workload": [{"_metadata": [0, 99]}, {"__sc_key": [None, 10]}]})
    assert info["total_files"] == 4
    assert sorted(info["columns"]) == sorted(cluster_by)
    direct = spark.sql(f"""select count(*) from (select __metadata.file_path from {s}.{alias}
                           group by 1 having min(`_metadata`) <= 99)""").first()[0]
    assert info["workload"]["boxes"][0]["scanned_files"] == direct
    # the clustering worked on the renamed columns: files are narrow on the first column
    spans = spark.sql(f"""select max(`__sc_in_sample`) - min(`__sc_in_sample`) as w from {s}.{alias}
                          group by __metadata.file_path""").collect()
    assert sum(r.w for r in spans) / len(spans) < 900, spans


# Names that need escaping in SQL text and in table properties.
AWKWARD = ["it's", "x,y", "a`b", "naïve ü", '"q"', "c\\d"]


def test_columns_that_need_escaping_survive_the_whole_path(spark, dbt, s):
    columns = ", ".join(f"cast(abs(xxhash64(id, {i})) % 500 as int) as {quoted(n)}" for i, n in enumerate(AWKWARD))
    src = make_table(spark, f"{s}.awkward_src", "id, " + columns + ", concat('r', id) as `é text`")
    alias = "awkward_h"
    cluster_by = AWKWARD[:4]
    build(dbt, src, alias, cluster_by=cluster_by, num_files=3)
    assert fingerprint(spark, f"{s}.{alias}") == fingerprint(spark, src)
    props = properties(spark, f"{s}.{alias}")
    # JSON, not comma-joined: 'x,y' stays one name, the quote and backtick are intact
    assert json.loads(props["spark_clustering.cluster_by"]) == cluster_by
    assert props["spark_clustering.validated"] == "true"
    assert sidecars(spark, s, alias) == []

    info = operation_json(dbt, "spark_clustering.clustering_information",
                          {"relation": f"{s}.{alias}", "columns": AWKWARD})
    assert sorted(info["columns"]) == sorted(AWKWARD) and info["total_files"] == 3

    # recluster without cluster_by in the graph reads it back from the property: the four names,
    # not six pieces of a comma split
    outcome = measured_by_recluster(dbt, f"{s}.{alias}", reason="no new rows since the last recluster")
    assert sorted(outcome["before"]["columns"]) == sorted(cluster_by), outcome
    assert fingerprint(spark, f"{s}.{alias}") == fingerprint(spark, src)


@pytest.mark.parametrize("stored", ["a,b", '["a", "b"]'])
def test_cluster_by_property_old_comma_form_and_json(spark, dbt, s, stored):
    """Tables clustered by earlier versions carry 'a,b'; new ones a JSON list. Both read back."""
    table = make_table(spark, f"{s}.prop_form", "id, cast(id % 97 as int) as a, cast(id % 89 as int) as b")
    escaped = stored.replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"alter table {table} set tblproperties ('spark_clustering.cluster_by' = '{escaped}')")
    outcome = measured_by_recluster(dbt, table)
    assert sorted(outcome["before"]["columns"]) == ["a", "b"], outcome
