"""The `recluster_case` model's rows and layout checks, shared by the recluster tests and the child
process the kill tests run (integration_tests/harness/recluster_child.py); its generic helpers (a
table's data files, its location) also by bench_recluster.py and bench_commit_window.py, whose
tables are the benchmarks' own models."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from spark_clustering_dev.layout import fingerprint

MODEL = "recluster_case"
COLUMNS = ["a", "b", "c"]
DATA_COLUMNS = ["id", "a", "b", "c", "payload"]
# The model's SELECT, to compute the expected rows straight from Spark.
ROW_SQL = """select id, pmod(xxhash64(id, 1), 100000) as a, cast(pmod(xxhash64(id, 2), 1000) as int) as b,
    cast(pmod(xxhash64(id, 3), 50000) as double) / 7 as c, concat('payload-', id) as payload"""


def expected(spark, ranges) -> tuple[int, int, int]:
    """Fingerprint of the rows of id ranges [(start, end), ...] as the model writes them."""
    union = " union all ".join(f"{ROW_SQL} from range({a}, {b})" for a, b in ranges)
    spark.sql(f"create or replace temporary view rc_expected as {union}")
    return fingerprint(spark, "rc_expected")


def actual(spark, table) -> tuple[int, int, int]:
    return fingerprint(spark, table, DATA_COLUMNS)


def data_files(spark, table) -> dict[str, int]:
    """{file path: size} of the table's data files, as the package's listing sees them."""
    return {r[0]: r[1] for r in spark.sql(f"select file_path, file_size from table_data_files('{table}')").collect()}


def location(spark, table) -> Path:
    rows = spark.sql(f"describe table extended {table}").collect()
    return Path(urlparse(next(r[1] for r in rows if r[0] == "Location")).path)


def leftovers(spark, schema, alias) -> list[str]:
    """Staging directories (on S3A also the magic directories of pending uploads) and the staging
    table a recluster leaves when it does not finish."""
    rows = spark.sql(f"describe table extended {schema}.{alias}").collect()
    uri = next(r[1] for r in rows if r[0] == "Location")
    if uri.startswith("file:") or "://" not in uri:
        found = sorted(p.name for p in location(spark, f"{schema}.{alias}").rglob("_sc_recluster_*"))
    else:  # an object store: the staging directories among the keys below the table's location
        path = spark._jvm.org.apache.hadoop.fs.Path(uri)
        files = path.getFileSystem(spark._jsc.hadoopConfiguration()).listFiles(path, True)
        names = set()
        while files.hasNext():
            names.update(part for part in str(files.next().getPath().toString()).split("/")
                         if part.startswith(("_sc_recluster_", "__magic_job-")))
        found = sorted(names)
    if f"{alias}__sc_recluster" in {r[1] for r in spark.sql(f"show tables in {schema}").collect()}:
        found.append(f"table {alias}__sc_recluster")
    return found
