"""`clustered_table` on the embedded session: rows preserved, files tight, edge data, failures safe."""
from __future__ import annotations

import pytest

from harness.plans import skipping_summary
from spark_clustering_dev.dbt import DbtError, run_operation_json
from spark_clustering_dev.layout import fingerprint, file_ranges, mean_files_scanned, mean_width_ratio, random_boxes

ROWS = 100_000


@pytest.fixture(scope="module")
def sources(spark, dbt_schema):
    s = dbt_schema
    spark.sql(f"create database if not exists {s}")
    # Uniform columns from hashes of the id: deterministic, no correlation with insertion order's id.
    spark.sql(f"drop table if exists {s}.uniform3")
    spark.sql(f"drop table if exists {s}.insertion3")
    spark.sql(f"""create table {s}.uniform3 using parquet as
        select id, cast(abs(xxhash64(id, 1)) % 1000000 as int) as a,
               cast(abs(xxhash64(id, 2)) % 1000000 as double) / 7.0 as b,
               cast(abs(xxhash64(id, 3)) % 1000000 as bigint) as c,
               element_at(array('x', 'y', 'z', 'w'), cast(abs(xxhash64(id, 4)) % 4 as int) + 1) as p
        from range({ROWS})""")
    spark.sql(f"""create table {s}.insertion3 using parquet as
        select /*+ REPARTITION_BY_RANGE(64, id) */ * from {s}.uniform3 sort by id""")
    return s


def build(dbt, source, alias, **case):
    vars_ = {"case_source": source, "case_alias": alias, **{f"case_{k}": v for k, v in case.items()}}
    return dbt(["run", "--select", "cluster_case"], vars=vars_)


@pytest.mark.parametrize("method,file_format,partitioned", [
    ("hilbert", "parquet", False), ("zorder", "parquet", False), ("linear", "parquet", False),
    ("hilbert", "orc", False), ("hilbert", "parquet", True), ("zorder", "orc", True), ("linear", "orc", True),
])
def test_rows_preserved(spark, dbt, sources, method, file_format, partitioned):
    alias = f"rows_{method}_{file_format}_{int(partitioned)}"
    build(dbt, f"{sources}.uniform3", alias, method=method, format=file_format, num_files=8,
          cluster_by=["a", "b", "c"], partition_by=["p"] if partitioned else None)
    table = f"{sources}.{alias}"
    cols = ["id", "a", "b", "c", "p"]
    assert fingerprint(spark, table, cols) == fingerprint(spark, f"{sources}.uniform3", cols)
    fmt = spark.sql(f"describe table extended {table}").where("col_name = 'Provider'").first()[1]
    assert fmt.lower() == file_format
    files = spark.sql(f"select _metadata.file_path as f, count(distinct p) as parts from {table} group by 1").collect()
    # Unpartitioned: exactly the asked number of files; partitioned: no file spans two partitions.
    if partitioned:
        assert all(r.parts == 1 for r in files)
        assert 8 <= len(files) <= 8 + 4 - 1
    else:
        assert len(files) == 8


@pytest.fixture(scope="module")
def clustered_64(spark, dbt, sources):
    """The same 100k rows in 64 files by each method, 3 clustering columns."""
    for method in ["hilbert", "zorder", "linear"]:
        build(dbt, f"{sources}.uniform3", f"tight_{method}", method=method, num_files=64, cluster_by=["a", "b", "c"])
    return {m: f"{sources}.tight_{m}" for m in ["hilbert", "zorder", "linear"]} | {"insertion": f"{sources}.insertion3"}


@pytest.mark.parametrize("method", ["hilbert", "zorder"])
def test_files_hold_their_share_of_the_rows(spark, clustered_64, method):
    """The file cuts come from ~4000 sampled keys per file, each moved by at most 3 % of a file to a
    round key: every one of the 64 files holds its share of the rows within 10 % (Spark's range
    partitioner cuts on ~60 sampled rows per partition)."""
    counts = [r[1] for r in spark.sql(f"select _metadata.file_path, count(*) from {clustered_64[method]} group by 1").collect()]
    share = ROWS / 64
    assert len(counts) == 64 and sum(counts) == ROWS
    assert all(abs(n - share) <= 0.10 * share for n in counts), sorted(counts)


def test_files_are_far_tighter_than_insertion_order(spark, clustered_64):
    widths = {name: [mean_width_ratio(spark, t, c) for c in ["a", "b", "c"]] for name, t in clustered_64.items()}
    print(widths)
    assert min(widths["insertion"]) > 0.95
    # 64 files over 3 columns: a curve gives ~4 cells a side -> about 1/4 to 1/2 of each range per file.
    for method in ["hilbert", "zorder"]:
        assert max(widths[method]) < 0.55, (method, widths[method])
        assert sum(widths[method]) / 3 < 0.45, (method, widths[method])
    # linear: the first column is cut into 64 slices, the others span everything
    assert widths["linear"][0] < 0.03
    assert widths["linear"][0] < min(widths["hilbert"][0], widths["zorder"][0])


