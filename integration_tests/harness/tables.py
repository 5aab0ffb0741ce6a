"""The tables of the data-skipping tests (test_data_skipping.py): their columns and the canonical
form of their values, the rows generated for them, writing them, and where a table's files are.

Canonical values: dates as days since 1970-01-01, timestamps as microseconds, strings as str, floats
as the float value, decimals as Decimal (the rows are read back with the rule off into these).
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import random
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from spark_clustering_dev.paths import local
from spark_clustering_dev.spark import confs

DEC = decimal.Context(prec=80)
EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_TS = dt.datetime(1970, 1, 1)
MIN_DAY = (dt.date(1, 1, 1) - EPOCH_DATE).days
MAX_DAY = (dt.date(9999, 12, 31) - EPOCH_DATE).days
DAY_MICROS = 86_400_000_000
MIN_MICROS = MIN_DAY * DAY_MICROS
MAX_MICROS = (MAX_DAY + 1) * DAY_MICROS - 1
DBL_MAX = 1.7976931348623157e308
FLT_MAX = 3.4028234663852886e38

# ----------------------------------------------------------------------------------------------
# columns and values


@dataclass(frozen=True)
class Column:
    name: str  # as in the table's schema (one is mixed case)
    ddl: str
    kind: str  # bool int8 int16 int32 int64 float double dec38 dec9 date ts ntz string
    canonical: str  # SQL giving the canonical Python value

    @property
    def key(self) -> str:
        return self.name.lower()


COLUMNS = [
    Column("b", "boolean", "bool", "b"),
    Column("ti", "tinyint", "int8", "ti"),
    Column("Si", "smallint", "int16", "si"),
    Column("i", "int", "int32", "i"),
    Column("bi", "bigint", "int64", "bi"),
    Column("f", "float", "float", "f"),
    Column("d", "double", "double", "d"),
    Column("dec", "decimal(38,18)", "dec38", "dec"),
    Column("dsm", "decimal(9,2)", "dec9", "dsm"),
    Column("dt", "date", "date", "unix_date(dt)"),
    Column("ts", "timestamp", "ts", "unix_micros(ts)"),
    Column("ntz", "timestamp_ntz", "ntz", "unix_micros(cast(ntz as timestamp))"),
    Column("s", "string", "string", "s"),
]
PARTITION_COLUMNS = {"p": Column("p", "int", "int32", "p"), "ps": Column("ps", "string", "string", "ps")}
BY_KEY = {c.key: c for c in COLUMNS + list(PARTITION_COLUMNS.values())}


def table_columns(spec: "TableSpec") -> list[Column]:
    """The columns predicates use: the data columns and the partition column, if any."""
    return COLUMNS + ([PARTITION_COLUMNS[spec.partition]] if spec.partition else [])


DEC_UNIT = {"dec38": Decimal("1e-18"), "dec9": Decimal("0.01")}
DEC_MAX = {"dec38": Decimal("99999999999999999999.999999999999999999"), "dec9": Decimal("9999999.99")}


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def sort_key(domain: str, v: Any) -> Any:
    """Spark's ordering (and equality) of a non-NULL value of a comparison domain."""
    if domain == "double":
        return (1, 0.0) if math.isnan(v) else (0, v + 0.0)
    if domain == "string":
        return v.encode("utf-8")
    if domain == "bool":
        return int(v)
    return v


def domain_of(kind: str) -> str:
    return {"bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int", "float": "double",
            "double": "double", "dec38": "decimal", "dec9": "decimal", "date": "days", "ts": "micros",
            "ntz": "micros", "string": "string"}[kind]


# ----------------------------------------------------------------------------------------------
# tables


@dataclass(frozen=True)
class TableSpec:
    name: str
    fmt: str  # parquet | orc
    layout: str  # sorted: files hold narrow ranges; random: every file spans everything
    partition: str | None = None  # p int | ps string
    ts_type: str = "INT96"  # parquet only
    rebase: str = "CORRECTED"  # parquet only: the calendar of dates / timestamps written
    block_size: int | None = None  # parquet row group size (small = several row groups per file)
    files: int = 12
    rows: int = 2400

    @property
    def partition_ddl(self) -> str | None:
        return {None: None, "p": "p int", "ps": "ps string"}[self.partition]

    def describe(self) -> str:
        extra = [self.layout]
        if self.partition:
            extra.append(f"partitioned by {self.partition}")
        if self.fmt == "parquet":
            extra += [self.ts_type, f"rebase {self.rebase}"] + ([f"row groups of {self.block_size} B"]
                                                                if self.block_size else [])
        return f"{self.name} ({self.fmt}, {', '.join(extra)})"


