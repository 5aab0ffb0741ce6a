"""file_stats, clustering_information, files_scanned_ratio, the generic tests and the picture, on
real parquet and orc tables built by dbt on the embedded Spark session.

Every expectation comes from an independent computation: Spark's own per-file aggregation over
`input_file_name()` (not the macro's `_metadata.file_path`), the data files on disk, brute force in
Python over the collected rows, and `spark_clustering_dev.metrics_reference` for the metric definitions.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from urllib.parse import unquote, urlparse

import pytest

from spark_clustering_dev import metrics_reference as ref
from spark_clustering_dev.dbt import dbt_output as harness_dbt_output
from spark_clustering_dev.paths import WORK

# Own target dir: other processes may run dbt on the same project at the same time.
TARGET_PATH = WORK / "pytest" / "dbt_target_metrics"
CLUSTERED = "metrics_points_clustered"
INSERTION = "metrics_points_insertion_order"
STATS_TABLES = ["metrics_stats_parquet", "metrics_stats_parquet_partitioned", "metrics_stats_orc",
                "metrics_stats_orc_partitioned"]
TYPED_COLUMNS = ["n", "s", "d", "x", "sparse"]


def dbt_output(dbt, args, expect_success=True, **kw):
    return harness_dbt_output(dbt, args, TARGET_PATH, expect_success=expect_success, **kw)


def printed_json(text: str, prefix: str):
    lines = [line for line in text.splitlines() if line.startswith(prefix + ": ")]
    assert len(lines) == 1, f"expected one '{prefix}: ' line in:\n{text[-3000:]}"
    return json.loads(lines[0].split(": ", 1)[1])


def run_operation(dbt, macro, args, expect_success=True, **kw):
    return dbt_output(dbt, ["run-operation", macro, "--args", json.dumps(args)], expect_success, **kw)[1]


def file_key(path: str) -> str:
    """`file:/x` (_metadata) and `file:///x` (input_file_name) name the same file."""
    return unquote(urlparse(path).path)


def direct_file_stats(spark, table, columns):
    """Per-file stats computed by Spark without the macro: {file: {rows, c: (min, max, nulls)}}."""
    from pyspark.sql import functions as F

    aggregates = [F.count(F.lit(1)).alias("rows")]
    for c in columns:
        aggregates += [F.min(c).alias(f"{c}_lo"), F.max(c).alias(f"{c}_hi"),
                       F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(f"{c}_nulls")]
    df = spark.table(table).withColumn("file", F.input_file_name()).groupBy("file").agg(*aggregates)
    return {file_key(r["file"]): {"rows": r["rows"], **{c: (r[f"{c}_lo"], r[f"{c}_hi"], r[f"{c}_nulls"])
                                                        for c in columns}}
            for r in df.collect()}


def data_files_on_disk(spark, table):
    location = [r for r in spark.sql(f"describe formatted {table}").collect() if r[0] == "Location"][0][1]
    root = file_key(location)
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files
            if not f.startswith((".", "_"))}


def reference_metrics(spark, table, columns):
    stats = direct_file_stats(spark, table, columns)
    files = [[None if s[c][0] is None else (s[c][0], s[c][1]) for c in columns] for s in stats.values()]
    return json.loads(json.dumps(ref.clustering_metrics(files, columns)))


@pytest.fixture(scope="module")
def built(dbt, dbt_schema, spark):
    run, _ = dbt_output(dbt, ["run", "--select", "path:models/metrics"])
    assert all(str(r.status) == "success" for r in run.node_results().values())
    return dbt_schema


@pytest.fixture(scope="module")
def file_stats_sql(dbt, built):
    text = run_operation(dbt, "metrics_file_stats_sql",
                         {"schema": built, "tables": [*STATS_TABLES, "metrics_empty"], "columns": TYPED_COLUMNS})
    return printed_json(text, "metrics_file_stats_sql")


@pytest.mark.parametrize("table", STATS_TABLES)
def test_file_stats_matches_spark_and_the_files_on_disk(spark, built, file_stats_sql, table):
    rows = spark.sql(file_stats_sql[table]).collect()
    expected = direct_file_stats(spark, f"{built}.{table}", TYPED_COLUMNS)
    got = {file_key(r["file_path"]): {"rows": r["row_count"], **{
        c: (r[f"{c}__min"], r[f"{c}__max"], r[f"{c}__null_count"]) for c in TYPED_COLUMNS}} for r in rows}
    assert got == expected
    assert set(got) == data_files_on_disk(spark, f"{built}.{table}")  # every live file, nothing else
    assert sum(r["row_count"] for r in rows) == 2000
    partitioned = table.endswith("_partitioned")
    assert len(rows) == (12 if partitioned else 4)
    assert all(("/part=" in path) == partitioned for path in got)
    # the fixture has what the metrics must handle: NULLs, NULL-only files, several types
    assert any(r["sparse__min"] is None for r in rows) and any(r["sparse__min"] is not None for r in rows)
    assert all(r["s__null_count"] > 0 for r in rows)
    assert isinstance(rows[0]["d__min"], dt.date)


def test_file_stats_of_an_empty_table_has_no_rows(spark, file_stats_sql):
    assert spark.sql(file_stats_sql["metrics_empty"]).collect() == []


def test_file_stats_in_a_model(spark, built):
    rows = spark.sql(f"select * from {built}.metrics_points_file_stats").collect()
    expected = direct_file_stats(spark, f"{built}.{CLUSTERED}", ["a", "b"])
    assert {file_key(r.file_path): (r.row_count, r.a__min, r.a__max, r.b__max) for r in rows} == {
        f: (s["rows"], s["a"][0], s["a"][1], s["b"][1]) for f, s in expected.items()}


def test_clustering_information_defaults_to_cluster_by_and_matches_reference(spark, dbt, built):
    clustered = printed_json(run_operation(dbt, "clustering_information", {"relation": f"{built}.{CLUSTERED}"}),
                             "clustering_information")
    assert clustered["relation"] == f"{built}.{CLUSTERED}"
    assert list(clustered["columns"]) == ["a", "b"]  # from the model's cluster_by config
    expected = reference_metrics(spark, f"{built}.{CLUSTERED}", ["a", "b"])
    assert {k: clustered[k] for k in ("columns", "box", "total_files")} == expected
    assert clustered["total_files"] == 16
    # a 4 x 4 grid: each column's depth is about 4-6, far from 16
    assert all(m["average_depth"] <= 8 for m in clustered["columns"].values())
    assert clustered["box"]["average_overlaps"] < 4


def test_clustering_information_on_insertion_order_with_columns_as_a_string(spark, dbt, built):
    info = printed_json(run_operation(dbt, "clustering_information",
                                      {"relation": f"{built}.{INSERTION}", "columns": "a"}), "clustering_information")
    assert list(info["columns"]) == ["a"]
    assert info["columns"]["a"] == {
        "total_file_count": 16, "constant_file_count": 0, "null_only_file_count": 0, "average_overlaps": 15.0,
        "average_depth": 16.0, "p95_depth": 16, "p99_depth": 16, "max_depth": 16, "depth_histogram": {"00016": 16}}
    assert info["box"] == {"total_file_count": 16, "null_only_file_count": 0, "average_overlaps": 15.0,
                           "max_overlaps": 15, "exact": True}


def test_clustering_information_on_typed_orc_with_null_only_files_and_workload(spark, dbt, built):
    table = f"{built}.metrics_stats_orc_partitioned"
    workload = [{"n": [-10, 10]}, {"d": ["2024-03-01", None], "s": ["K", "k"]}]
    info = printed_json(run_operation(dbt, "clustering_information",
                                      {"relation": table, "columns": TYPED_COLUMNS, "workload": workload}),
                        "clustering_information")
    assert {k: info[k] for k in ("columns", "box", "total_files")} == reference_metrics(spark, table, TYPED_COLUMNS)
    assert info["columns"]["sparse"]["null_only_file_count"] > 0
    assert info["box"]["null_only_file_count"] == info["columns"]["sparse"]["null_only_file_count"]
    assert [b["box"] for b in info["workload"]["boxes"]] == workload
    assert info["workload"]["total_files"] == info["total_files"] == 12


def test_clustering_information_on_nan_timestamps_decimals_booleans(spark, dbt, built):
    # Spark orders NaN above +Infinity; the metrics treat a NaN bound as +Infinity.
    table = f"{built}.metrics_odd_types"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""
        create table {table} using parquet as
        select /*+ repartition_by_range(5, id) */
            id,
            case when id >= 400 then double('NaN') when id = 10 then double('-Infinity')
                 when id % 7 = 0 then double('NaN') else cast(id as double) end as v,
            cast(id * 3600 as timestamp) as ts,
            cast(id / 3 as decimal(12, 4)) as dec,
            pmod(hash(id), 5) < 2 as flag,
            concat(if(id % 2 = 0, 'é', 'e'), cast(id % 13 as string)) as txt
        from range(0, 500)""")
    columns = ["v", "ts", "dec", "flag", "txt"]
    info = printed_json(run_operation(dbt, "clustering_information", {"relation": table, "columns": columns}),
                        "clustering_information")
    stats = direct_file_stats(spark, table, columns)
    assert len(stats) == 5
    assert sum(1 for s in stats.values() if s["v"][1] != s["v"][1]) == 5  # NaN is every file's max

    def bound(value):
        return float("inf") if isinstance(value, float) and value != value else value

    files = [[(bound(s[c][0]), bound(s[c][1])) for c in columns] for s in stats.values()]
    expected = json.loads(json.dumps(ref.clustering_metrics(files, columns)))
    assert {k: info[k] for k in ("columns", "box", "total_files")} == expected
    assert info["columns"]["v"]["constant_file_count"] == 1  # the all-NaN file


