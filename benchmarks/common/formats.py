"""Delta Lake and Iceberg tables in a benchmark: a session of the format, its tables' files, bytes
and the files a query read (the format's own skipping, by Spark's scan metrics), and the formats'
own clustering (Iceberg's z-order rewrite at a file count)."""
from __future__ import annotations

from common.datasets import LINEITEM_COLUMNS as COLUMNS
from common.scans import plan_nodes
from common.timing import timed
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import get_spark


def file_column(fmt: str) -> str:
    return "_file" if fmt == "iceberg" else "_metadata.file_path"


def files_of(spark, fmt: str, table: str, columns: list[str] = COLUMNS) -> list[dict]:
    """Each live file's min/max box over the clustering columns, from its rows."""
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in columns)
    return [r.asDict() for r in spark.sql(f"select {file_column(fmt)} as path, count(*) as n, {aggs} from {table} "
                                          f"group by 1").collect()]


def files_read(df) -> int:
    """Files the query's scans read: numFiles of file-source scans (Delta), resultDataFiles of
    Iceberg's batch scans."""
    total = 0
    for node in plan_nodes(df._jdf.queryExecution().executedPlan()):
        metrics = node.metrics()
        for name in ("numFiles", "resultDataFiles"):
            m = metrics.get(name)
            if m.isDefined():
                total += int(m.get().value())
    return total


def bytes_read(df) -> int:
    """Bytes of the files the query's scans read, as Spark's scan metrics report them: filesSize
    ("size of files read") of file-source scans (parquet, Delta), totalDataFileSize of Iceberg's batch
    scans. Whole files, as the planner handed them to the readers (not the column chunks a reader
    then fetched from them)."""
    total = 0
    for node in plan_nodes(df._jdf.queryExecution().executedPlan()):
        metrics = node.metrics()
        for name in ("filesSize", "totalDataFileSize"):
            m = metrics.get(name)
            if m.isDefined():
                total += int(m.get().value())
    return total


def table_bytes(spark, fmt: str, table: str) -> int:
    """The bytes of the table's data files, from its metadata (a plain table: the jar's table_data_files)."""
    if fmt == "parquet":
        return int(spark.sql(f"select coalesce(sum(file_size), 0) from table_data_files('{table}')").first()[0])
    if fmt == "delta":
        return int(spark.sql(f"describe detail {table}").first()["sizeInBytes"])
    return int(spark.sql(f"select sum(file_size_in_bytes) from {table}.files").first()[0])


def iceberg_zorder_rewrite(table: str, cols: str, target: int, everything: bool) -> str:
    """Iceberg's own z-order: rewrite_data_files with the sort strategy, every file (`rewrite-all`)
    or the files its default selection picks."""
    rewrite_all = ", 'rewrite-all', 'true'" if everything else ""
    return (f"call spark_catalog.system.rewrite_data_files(table => '{table}', strategy => 'sort', "
            f"sort_order => 'zorder({cols})', options => map('target-file-size-bytes', '{target}'{rewrite_all}))")


def bisect_iceberg_target(spark, table: str, statements, target: int, files: int) -> tuple[int, list[float], list]:
    """The target-file-size-bytes at which `statements(size)` (a build of `table` ending in a z-order
    rewrite) gives about `files` files. Iceberg's writer rolls a file at the target size of its
    in-memory estimate, which a z-ordered file (compressing worse) reaches sooner, and not linearly:
    each attempt drops the table and builds it again, bisecting the size (geometric mean of the sizes
    that gave too many and too few files), up to 6 attempts; when none lands within 10 % the table
    is built once more at the size that came closest. Returns the size, the seconds of each
    statement of the last build, and every (size, files) tried."""
    attempts, size, lo, hi, seconds = [], target, None, None, []

    def build(at: int) -> int:
        nonlocal seconds
        drop_table(spark, "iceberg", table)
        seconds = [timed(lambda st=st: spark.sql(st).collect()) for st in statements(at)]
        got = int(spark.sql(f"select count(*) from {table}.files").first()[0])
        attempts.append((at, got))
        return got

    for _ in range(6):
        got = build(size)
        if abs(got - files) <= max(1, files // 10):
            return size, seconds, attempts
        if got > files:
            lo = size
        else:
            hi = size
        size = int((lo * hi) ** 0.5) if lo and hi else int(size * got / files)
    best = min(attempts, key=lambda a: abs(a[1] - files))
    if best is not attempts[-1]:
        build(best[0])
    return best[0], seconds, attempts


def format_session(fmt: str, app_name: str, files: int, extra_conf: dict | None = None):
    """A session of the format (parquet: the plain session) for a benchmark: its own warehouse, `files` shuffle partitions, no AQE
    (so a repartition hint gives exactly that many files), + `extra_conf`."""
    spark = get_spark(WORK / f"{app_name}_{fmt}", app_name=app_name, table_format="hive" if fmt == "parquet" else fmt,
                      extra_conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(files),
                                  "spark.sql.adaptive.enabled": "false", **(extra_conf or {})})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def drop_table(spark, fmt: str, table: str) -> None:
    """Drops a benchmark's table of format `fmt` with its files: Iceberg's DROP TABLE leaves every
    data and metadata file behind unless PURGE (Delta's managed tables go with their directory), and
    rounds of rebuilt Iceberg tables once filled the disk (16 GB)."""
    spark.sql(f"drop table if exists {table}" + (" purge" if fmt == "iceberg" else ""))