PARTITION_STRINGS = ["a b", "x:y%z", "\u00fc=\u00f6"]
STRING_BLOCKS = ["", "A", "prefix_prefix_prefix_prefix_", "prefix_prefix_prefix_prefiy", "\u00e9",
                 "\u4e2d\u6587", "\uff61", "\U0001F600"]
# (fraction of the rows, value): piecewise linear, so the columns grow with the row number
DATE_ANCHORS = [(0.0, "0001-01-01"), (0.08, "0500-06-15"), (0.16, "1000-01-01"), (0.24, "1582-10-01"),
                (0.30, "1582-10-31"), (0.38, "1899-12-31"), (0.46, "1969-12-01"), (0.54, "1970-01-31"),
                (0.62, "2000-02-29"), (0.75, "2038-01-19"), (0.88, "3000-01-01"), (1.0, "9999-12-31")]
TS_ANCHORS = [(0.0, "0001-01-01 00:00:00"), (0.1, "1000-03-01 12:00:00"), (0.2, "1582-10-14 23:59:59.999999"),
              (0.3, "1900-01-01 00:00:00"), (0.45, "1969-12-31 23:59:59"), (0.55, "1970-01-01 00:00:01"),
              (0.7, "2020-01-01 00:00:00"), (0.85, "2262-04-11 23:47:16.854775"),
              (1.0, "9999-12-31 23:59:59.999999")]
NTZ_ANCHORS = [(0.0, "0001-01-01 00:00:00"), (0.2, "1200-01-01 00:00:00"), (0.4, "1960-06-30 12:00:00"),
               (0.5, "1970-01-01 00:00:00"), (0.6, "1999-12-31 23:59:59.999999"), (0.8, "2100-01-01 00:00:00"),
               (1.0, "9999-12-31 23:59:59.999999")]
# per column: the chunk (file, in the sorted layout) whose values are all NULL, and one with some NULLs
NULL_CHUNKS = {"b": (1, 2), "ti": (2, 7), "si": (4, 9), "i": (9, 3), "bi": (10, 5), "f": (4, 8), "d": (1, 9),
               "dec": (7, 2), "dsm": (5, 10), "dt": (8, 4), "ts": (3, 6), "ntz": (10, 1), "s": (6, 3)}


def _interp(anchors, frac: float, parse: Callable[[str], int]) -> int:
    points = [(f, parse(v)) for f, v in anchors]
    for (f0, v0), (f1, v1) in zip(points, points[1:]):
        if frac <= f1:
            return min(v1, max(v0, v0 + int((v1 - v0) * (frac - f0) / (f1 - f0))))
    return points[-1][1]


def days_of(s: str) -> int:
    """An ISO date as days since 1970-01-01."""
    return (dt.date.fromisoformat(s) - EPOCH_DATE).days