def test_hilbert_scans_no_more_files_than_zorder_on_a_box_workload(spark, clustered_64):
    boxes = random_boxes(spark, clustered_64["insertion"], ["a", "b", "c"], count=200, fraction=0.2)
    scanned = {name: mean_files_scanned(file_ranges(spark, t, ["a", "b", "c"]), boxes)
               for name, t in clustered_64.items()}
    print(scanned)
    assert scanned["insertion"] > 60
    assert scanned["hilbert"] <= scanned["zorder"]
    assert scanned["hilbert"] < scanned["linear"]
    assert scanned["hilbert"] < 0.4 * 64


def _table_location(spark, table: str) -> str:
    return spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first()[1]


def test_queries_skip_files_by_the_sidecar_clustered_table_wrote(spark, dbt, dbt_schema, clustered_64):
    """clustered_table leaves exact per-file statistics in the table directory; a box query plans
    exactly the files whose [min, max] meet the box (computed here from the rows) and answers as
    with skipping off."""
    table = clustered_64["hilbert"]
    ranges = file_ranges(spark, table, ["a", "b", "c"])
    for box in random_boxes(spark, clustered_64["insertion"], ["a", "b", "c"], count=5, fraction=0.3, seed=3):
        where = " and ".join(f"{c} between {lo} and {hi}" for c, (lo, hi) in box.items())
        query = f"select count(*), sum(hash(*)) from {table} where {where}"
        plan = spark.sql(f"explain {query}").first()[0]
        summary = skipping_summary(plan)
        assert summary["sidecar"] == summary["total"] == 64, plan
        assert summary["kept"] == round(mean_files_scanned(ranges, [box])), (box, summary)
        on = spark.sql(query).collect()
        spark.conf.set("spark.sparkclustering.skipping.enabled", "false")
        try:
            assert spark.sql(query).collect() == on
        finally:
            spark.conf.unset("spark.sparkclustering.skipping.enabled")


def test_pyarrow_reads_the_files_spark_reads(spark, clustered_64):
    """A pyarrow dataset of the package's plain parquet table (its folder's data files: no sidecar,
    no extension, only the Parquet footers): every answer equal to Spark's, and it reads row groups
    of exactly the files whose [min, max] meet the box, the files the package's skipping keeps."""
    import pyarrow.compute as pc

    from spark_clustering_dev.other_readers import PyArrowReader
    from spark_clustering_dev.recluster_case import location

    table = clustered_64["hilbert"]
    ranges = file_ranges(spark, table, ["a", "b", "c"])
    files = [p for p in location(spark, table).iterdir() if p.name.endswith(".parquet")]
    assert len(files) == 64, files
    reader = PyArrowReader(files)
    for box in random_boxes(spark, clustered_64["insertion"], ["a", "b", "c"], count=8, fraction=0.3, seed=5):
        # the integer columns' bounds as integers, so neither engine casts the column
        box = {c: ((int(lo), int(hi)) if c != "b" else (lo, hi)) for c, (lo, hi) in box.items()}
        where = " and ".join(f"{c} between {lo} and {hi}" for c, (lo, hi) in box.items())
        rows, read, _ = reader.query(PyArrowReader.box_filter(box), ["id"])
        want = tuple(spark.sql(f"select count(*), sum(id) from {table} where {where}").first())
        assert (rows.num_rows, pc.sum(rows["id"]).as_py()) == want, (box, want)
        assert read == round(mean_files_scanned(ranges, [box])) < 64, (box, read)


def test_duckdb_reads_the_listed_files_with_sparks_answers(spark, clustered_64):
    """DuckDB's read_parquet of the package's plain parquet table, its data files one by one as
    table_data_files lists them (no glob: the folder holds the sidecar and _SUCCESS too): every
    answer equal to Spark's on boxes of the clustering columns. DuckDB has no statistics of a file
    before it opens it: its profile's 'Total Files Read' is all 64 in every query (each footer read,
    then row groups skipped by their statistics), where Spark, with the package's skipping, plans
    only the files whose [min, max] meet the box."""
    from spark_clustering_dev.other_readers import DuckDbReader
    from spark_clustering_dev.paths import local
    from spark_clustering_dev.recluster_case import data_files

    table = clustered_64["hilbert"]
    ranges = file_ranges(spark, table, ["a", "b", "c"])
    files = [local(p) for p in data_files(spark, table)]
    assert len(files) == 64 and all(f.name.endswith(".parquet") for f in files), files
    reader = DuckDbReader("parquet")
    try:
        source = reader.files_source(files)
        for box in random_boxes(spark, clustered_64["insertion"], ["a", "b", "c"], count=8, fraction=0.3, seed=7):
            box = {c: ((int(lo), int(hi)) if c != "b" else (lo, hi)) for c, (lo, hi) in box.items()}
            where = " and ".join(f"{c} between {lo} and {hi}" for c, (lo, hi) in box.items())
            query = "select count(*), sum(id) from {} where " + where
            want = [tuple(r) for r in spark.sql(query.format(table)).collect()]
            got, read = reader.query(query.format(source))
            assert got == want, (box, got, want)
            assert read == 64 > round(mean_files_scanned(ranges, [box])), (box, read)
    finally:
        reader.close()