@pytest.mark.parametrize("args, message", [
    ({"relation": "it_test_metrics.no_such_table"}, "does not name an existing table"),
    ({"relation": "it_test_metrics.metrics_stats_parquet"}, "is not a model with a `cluster_by` config"),
    ({"relation": "it_test_metrics.metrics_stats_parquet", "columns": ["n", "nope"]},
     "column 'nope' in argument `columns` is not a column of"),
])
def test_clustering_information_errors_say_what_to_fix(dbt, built, args, message):
    text = run_operation(dbt, "clustering_information", args, expect_success=False)
    assert message in text and "clustering_information" in text


def brute_force_ratio(spark, table, workload):
    """files_scanned_ratio from the raw rows, in Python."""
    columns = sorted({c for box in workload for c in box})
    rows = spark.sql(f"select input_file_name() as file, {', '.join(columns)} from {table}").collect()
    files: dict[str, list] = {}
    for r in rows:
        files.setdefault(r["file"], []).append(r)

    samples = {c: next((r[c] for r in rows if r[c] is not None), None) for c in columns}

    def typed(column, value):
        """Workload dates are ISO strings; the rows hold dates."""
        if isinstance(samples[column], dt.date) and isinstance(value, str):
            return dt.date.fromisoformat(value)
        return value

    def in_box(r, box):
        return all(r[c] is not None and (lo is None or r[c] >= typed(c, lo)) and (hi is None or r[c] <= typed(c, hi))
                   for c, (lo, hi) in box.items())

    ranges = []
    for file_rows in files.values():
        per_column = {}
        for c in columns:
            values = [r[c] for r in file_rows if r[c] is not None]
            per_column[c] = (min(values), max(values)) if values else None
        ranges.append(per_column)
    boxes = []
    for box in workload:
        typed_box = {c: (typed(c, lo), typed(c, hi)) for c, (lo, hi) in box.items()}
        matching = sum(1 for r in rows if in_box(r, box))
        scanned = ref.files_scanned(ranges, typed_box)
        ideal = ref.ideal_files(matching, len(rows), len(files))
        boxes.append({"box": box, "scanned_files": scanned, "total_files": len(files), "matching_rows": matching,
                      "ideal_files": ideal, "ratio": ref.rounded_average(scanned, len(files)),
                      "scanned_over_ideal": ref.rounded_average(max(scanned, 1), max(ideal, 1))})
    return {"total_files": len(files), "total_rows": len(rows), "boxes": boxes,
            "mean_ratio": ref.rounded_average(sum(scanned["scanned_files"] / len(files) for scanned in boxes), len(boxes)),
            "mean_scanned_over_ideal": ref.rounded_average(sum(max(b["scanned_files"], 1) / max(b["ideal_files"], 1)
                                                               for b in boxes), len(boxes))}