def micros_of(s: str) -> int:
    """An ISO date-time as microseconds since 1970-01-01 00:00:00."""
    d = dt.datetime.fromisoformat(s) - EPOCH_TS
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def generate_rows(spec: TableSpec, seed: int, first_id: int = 0) -> list[dict]:
    """Canonical rows; in the sorted layout every column grows with the row number (so files
    written from consecutive rows have narrow ranges), with NULL, NaN, infinities, -0.0, extreme
    and long values placed at known files."""
    rng = random.Random(seed)
    n, nfiles = spec.rows, spec.files
    per = n // nfiles
    rows = []
    for k in range(n):
        frac = k / (n - 1)
        chunk = min(k // per, nfiles - 1)
        pos = k - chunk * per
        r: dict[str, Any] = {"id": first_id + k}
        r["b"] = (k // (n // 6)) % 2 == 1
        r["ti"] = -128 + k * 256 // n
        r["si"] = -32768 + k * 65535 // (n - 1)
        r["i"] = -2**31 + k * (2**32 - 1) // (n - 1)
        r["bi"] = -2**63 + k * (2**64 - 1) // (n - 1)
        step = 2000.0 / n
        r["f"] = f32(-1000.0 + k * step + rng.random() * 0.3 * step)
        dstep = 2e6 / n
        r["d"] = -1e6 + k * dstep + rng.random() * 0.3 * dstep
        with decimal.localcontext(DEC):
            r["dec"] = (Decimal(k * 98765 - 118_000_000) / 1000
                        + Decimal(rng.randrange(10**15)) / Decimal(10**18)).quantize(DEC_UNIT["dec38"])
            r["dsm"] = (Decimal(k * 800 - 960_000 + rng.randrange(700)) / 100).quantize(DEC_UNIT["dec9"])
        r["dt"] = _interp(DATE_ANCHORS, frac, days_of)
        r["ts"] = min(MAX_MICROS, _interp(TS_ANCHORS, frac, micros_of) + (rng.randrange(1_000_000) if 0 < k < n - 1 else 0))
        r["ntz"] = min(MAX_MICROS, _interp(NTZ_ANCHORS, frac, micros_of) + (rng.randrange(1_000_000) if 0 < k < n - 1 else 0))
        block = STRING_BLOCKS[min(k * len(STRING_BLOCKS) // n, len(STRING_BLOCKS) - 1)]
        r["s"] = "" if k == 0 else f"{block}{k:05d}_a"
        # special values at known places
        middle = n // 2
        if k == 0:
            r.update(f=-math.inf, d=-math.inf, dec=DEC_MAX["dec38"].copy_negate(), dsm=DEC_MAX["dec9"].copy_negate())
        if k == 1:
            r["d"] = -DBL_MAX
        if k == n - 2:
            r["d"] = DBL_MAX
        if k == n - 1:
            r.update(f=math.inf, d=math.inf, dec=DEC_MAX["dec38"], dsm=DEC_MAX["dec9"], si=2**15 - 1,
                     i=2**31 - 1, bi=2**63 - 1)
        if k == middle - 1:
            r.update(f=-0.0, d=-0.0)
        if k == middle:
            r.update(f=0.0, d=0.0)
        if k == middle + 1:
            r.update(d=5e-324, f=f32(1.401298464324817e-45))
        if (chunk == 7 and pos == 0) or (chunk == 9 and pos == per // 2):
            r["f"] = math.nan  # NaN first in a file, NaN in the middle of another
        if (chunk == 3 and pos == 0) or (chunk == 8 and pos == per // 2) or (chunk == 10 and pos % 3 == 1):
            r["d"] = math.nan
        if chunk == 2 and pos == per - 1:
            r["s"] += "x" * 5000  # the file's max is longer than any kept bound
        if chunk == 9 and pos == 0:
            r["s"] += "y" * 6000  # the file's min is
        if chunk == 5 and pos == per - 1:
            r["s"] += "z" * 1500  # longer than orc's string statistics keep, shorter than parquet's
        if chunk == nfiles - 1 and pos == per - 1:
            r["s"] += "\U0001F600" * 1500
        for name, (all_null, some_null) in NULL_CHUNKS.items():
            if chunk == all_null or (chunk == some_null and rng.random() < 0.3):
                r[name] = None
        if spec.partition == "p":
            r["p"] = k * 3 // n
        elif spec.partition == "ps":
            r["ps"] = PARTITION_STRINGS[k * 3 // n]
        rows.append(r)
    if spec.layout == "random":
        rng.shuffle(rows)
    return rows


def schema_ddl(spec: TableSpec) -> str:
    cols = ["id int"] + [f"`{c.name}` {c.ddl}" for c in COLUMNS]
    if spec.partition:
        cols.append(spec.partition_ddl)
    return ", ".join(cols)


def spark_value(name: str, v: Any) -> Any:
    """A canonical value as the Python object PySpark converts to the column's type."""
    if v is None:
        return None
    col = BY_KEY.get(name)
    if col is None:
        return v
    if col.kind == "date":
        return EPOCH_DATE + dt.timedelta(days=v)
    if col.kind == "ts":
        return (EPOCH_TS + dt.timedelta(microseconds=v)).replace(tzinfo=dt.timezone.utc)
    if col.kind == "ntz":
        return EPOCH_TS + dt.timedelta(microseconds=v)
    return v


def spark_rows(spec: TableSpec, rows: list[dict]) -> list[tuple]:
    names = ["id"] + [c.key for c in COLUMNS] + ([spec.partition] if spec.partition else [])
    return [tuple(spark_value(n, r[n]) for n in names) for r in rows]


def write_conf(spec: TableSpec) -> dict[str, str]:
    return {"spark.sql.parquet.outputTimestampType": spec.ts_type,
            "spark.sql.parquet.datetimeRebaseModeInWrite": spec.rebase,
            "spark.sql.parquet.int96RebaseModeInWrite": spec.rebase}


def dataframe(spark, spec: TableSpec, rows: list[dict], partitions: int):
    """Rows in order, `partitions` consecutive slices: one file per slice (and partition value)."""
    rdd = spark.sparkContext.parallelize(spark_rows(spec, rows), partitions)
    return spark.createDataFrame(rdd, schema_ddl(spec))


def write_table(spark, spec: TableSpec, qualified: str, rows: list[dict]) -> None:
    writer = dataframe(spark, spec, rows, spec.files).write.format(spec.fmt).mode("overwrite")
    if spec.partition:
        writer = writer.partitionBy(spec.partition)
    if spec.block_size:
        writer = writer.option("parquet.block.size", str(spec.block_size))
    with confs(spark, write_conf(spec)):
        writer.saveAsTable(qualified)


def append_rows(spark, spec: TableSpec, qualified: str, rows: list[dict], files: int) -> None:
    """A plain INSERT INTO (new files the sidecar does not know)."""
    view = f"append_{spec.name}"
    dataframe(spark, spec, rows, files).createOrReplaceTempView(view)
    cols = ", ".join(["id"] + [f"`{c.name}`" for c in COLUMNS] + ([spec.partition] if spec.partition else []))
    with confs(spark, write_conf(spec)):
        spark.sql(f"insert into {qualified} ({cols}) select {cols} from {view}")
    spark.catalog.dropTempView(view)


def write_parquet_with_pyarrow(rows: list[dict], path: str, row_group_size: int) -> None:
    """The rows (data columns only) as a parquet file written by pyarrow, typed as Spark writes the
    table (timestamps in microseconds)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
             "float": pa.float32(), "double": pa.float64(), "dec38": pa.decimal128(38, 18),
             "dec9": pa.decimal128(9, 2), "date": pa.date32(), "ts": pa.timestamp("us", tz="UTC"),
             "ntz": pa.timestamp("us"), "string": pa.string()}
    arrays = [pa.array([r["id"] for r in rows], pa.int32())]
    names = ["id"]
    for c in COLUMNS:
        arrays.append(pa.array([spark_value(c.key, r[c.key]) for r in rows], types[c.kind]))
        names.append(c.name)
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path, row_group_size=row_group_size)


def table_location(spark, qualified: str) -> str:
    rows = spark.sql(f"describe formatted {qualified}").collect()
    location = [r for r in rows if r[0] == "Location"][0][1]  # a path, not percent-encoded
    return location[len("file:"):] if location.startswith("file:") else location


def data_files_in_store(spark, location: str) -> list[str]:
    """The data files below an object store location (`s3a://...`), as `local` names them (the path
    part of the URI), listed through Hadoop's file system; hidden names skipped as Spark does."""
    jvm = spark._jvm
    root = jvm.org.apache.hadoop.fs.Path(location)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    out, todo = [], [root]
    while todo:
        for status in fs.listStatus(todo.pop()):
            name = str(status.getPath().getName())
            if name.startswith(("_", ".")):
                continue
            if status.isDirectory():
                todo.append(status.getPath())
            else:
                out.append(str(local(str(status.getPath().toUri().toString()))))  # encoded, as _metadata gives it
    return sorted(out)


def data_files_on_disk(location: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(location):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        out += [os.path.join(d, f) for f in files if not f.startswith(("_", "."))]
    return sorted(out)
