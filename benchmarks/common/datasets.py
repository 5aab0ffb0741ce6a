"""The benchmarks' source rows: synthetic telemetry (the example's generator, built by dbt), TPC-DS
`store_sales` and TPC-H `lineitem` (generated offline by DuckDB's tpcds and tpch extensions from
their PyPI wheels), as the report's three source tables (build_*) or as a parquet table over the
generated file (DATASETS, lineitem_source: the data-skipping and format benchmarks)."""
from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from common import BENCH


@dataclass
class Dataset:
    name: str  # short id used in table names and file names
    title: str
    table: str  # the Spark source table every variant is built from
    columns: list[str]  # clustering columns
    numeric: dict[str, str]  # column -> SQL expression of it as a double (boxes and stats compare doubles)
    order_column: str  # the order rows arrived in (the "insertion order" variant keeps it)
    files: int  # file count every variant is written with
    rows: int = 0
    notes: list[str] = field(default_factory=list)


TELEMETRY_COLUMNS = ["mission_id", "ts", "reading_value"]
STORE_SALES_COLUMNS = ["ss_sold_date_sk", "ss_item_sk", "ss_customer_sk"]
LINEITEM_COLUMNS = ["l_shipdate", "l_partkey", "l_suppkey"]


def count_rows(spark, table: str) -> int:
    return int(spark.sql(f"select count(*) from {table}").first()[0])


def build_telemetry(spark, run_dbt, schema: str, rows: int, files: int) -> Dataset:
    """`telemetry_events` (integration_tests/models/example) at `rows` rows, built by dbt."""
    run_dbt(["run", "--select", "telemetry_events"], schema=schema, vars={"telemetry_rows": rows})
    table = f"{schema}.telemetry_events"
    numeric = {"mission_id": "cast(mission_id as double)", "ts": "cast(ts as double)",
               "reading_value": "cast(reading_value as double)"}
    return Dataset("telemetry", "synthetic telemetry (telemetry_events)", table, TELEMETRY_COLUMNS, numeric,
                   "event_id", files, count_rows(spark, table))


def _wheel_extension_path(module, name: str) -> Path:
    package_dir = Path(module.__file__).parent
    found = sorted(glob.glob(str(package_dir / "extensions" / "*" / f"{name}.duckdb_extension")))
    if not found:
        raise FileNotFoundError(f"no {name}.duckdb_extension under {package_dir}")
    return Path(found[-1])


def tpcds_extension_path() -> Path:
    """The tpcds extension shipped inside the duckdb-extension-tpcds wheel (a plain `INSTALL tpcds`
    would download it from outside the package registries)."""
    import duckdb_extension_tpcds

    return _wheel_extension_path(duckdb_extension_tpcds, "tpcds")


def tpch_extension_path() -> Path:
    """The tpch extension shipped inside the duckdb-extension-tpch wheel (same reason as tpcds)."""
    import duckdb_extension_tpch

    return _wheel_extension_path(duckdb_extension_tpch, "tpch")


def _generate_parquet(path: Path, setup: Callable[[], list[str]], table: str, order_column: str) -> Path:
    """DuckDB runs the statements of `setup()` (load a generator extension, call it), then writes
    `table` to `path` as one parquet file with its row order kept in `order_column`. Reused when
    `path` exists: the generators are deterministic."""
    import duckdb

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    for statement in setup():
        con.execute(statement)
    partial = path.with_suffix(".partial")
    con.execute(f"COPY (SELECT row_number() OVER () AS {order_column}, * FROM {table}) "
                f"TO '{partial}' (FORMAT parquet)")
    con.close()
    partial.rename(path)
    return path


def generate_store_sales_parquet(scale_factor: float, out_dir: Path) -> Path:
    """TPC-DS store_sales at `scale_factor` as one parquet file, with its generation order kept in
    `ss_insert_order` (Spark reads splits largest first, so file order alone would not keep it).
    Reused when already generated: dsdgen is deterministic."""
    return _generate_parquet(out_dir / f"store_sales_sf{scale_factor:g}.parquet",
                             lambda: [f"LOAD '{tpcds_extension_path()}'", f"CALL dsdgen(sf={scale_factor})"],
                             "store_sales", "ss_insert_order")