def test_files_scanned_ratio_matches_brute_force(spark, dbt, built):
    table = f"{built}.metrics_stats_parquet_partitioned"
    workload = [
        {"n": [-5, 5]},
        {"n": [None, -45], "part": [1, 1]},
        {"s": ["K1", "K3"]},  # strings compare case-sensitively: 'K..' < 'k..'
        {"d": ["2024-12-01", None]},
        {"x": [10.5, 20.25], "d": [None, "2024-06-30"]},
        {"sparse": [None, None]},  # any non-NULL value: NULL-only files cannot match
        {"sparse": [100, 120], "id": [0, 2000]},
        {"n": [1000, 2000]},  # matches nothing
    ]
    got = printed_json(run_operation(dbt, "files_scanned_ratio", {"relation": table, "workload": workload}),
                       "files_scanned_ratio")
    expected = brute_force_ratio(spark, table, workload)
    assert {k: got[k] for k in expected} == expected
    assert got["relation"] == table
    by_box = got["boxes"]
    assert by_box[-1]["matching_rows"] == 0 and by_box[-1]["ideal_files"] == 0
    assert by_box[5]["scanned_files"] < got["total_files"]  # NULL-only files skipped
    assert 0 < by_box[0]["scanned_files"] and by_box[0]["matching_rows"] > 0