def test_write_file_stats_run_operation_covers_any_table(spark, dbt_schema, clustered_64):
    """A table no package writer built (plain CTAS) gets its sidecar from the run-operation; a second
    call reads nothing; the clustered table's sidecar already covers every file."""
    plain = clustered_64["insertion"]
    first = run_operation_json("write_file_stats", {"relation": plain}, schema=dbt_schema)
    assert first["files"] == first["files_scanned"] == 64, first
    again = run_operation_json("write_file_stats", {"relation": plain}, schema=dbt_schema)
    assert (again["files"], again["files_scanned"]) == (64, 0), again
    clustered = run_operation_json("write_file_stats", {"relation": clustered_64["hilbert"]}, schema=dbt_schema)
    assert (clustered["files"], clustered["files_scanned"]) == (64, 0), clustered
    plan = spark.sql(f"explain select count(*) from {plain} where id between 100 and 900").first()[0]
    assert skipping_summary(plan)["sidecar"] == 64, plan


def test_cluster_file_stats_false_writes_no_sidecar(spark, dbt, sources):
    import os
    from urllib.parse import urlparse

    build(dbt, f"{sources}.uniform3", "no_sidecar", num_files=4, cluster_by=["a", "b"], file_stats=False)
    location = urlparse(_table_location(spark, f"{sources}.no_sidecar")).path
    assert not os.path.exists(os.path.join(location, "_sc_file_stats")), os.listdir(location)
    # footers still prove bounds for int/double columns
    plan = spark.sql(f"explain select count(*) from {sources}.no_sidecar where a < 0").first()[0]
    assert skipping_summary(plan) == {"kept": 0, "total": 4, "sidecar": 0, "footers": 4, "unknown": 0}, plan


def test_cluster_file_stats_must_be_a_boolean(dbt, sources):
    error = pytest.raises(DbtError, build, dbt, f"{sources}.uniform3", "bad_sidecar_flag", num_files=2,
                          cluster_by=["a"], file_stats="false")
    assert "config 'cluster_file_stats' = false is not valid: use true or false (a boolean, not a string 'false')" \
        in str(error.value), error.value


def test_two_columns_tight(spark, dbt, sources):
    build(dbt, f"{sources}.uniform3", "tight2_hilbert", method="hilbert", num_files=16, cluster_by=["a", "b"])
    widths = [mean_width_ratio(spark, f"{sources}.tight2_hilbert", c) for c in ["a", "b"]]
    # 16 files on a 2-D Hilbert curve: 4 x 4 cells -> each file spans about a quarter of each range.
    assert all(w < 0.35 for w in widths), widths


def test_sql_backend_without_the_jar_clusters_as_tightly(spark, dbt, sources):
    """var spark_clustering_udf_backend=sql: keys from pure Spark SQL (what a cluster without the jar
    gets). 3 columns x 7 bits fit a bigint, so the keys equal the native ones; the files differ only
    where Spark's range partitioner samples its cut points differently (its seed depends on the RDD
    id). Small data: the SQL fallback's higher-order functions are interpreted, not code-generated."""
    spark.sql(f"drop table if exists {sources}.uniform3_small")
    spark.sql(f"create table {sources}.uniform3_small using parquet as select * from {sources}.uniform3 where id < 20000")
    widths = {}
    for backend in ["native", "sql"]:
        alias = f"small_hilbert_{backend}"
        dbt(["run", "--select", "cluster_case"],
            vars={"case_source": f"{sources}.uniform3_small", "case_alias": alias, "case_method": "hilbert",
                  "case_num_files": 16, "case_ranges": 100, "case_cluster_by": ["a", "b", "c"],
                  "spark_clustering_udf_backend": backend})
        table = f"{sources}.{alias}"
        cols = ["id", "a", "b", "c", "p"]
        assert fingerprint(spark, table, cols) == fingerprint(spark, f"{sources}.uniform3_small", cols)
        widths[backend] = [mean_width_ratio(spark, table, c) for c in ["a", "b", "c"]]
    # 16 files on a 3-D curve: 2-3 cells a side, so each file spans about half of each range.
    assert max(widths["sql"]) < 0.7 and sum(widths["sql"]) / 3 < 0.55, widths
    assert widths["sql"] == pytest.approx(widths["native"], abs=0.05), widths