def generate_lineitem_parquet(scale_factor: float, out_dir: Path) -> Path:
    """TPC-H lineitem at `scale_factor` (SF 1 = 6,001,215 rows) as one parquet file, dbgen's row order
    kept in `l_insert_order`. Reused when already generated: dbgen is deterministic."""
    return _generate_parquet(out_dir / f"lineitem_sf{scale_factor:g}.parquet",
                             lambda: ["SET enable_progress_bar = false", f"LOAD '{tpch_extension_path()}'",
                                      f"CALL dbgen(sf={scale_factor})"],
                             "lineitem", "l_insert_order")


def build_store_sales(spark, schema: str, scale_factor: float, files: int, out_dir: Path) -> Dataset:
    import duckdb

    parquet = generate_store_sales_parquet(scale_factor, out_dir)
    table = f"{schema}.store_sales"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} using parquet as select * from parquet.`{parquet}`")
    numeric = {c: f"cast({c} as double)" for c in STORE_SALES_COLUMNS}
    notes = [f"generated by DuckDB {duckdb.__version__} `CALL dsdgen(sf={scale_factor:g})` with the tpcds "
             f"extension from the duckdb-extension-tpcds wheel ({tpcds_extension_path().parent.name}), "
             "exported to parquet, read by Spark; `ss_insert_order` = dsdgen's row order"]
    return Dataset("store_sales", f"TPC-DS store_sales SF {scale_factor:g}", table, STORE_SALES_COLUMNS, numeric,
                   "ss_insert_order", files, count_rows(spark, table), notes)


def build_lineitem(spark, schema: str, scale_factor: float, files: int, out_dir: Path) -> Dataset:
    import duckdb

    parquet = generate_lineitem_parquet(scale_factor, out_dir)
    table = f"{schema}.lineitem"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} using parquet as select * from parquet.`{parquet}`")
    # a date as a double: days since 1970 (file boxes and workload boxes compare doubles)
    numeric = {"l_shipdate": "cast(unix_date(l_shipdate) as double)",
               "l_partkey": "cast(l_partkey as double)", "l_suppkey": "cast(l_suppkey as double)"}
    notes = [f"generated by DuckDB {duckdb.__version__} `CALL dbgen(sf={scale_factor:g})` with the tpch "
             f"extension from the duckdb-extension-tpch wheel ({tpch_extension_path().parent.name}), "
             "exported to parquet, read by Spark; `l_insert_order` = dbgen's row order"]
    return Dataset("lineitem", f"TPC-H lineitem SF {scale_factor:g}", table, LINEITEM_COLUMNS, numeric,
                   "l_insert_order", files, count_rows(spark, table), notes)


# What a dataset needs here: its clustering columns, the column numbering its rows in generation
# order (point queries pick rows by it), the column the queries sum, and its parquet generator.
DATASETS = {
    "lineitem": {"columns": LINEITEM_COLUMNS, "order_column": "l_insert_order",
                 "measure": "l_extendedprice", "parquet": generate_lineitem_parquet,
                 "title": "TPC-H lineitem"},
    "store_sales": {"columns": STORE_SALES_COLUMNS, "order_column": "ss_insert_order",
                    "measure": "ss_net_paid", "parquet": generate_store_sales_parquet,
                    "title": "TPC-DS store_sales"},
}


def lineitem_source(spark, schema: str, sf: float, dataset: str = "lineitem") -> tuple[str, int]:
    """`<schema>.<dataset>_src`: a parquet table over the cached TPC-H lineitem (or another of
    DATASETS) of scale `sf`; its rows."""
    spark.sql(f"create database if not exists {schema}")
    parquet = DATASETS[dataset]["parquet"](sf, BENCH / ("tpch" if dataset == "lineitem" else "tpcds"))
    source = f"{schema}.{dataset}_src"
    spark.sql(f"drop table if exists {source}")
    spark.sql(f"create table {source} using parquet location '{parquet}'")
    return source, int(spark.sql(f"select count(*) from {source}").first()[0])