def test_files_scanned_ratio_rejects_a_bound_of_the_wrong_type(dbt, built):
    text = run_operation(dbt, "files_scanned_ratio", {"relation": f"{built}.metrics_stats_parquet",
                                                      "workload": [{"n": ["abc", None]}]}, expect_success=False)
    assert "does not cast to its type int" in text and "files_scanned_ratio" in text


def test_generic_tests_pass_on_clustered_and_fail_on_insertion_order(dbt, built):
    run, text = dbt_output(dbt, ["test", "--select", CLUSTERED, INSERTION], expect_success=False,
                           vars={"metrics_insertion_order_severity": "error"})
    results = {name: (str(r.status), r.failures) for name, r in run.node_results().items()}
    assert results == {
        "metrics_points_clustered_depth": ("pass", 0),
        "metrics_points_clustered_files_scanned": ("pass", 0),
        "metrics_points_insertion_order_depth": ("fail", 2),  # one failing row per column
        "metrics_points_insertion_order_files_scanned": ("fail", 1),
    }
    # the measured numbers are in dbt's output next to the failure
    assert re.search(rf"clustering_depth: {built}\.{INSERTION} column a: average_depth 16\.0 "
                     r"\(max_average_depth 8\), p95_depth 16 \(max_p95_depth 12\)", text), text[-3000:]
    assert re.search(rf"files_scanned_ratio: {built}\.{INSERTION}: mean_ratio 1\.0 \(max_mean_ratio 0\.5\)", text)
    assert f"clustering_depth: {built}.{CLUSTERED} " not in text  # passing columns are not logged
    assert "Got 2 results, configured to fail if != 0" in text


def test_generic_tests_warn_with_severity_warn(dbt, built):
    run, text = dbt_output(dbt, ["test", "--select", INSERTION])  # project default severity: warn
    assert {name: str(r.status) for name, r in run.node_results().items()} == {
        "metrics_points_insertion_order_depth": "warn", "metrics_points_insertion_order_files_scanned": "warn"}


def test_generic_test_without_a_limit_is_a_compiler_error(dbt, built):
    text = run_operation(dbt, "test_clustering_depth", {"model": f"{built}.{CLUSTERED}"}, expect_success=False)
    assert "give max_average_depth and/or max_p95_depth" in text
    text = run_operation(dbt, "test_files_scanned_ratio", {"model": f"{built}.{CLUSTERED}", "workload": [{"a": [1, 2]}]},
                         expect_success=False)
    assert "give max_mean_ratio" in text


def test_ten_thousand_files_through_run_query(dbt, built):
    # The whole path after the SQL: a 10,000-row file_stats-shaped result -> agate -> metrics.
    result = printed_json(run_operation(dbt, "metrics_timed_synthetic_stats", {"file_count": 10_000}),
                          "metrics_timed_synthetic_stats")
    print(f"\n10,000 files: query + agate {result['query_and_agate_seconds']:.1f}s, "
          f"metrics {result['metrics_seconds']:.1f}s")
    assert result["total_files"] == 10_000
    assert result["columns"]["b"]["average_depth"] == 100.0  # 100 files share each b-range
    assert result["box"]["exact"] is True
    assert result["query_and_agate_seconds"] + result["metrics_seconds"] < 60


def test_plot_file_boxes_draws_one_rectangle_per_file(spark, built, tmp_path):
    from harness import picture

    out = tmp_path / "boxes.png"
    tables = [f"{built}.{CLUSTERED}", f"{built}.{INSERTION}"]
    result = picture.plot_file_boxes(spark, tables, "a", "b", out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    for table in tables:
        files = len(direct_file_stats(spark, table, ["a"]))
        assert files == 16
        assert result["tables"][table] == {"file_count": files, "boxes": files, "rectangles": files}

    # the CLI entry point, on the same (already running) session
    cli_out = tmp_path / "cli.png"
    assert picture.main(["--table", tables[0], "--x", "a", "--y", "b", "--out", str(cli_out),
                         "--work-dir", str(WORK / "pytest" / "session")]) == 0
    assert cli_out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
