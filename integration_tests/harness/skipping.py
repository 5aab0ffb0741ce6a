"""Differential testing of planning-time data skipping (DataSkipping.scala): tables, random
predicates, a Python reference, and the scan's own account of what it read.

Everything here is independent of the Scala code under test:
  - the rows are generated here and read back with the rule off into Python values ("canonical":
    dates as days since 1970-01-01, timestamps as microseconds, strings as str, floats as the float
    value, decimals as Decimal);
  - `Pred.truth(row)` evaluates a generated predicate on one row with Spark SQL's semantics
    (three-valued logic, NaN the largest and equal to itself, -0.0 = 0.0, strings in UTF-8 byte
    order, the implicit casts Spark inserts for the literal kinds generated here);
  - `Pred.possible(stats)` is a min/max evaluator written for these predicate forms: it says whether
    a file whose per-column bounds are `stats` may hold a row for which the predicate is TRUE;
  - per-file statistics come from the collected rows (exact) and, for parquet, from the footers as
    pyarrow reads them.
"""
from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import operator
import os
import random
import struct
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from harness.plans import skipping_summaries
from spark_clustering_dev.paths import local
from spark_clustering_dev.spark import confs
from spark_clustering_dev.sql import sql_str

SEED_ENV = "SPARK_CLUSTERING_SKIPPING_SEED"
SKIPPING_CONF = "spark.sparkclustering.skipping.enabled"
SKIPPING_SCAN = "org.apache.spark.sql.sparkclustering.skipping.DataSkippingScanExec"
FILE_SCAN = "org.apache.spark.sql.execution.FileSourceScanExec"
SKIPPING_INDEX = "org.apache.spark.sql.sparkclustering.skipping.DataSkippingFileIndex"

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
LONG_STRING_BYTES = 4096  # longer string bounds are not kept (FileStats.MaxStringBytes, parquet-mr's limit)


def seed_from_env(default: int) -> int:
    value = os.environ.get(SEED_ENV, "").strip()
    if value.lower() == "random":
        return random.SystemRandom().randrange(1, 2**31)
    return int(value) if value else default


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
INT_RANGE = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
             "int64": (-2**63, 2**63 - 1)}
DEC_UNIT = {"dec38": Decimal("1e-18"), "dec9": Decimal("0.01")}
DEC_MAX = {"dec38": Decimal("99999999999999999999.999999999999999999"), "dec9": Decimal("9999999.99")}


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_next(x: float, up: bool) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    bits = struct.unpack("<i", struct.pack("<f", x))[0]
    if x == 0.0:
        bits = 1 if up else -2**31 + 1
        return struct.unpack("<f", struct.pack("<i", bits))[0]
    bits += 1 if (x > 0) == up else -1
    return struct.unpack("<f", struct.pack("<i", bits))[0]


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


def to_domain(kind: str, domain: str, v: Any) -> Any:
    """A column value after the cast Spark puts on the column for a literal of `domain`."""
    if v is None:
        return None
    if domain == "double":
        return float(v)
    if domain == "decimal":
        return Decimal(v)
    if domain == "micros" and kind == "date":
        return v * DAY_MICROS
    return v


def day_iso(days: int) -> str:
    return (EPOCH_DATE + dt.timedelta(days=days)).isoformat()


def micros_iso(m: int) -> str:
    return (EPOCH_TS + dt.timedelta(microseconds=m)).isoformat(sep=" ")


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


def _days(s: str) -> int:
    return (dt.date.fromisoformat(s) - EPOCH_DATE).days


def _micros(s: str) -> int:
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
        r["dt"] = _interp(DATE_ANCHORS, frac, _days)
        r["ts"] = min(MAX_MICROS, _interp(TS_ANCHORS, frac, _micros) + (rng.randrange(1_000_000) if 0 < k < n - 1 else 0))
        r["ntz"] = min(MAX_MICROS, _interp(NTZ_ANCHORS, frac, _micros) + (rng.randrange(1_000_000) if 0 < k < n - 1 else 0))
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


# ----------------------------------------------------------------------------------------------
# per-file statistics (the reference's view of a file)


@dataclass
class ColStats:
    nonnull: int | None  # None = unknown
    nulls: int | None
    lo: Any = None  # canonical value, None = unknown
    hi: Any = None


@dataclass
class FileStats:
    rows: int | None
    cols: dict[str, ColStats]


UNKNOWN_COL = ColStats(None, None)


def exact_stats(rows: list[dict], columns: list[Column] = COLUMNS) -> FileStats:
    cols = {}
    for c in columns:
        values = [r[c.key] for r in rows if r[c.key] is not None]
        key = lambda v, c=c: sort_key(domain_of(c.kind), v)  # noqa: E731
        cols[c.key] = ColStats(len(values), len(rows) - len(values),
                               min(values, key=key) if values else None, max(values, key=key) if values else None)
    return FileStats(len(rows), cols)


def sidecar_view(stats: FileStats) -> FileStats:
    """Exact statistics as a sidecar can hold them: string bounds longer than the kept length are
    unknown (the only documented loss)."""
    cols = {}
    for name, cs in stats.cols.items():
        if name in PARTITION_COLUMNS:
            continue  # not in the data files: the rule has no statistics for it
        if BY_KEY[name].kind == "string":
            lo = cs.lo if cs.lo is None or len(cs.lo.encode()) <= LONG_STRING_BYTES else None
            hi = cs.hi if cs.hi is None or len(cs.hi.encode()) <= LONG_STRING_BYTES else None
            cs = ColStats(cs.nonnull, cs.nulls, lo, hi)
        cols[name] = cs
    return FileStats(stats.rows, cols)


def parquet_footer_stats(path: str) -> tuple[FileStats, dict]:
    """File-level bounds from a parquet footer (pyarrow), canonical. A bound is known when every row
    group holding a non-NULL value has it. Also returns facts about the file (timestamp unit,
    legacy-calendar marker)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
    facts = {"legacy_datetime": "org.apache.spark.legacyDateTime" in kv or "org.apache.spark.legacyINT96" in kv,
             "row_groups": meta.num_row_groups, "ts_physical": None}
    names = [meta.schema.column(j).name.lower() for j in range(meta.num_columns)]
    cols = {}
    for c in COLUMNS:
        if c.key not in names:
            cols[c.key] = UNKNOWN_COL
            continue
        j = names.index(c.key)
        logical = str(meta.schema.column(j).logical_type)
        physical = meta.schema.column(j).physical_type
        if c.key == "ts":
            facts["ts_physical"] = physical + ("" if physical == "INT96" else f" {logical}")
        lo = hi = None
        lo_known = hi_known = True
        nulls: int | None = 0
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            if rg.num_rows == 0:
                continue
            st = rg.column(j).statistics
            if st is None:
                lo_known = hi_known = False
                nulls = None
                continue
            nulls = nulls + st.null_count if (nulls is not None and st.has_null_count) else None
            if st.has_null_count and st.null_count == rg.num_rows:
                continue
            if not st.has_min_max:
                lo_known = hi_known = False
                continue
            a = _parquet_value(c, physical, logical, st.min_raw, lambda: st.min)
            b = _parquet_value(c, physical, logical, st.max_raw, lambda: st.max)
            if a is None:
                lo_known = False
            if b is None:
                hi_known = False
            k = lambda v, c=c: sort_key(domain_of(c.kind), v)  # noqa: E731
            if lo_known:
                lo = a if lo is None else min(lo, a, key=k)
            if hi_known:
                hi = b if hi is None else max(hi, b, key=k)
        nonnull = None if nulls is None else meta.num_rows - nulls
        cols[c.key] = ColStats(nonnull, nulls, lo if lo_known else None, hi if hi_known else None)
    return FileStats(meta.num_rows, cols), facts


def _parquet_value(c: Column, physical: str, logical: str, raw: Any, value: Callable[[], Any]) -> Any:
    if c.kind in ("dec38", "dec9"):
        v = value()
        return Decimal(v) if v is not None else None
    if c.kind == "string":
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if c.kind == "ts" or c.kind == "ntz":
        if physical != "INT64":
            return None
        if "milliseconds" in logical.lower() or "MILLIS" in logical:
            return raw * 1000
        if "nanoseconds" in logical.lower() or "NANOS" in logical:
            return None
        return raw
    if c.kind == "float":
        return f32(raw)
    return raw


# ----------------------------------------------------------------------------------------------
# literals


@dataclass(frozen=True)
class Lit:
    sql: str
    value: Any  # in `domain`; None = NULL
    domain: str
    cross: bool = False  # of another type than the column (Spark casts one side)


def null_lit(domain: str) -> Lit:
    return Lit("NULL", None, domain)


def same_type_lit(kind: str, v: Any, rng: random.Random) -> Lit:
    """A literal of the column's own type holding canonical value `v`."""
    d = domain_of(kind)
    if v is None:
        return null_lit(d)
    if kind == "bool":
        return Lit("true" if v else "false", v, d)
    if kind == "int8":
        return Lit(f"{v}Y" if rng.random() < 0.5 else str(v), v, d)
    if kind == "int16":
        return Lit(f"{v}S" if rng.random() < 0.5 else f"cast({v} as smallint)", v, d)
    if kind == "int32":
        return Lit(str(v), v, d)
    if kind == "int64":
        return Lit(f"cast('{v}' as bigint)" if v == -2**63 else f"{v}L", v, d)
    if kind in ("float", "double"):
        t = "float" if kind == "float" else "double"
        if math.isnan(v):
            text = rng.choice([f"cast('NaN' as {t})", f"{t}('NaN')"])
        elif math.isinf(v):
            text = rng.choice([f"cast('{'-' if v < 0 else ''}Infinity' as {t})", f"{t}('{'-' if v < 0 else ''}Infinity')"])
        elif kind == "float":
            text = rng.choice([f"cast('{v!r}' as float)", f"{v!r}F"])
        else:
            text = f"{v!r}D"
        return Lit(text, v, d)
    if kind in ("dec38", "dec9"):
        t = "decimal(38,18)" if kind == "dec38" else "decimal(9,2)"
        return Lit(rng.choice([f"{v:f}BD", f"cast('{v:f}' as {t})"]), v, d)
    if kind == "date":
        return Lit(rng.choice([f"DATE'{day_iso(v)}'", f"date_from_unix_date({v})"]), v, d)
    if kind == "ts":
        return Lit(rng.choice([f"TIMESTAMP'{micros_iso(v)}'", f"timestamp_micros({v})"]), v, d)
    if kind == "ntz":
        return Lit(f"TIMESTAMP_NTZ'{micros_iso(v)}'", v, d)
    if kind == "string":
        return Lit(sql_str(v), v, d)
    raise ValueError(kind)


def cross_type_lit(kind: str, v: Any, rng: random.Random) -> Lit | None:
    """A literal of another type near canonical value `v`, compared the way Spark coerces it."""
    if v is None:
        return None
    if kind in INT_RANGE:
        choice = rng.randrange(4)
        if choice == 0 and abs(v) < 2**52:
            x = v + rng.choice([0.0, 0.5, -0.5])
            return Lit(f"{x!r}D", x, "double", cross=True)
        if choice == 1:
            with decimal.localcontext(DEC):
                x = Decimal(v) + rng.choice([Decimal(0), Decimal("0.5"), Decimal("-0.5")])
            return Lit(f"{x:f}BD", x, "decimal", cross=True)
        if choice == 2 and kind != "int64":
            x = v + rng.choice([0, 2**40, -(2**40), 300, -300])
            return Lit(f"{x}L", x, "int", cross=True)
        if kind in ("int8", "int16"):  # an int literal, possibly out of the column's range
            x = v + rng.choice([0, 1, 200, -200, 40000, -40000])
            return Lit(str(x), x, "int", cross=True)
        return Lit(str(v) if kind != "int64" or abs(v) < 2**31 else f"{v}L", v, "int", cross=True)
    if kind == "float":
        if math.isnan(v) or math.isinf(v):
            return Lit(f"double('{'NaN' if math.isnan(v) else ('-' if v < 0 else '') + 'Infinity'}')", v, "double",
                       cross=True)
        x = rng.choice([v, float(round(v, 1)), float(int(v))])
        if rng.random() < 0.5 and x == int(x) and abs(x) < 2**24:
            return Lit(str(int(x)), float(int(x)), "double", cross=True)
        return Lit(f"{x!r}D", x, "double", cross=True)
    if kind == "double":
        if math.isnan(v) or math.isinf(v) or abs(v) > 1e15:
            return None
        if rng.random() < 0.5:
            x = int(v)
            return Lit(str(x), float(x), "double", cross=True)
        x = Decimal(repr(round(v, 2)))
        return Lit(f"{x:f}BD", float(x), "double", cross=True)
    if kind in ("dec38", "dec9"):
        choice = rng.randrange(3)
        if choice == 0:
            x = int(v)
            text = str(x) if abs(x) < 2**31 else f"{x}L" if abs(x) < 2**63 else f"cast('{x}' as decimal(38,0))"
            return Lit(text, Decimal(x), "decimal", cross=True)
        if choice == 1 and kind == "dec9":
            with decimal.localcontext(DEC):
                x = (v + Decimal("0.001")).quantize(Decimal("1e-18"))
            return Lit(f"cast('{x:f}' as decimal(38,18))", x, "decimal", cross=True)
        x = float(v)
        return Lit(f"{x!r}D", x, "double", cross=True)
    if kind == "date":
        if rng.random() < 0.5:
            m = v * DAY_MICROS + rng.choice([0, 1, -1, DAY_MICROS // 2])
            if MIN_MICROS <= m <= MAX_MICROS:
                return Lit(f"TIMESTAMP'{micros_iso(m)}'", m, "micros", cross=True)
            return None
        return Lit(sql_str(day_iso(v)), v, "days", cross=True)
    if kind in ("ts", "ntz"):
        day = v // DAY_MICROS + rng.choice([0, 1])
        if MIN_DAY <= day <= MAX_DAY:
            return Lit(f"DATE'{day_iso(day)}'", day * DAY_MICROS, "micros", cross=True)
    return None


def neighbor(kind: str, v: Any, rng: random.Random) -> Any:
    up = rng.random() < 0.5
    if kind == "bool":
        return not v
    if kind in INT_RANGE:
        lo, hi = INT_RANGE[kind]
        return min(hi, max(lo, v + (1 if up else -1)))
    if kind == "float":
        return f32_next(v, up)
    if kind == "double":
        return v if math.isnan(v) or math.isinf(v) else math.nextafter(v, math.inf if up else -math.inf)
    if kind in DEC_UNIT:
        with decimal.localcontext(DEC):
            x = v + DEC_UNIT[kind] if up else v - DEC_UNIT[kind]
        return min(DEC_MAX[kind], max(DEC_MAX[kind].copy_negate(), x))
    if kind == "date":
        return min(MAX_DAY, max(MIN_DAY, v + (1 if up else -1)))
    if kind in ("ts", "ntz"):
        return min(MAX_MICROS, max(MIN_MICROS, v + (1 if up else -1)))
    if kind == "string":
        return v + rng.choice([" ", "a", "\u00ff"]) if up or not v else v[:-1]
    raise ValueError(kind)


def specials(kind: str) -> list:
    if kind == "bool":
        return [True, False]
    if kind in INT_RANGE:
        lo, hi = INT_RANGE[kind]
        return [lo, hi, 0, -1, 1]
    if kind == "float":
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, f32(FLT_MAX), f32(1.401298464324817e-45)]
    if kind == "double":
        return [math.nan, math.inf, -math.inf, -0.0, 0.0, DBL_MAX, -DBL_MAX, 5e-324]
    if kind in DEC_UNIT:
        return [Decimal(0).quantize(DEC_UNIT[kind]), DEC_MAX[kind], DEC_MAX[kind].copy_negate(), DEC_UNIT[kind]]
    if kind == "date":
        return [0, -1, MIN_DAY, MAX_DAY, _days("1582-10-04"), _days("1582-10-15"), _days("1582-10-10"),
                _days("1900-01-01"), _days("1000-01-01")]
    if kind in ("ts", "ntz"):
        return [0, -1, 1, MIN_MICROS, MAX_MICROS, _micros("1582-10-15 00:00:00"), _micros("1900-01-01 00:00:00"),
                _micros("1000-01-01 00:00:00")]
    if kind == "string":
        return ["", " ", "0", "A", "prefix_", "prefix_prefix_prefix_prefix_", "prefix_prefix_prefix_prefiy",
                "\u00e9", "\u4e2d\u6587", "\uff61", "\U0001F600", "\U0001F601", "\uffff", "zzz", "\u007f",
                "\u0080"]
    raise ValueError(kind)


# ----------------------------------------------------------------------------------------------
# predicates

TRUE_FALSE = (True, True)


def _and3(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or3(a, b):
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _not3(a):
    return None if a is None else not a


def _key_fn(kind: str, domain: str) -> Callable[[Any], Any]:
    """to_domain then sort_key, as one function of a non-NULL column value."""
    if domain == "double":
        return lambda v: (1, 0.0) if v != v else (0, float(v) + 0.0)
    if domain == "decimal":
        return Decimal
    if domain == "micros" and kind == "date":
        return lambda v: v * DAY_MICROS
    if domain == "string":
        return lambda v: v.encode("utf-8")
    if domain == "bool":
        return int
    return lambda v: v


_OPS = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class Pred:
    simple = False  # a form the min/max reference decides exactly as a min/max skipper must

    def sql(self) -> str:
        raise NotImplementedError

    def truth(self, row: dict):
        """The predicate's value (True, False or None for NULL) on one row, as Spark SQL computes it."""
        return self.fn(row)

    @functools.cached_property
    def fn(self) -> Callable[[dict], Any]:
        return self._compile()

    def _compile(self) -> Callable[[dict], Any]:
        raise NotImplementedError

    def possible(self, fs: FileStats) -> tuple[bool, bool]:
        """(can be TRUE for some row of the file, can be FALSE for some row)."""
        raise NotImplementedError

    def columns(self) -> set[str]:
        raise NotImplementedError

    def may_match(self, fs: FileStats) -> bool:
        return (fs.rows is None or fs.rows > 0) and self.possible(fs)[0]


def _col_stats(fs: FileStats, col: Column) -> ColStats:
    return fs.cols.get(col.key, UNKNOWN_COL)


def _values_possible(cs: ColStats) -> bool:
    return cs.nonnull is None or cs.nonnull > 0


def _nulls_possible(cs: ColStats) -> bool:
    return cs.nulls is None or cs.nulls > 0


@dataclass(frozen=True)
class Cmp(Pred):
    col: Column
    op: str  # = < <= > >=
    lit: Lit

    @property
    def simple(self):
        return not self.lit.cross

    def sql(self):
        return f"{self.col.key} {self.op} {self.lit.sql}"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        if self.lit.value is None:
            return lambda row: None
        key, conv, op = self.col.key, _key_fn(self.col.kind, self.lit.domain), _OPS[self.op]
        b = sort_key(self.lit.domain, self.lit.value)

        def f(row):
            v = row[key]
            return None if v is None else op(conv(v), b)
        return f

    def possible(self, fs):
        if self.lit.value is None:
            return (False, False)
        cs = _col_stats(fs, self.col)
        if not _values_possible(cs):
            return (False, False)
        dom = self.lit.domain
        k = lambda v: None if v is None else sort_key(dom, to_domain(self.col.kind, dom, v))  # noqa: E731
        lo, hi, v = k(cs.lo), k(cs.hi), sort_key(dom, self.lit.value)
        if self.op == "=":
            return ((lo is None or lo <= v) and (hi is None or hi >= v), not (lo == v and hi == v))
        if self.op == "<":
            return (lo is None or lo < v, hi is None or hi >= v)
        if self.op == "<=":
            return (lo is None or lo <= v, hi is None or hi > v)
        if self.op == ">":
            return (hi is None or hi > v, lo is None or lo <= v)
        return (hi is None or hi >= v, lo is None or lo < v)


def _java_double_to_int(v: float) -> int:
    if v != v:
        return 0
    if v >= 2**31 - 1:
        return 2**31 - 1
    if v <= -2**31:
        return -2**31
    return int(v)  # toward zero


# explicit casts of a column: (column kinds, target SQL type, target kind, Python value of the cast)
CASTS = [
    (("int8", "int16", "int32"), "bigint", "int64", lambda v: v),
    (("int8", "int16", "int32", "int64"), "double", "double", float),
    (("int8", "int16", "int32"), "decimal(20,0)", "dec38", Decimal),
    (("float",), "double", "double", float),
    (("date",), "timestamp", "ts", lambda v: v * DAY_MICROS),
    (("ts", "ntz"), "date", "date", lambda v: v // DAY_MICROS),
    (("int8", "int16", "int32", "int64"), "string", "string", str),
    (("int16", "int32", "int64"), "tinyint", "int8", lambda v: ((v + 128) & 0xFF) - 128),
    (("double", "float"), "int", "int32", _java_double_to_int),
]


@dataclass(frozen=True)
class CastCmp(Pred):
    """`cast(column AS type) <op> literal`: order-preserving casts and ones that are not (to string,
    narrowing, double to int). Not an exact-check form."""
    col: Column
    target: str
    target_kind: str
    cast: Callable[[Any], Any]
    op: str
    lit: Lit
    simple = False

    def sql(self):
        return f"cast({self.col.key} as {self.target}) {self.op} {self.lit.sql}"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        if self.lit.value is None:
            return lambda row: None
        key, cast, op = self.col.key, self.cast, _OPS[self.op]
        conv = _key_fn(self.target_kind, self.lit.domain)
        b = sort_key(self.lit.domain, self.lit.value)

        def f(row):
            v = row[key]
            return None if v is None else op(conv(cast(v)), b)
        return f

    def possible(self, fs):
        cs = _col_stats(fs, self.col)
        if self.lit.value is None or not _values_possible(cs):
            return (False, False)
        return (True, True)


@dataclass(frozen=True)
class NullSafeEq(Pred):
    col: Column
    lit: Lit

    @property
    def simple(self):
        return not self.lit.cross

    def sql(self):
        return f"{self.col.key} <=> {self.lit.sql}"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        key = self.col.key
        if self.lit.value is None:
            return lambda row: row[key] is None
        eq = Cmp(self.col, "=", self.lit).fn
        return lambda row: False if row[key] is None else eq(row)

    def possible(self, fs):
        cs = _col_stats(fs, self.col)
        if self.lit.value is None:
            return (_nulls_possible(cs), _values_possible(cs))
        t, f = Cmp(self.col, "=", self.lit).possible(fs)
        return (t, f or _nulls_possible(cs))


@dataclass(frozen=True)
class In(Pred):
    col: Column
    lits: tuple

    @property
    def simple(self):
        return not any(l.cross for l in self.lits)

    def sql(self):
        return f"{self.col.key} IN ({', '.join(l.sql for l in self.lits)})"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        key = self.col.key
        domains = {l.domain for l in self.lits}
        assert len(domains) == 1, self.sql()
        domain = domains.pop()
        conv = _key_fn(self.col.kind, domain)
        keys = {sort_key(domain, l.value) for l in self.lits if l.value is not None}
        has_null = any(l.value is None for l in self.lits)

        def f(row):
            v = row[key]
            if v is None:
                return None
            if conv(v) in keys:
                return True
            return None if has_null else False
        return f

    def possible(self, fs):
        cs = _col_stats(fs, self.col)
        if not _values_possible(cs):
            return (False, False)
        can_true = any(Cmp(self.col, "=", l).possible(fs)[0] for l in self.lits if l.value is not None)
        return (can_true, all(l.value is not None for l in self.lits))


@dataclass(frozen=True)
class Between(Pred):
    col: Column
    lo: Lit
    hi: Lit

    @property
    def simple(self):
        return not (self.lo.cross or self.hi.cross)

    def sql(self):
        return f"{self.col.key} BETWEEN {self.lo.sql} AND {self.hi.sql}"

    def columns(self):
        return {self.col.key}

    def _as_and(self):
        return And(Cmp(self.col, ">=", self.lo), Cmp(self.col, "<=", self.hi))

    def _compile(self):
        return self._as_and().fn

    def possible(self, fs):
        return self._as_and().possible(fs)


@dataclass(frozen=True)
class IsNull(Pred):
    col: Column
    negated: bool = False
    simple = True

    def sql(self):
        return f"{self.col.key} IS {'NOT ' if self.negated else ''}NULL"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        key, negated = self.col.key, self.negated
        return lambda row: (row[key] is None) != negated

    def possible(self, fs):
        cs = _col_stats(fs, self.col)
        t, f = _nulls_possible(cs), _values_possible(cs)
        return (f, t) if self.negated else (t, f)


@dataclass(frozen=True)
class StartsWith(Pred):
    col: Column
    prefix: str
    form: str  # startswith | like | like_escaped

    @property
    def simple(self):
        return self.form != "like_escaped"

    def sql(self):
        if self.form == "startswith":
            return f"startswith({self.col.key}, {sql_str(self.prefix)})"
        pattern = self.prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"{self.col.key} LIKE {sql_str(pattern + '%')}"

    def columns(self):
        return {self.col.key}

    def _compile(self):
        key, prefix = self.col.key, self.prefix.encode("utf-8")

        def f(row):
            v = row[key]
            return None if v is None else v.encode("utf-8").startswith(prefix)
        return f

    def possible(self, fs):
        cs = _col_stats(fs, self.col)
        if not _values_possible(cs):
            return (False, False)
        p = self.prefix.encode("utf-8")
        ok = (cs.hi is None or cs.hi.encode("utf-8") >= p) and (cs.lo is None or cs.lo.encode("utf-8")[:len(p)] <= p)
        return (ok, True)


@dataclass(frozen=True)
class BoolCol(Pred):
    col: Column
    simple = True

    def sql(self):
        return self.col.key

    def columns(self):
        return {self.col.key}

    def _compile(self):
        key = self.col.key
        return lambda row: row[key]

    def possible(self, fs):
        return Cmp(self.col, "=", Lit("true", True, "bool")).possible(fs)


@dataclass(frozen=True)
class Not(Pred):
    a: Pred
    simple = False

    def sql(self):
        return f"NOT ({self.a.sql()})"

    def columns(self):
        return self.a.columns()

    def _compile(self):
        a = self.a.fn
        return lambda row: _not3(a(row))

    def possible(self, fs):
        t, f = self.a.possible(fs)
        return (f, t)


def _both(x, y):
    return x and y


def _either(x, y):
    return x or y


@dataclass(frozen=True)
class _Connective(Pred):
    """`(a) <op> (b)`. A subclass names the operator `op`, its three-valued function `join3`, and
    how the sides' (can be TRUE, can be FALSE) combine: `true_if`, `false_if` (_both or _either)."""
    a: Pred
    b: Pred

    @property
    def simple(self):
        return self.a.simple and self.b.simple and not (self.a.columns() & self.b.columns())

    def sql(self):
        return f"({self.a.sql()}) {self.op} ({self.b.sql()})"

    def columns(self):
        return self.a.columns() | self.b.columns()

    def _compile(self):
        a, b, join3 = self.a.fn, self.b.fn, self.join3
        return lambda row: join3(a(row), b(row))

    def possible(self, fs):
        (t1, f1), (t2, f2) = self.a.possible(fs), self.b.possible(fs)
        return (self.true_if(t1, t2), self.false_if(f1, f2))


@dataclass(frozen=True)
class And(_Connective):
    op = "AND"
    join3 = staticmethod(_and3)
    true_if, false_if = staticmethod(_both), staticmethod(_either)


@dataclass(frozen=True)
class Or(_Connective):
    op = "OR"
    join3 = staticmethod(_or3)
    true_if, false_if = staticmethod(_either), staticmethod(_both)


@dataclass(frozen=True)
class NotIn(Pred):
    """`c NOT IN (...)` / `c NOT BETWEEN ..`: Not of the form, written as SQL writes it."""
    inner: Pred
    simple = False

    def sql(self):
        s = self.inner.sql()
        return s.replace(" IN (", " NOT IN (", 1) if isinstance(self.inner, In) else s.replace(" BETWEEN ", " NOT BETWEEN ", 1)

    def columns(self):
        return self.inner.columns()

    def _compile(self):
        a = self.inner.fn
        return lambda row: _not3(a(row))

    def possible(self, fs):
        t, f = self.inner.possible(fs)
        return (f, t)


# ----------------------------------------------------------------------------------------------
# the generator


class PredicateGenerator:
    """Random predicates over a table's current rows. Literals come from the data (existing values,
    a file's exact min or max, their neighbours), from outside it, and from each type's special
    values; a quarter are NULL-free flat AND/OR trees of simple forms over distinct columns."""

    def __init__(self, rng: random.Random, rows: list[dict], file_stats: dict[str, FileStats],
                 columns: list[Column] | None = None):
        self.rng = rng
        self.columns = columns or COLUMNS
        self.weights = [0.25 if c.key in PARTITION_COLUMNS else 1.0 for c in self.columns]
        self.values = {c.key: [r[c.key] for r in rows if r[c.key] is not None] for c in self.columns}
        self.bounds = {c.key: [v for fs in file_stats.values() for v in (fs.cols[c.key].lo, fs.cols[c.key].hi)
                               if v is not None] for c in self.columns}

    def value(self, col: Column) -> Any:
        rng, kind = self.rng, col.kind
        values, bounds = self.values[col.key], self.bounds[col.key]
        r = rng.random()
        if r < 0.35 and bounds:
            v = rng.choice(bounds)
            return neighbor(kind, v, rng) if rng.random() < 0.4 else v
        if r < 0.6 and values:
            return rng.choice(values)
        if r < 0.75 and values:
            return neighbor(kind, rng.choice(values), rng)
        return rng.choice(specials(kind))

    def lit(self, col: Column, allow_null=True, allow_cross=True) -> Lit:
        rng = self.rng
        if allow_null and rng.random() < 0.04:
            return null_lit(domain_of(col.kind))
        v = self.value(col)
        if allow_cross and rng.random() < 0.2:
            lit = cross_type_lit(col.kind, v, rng)
            if lit is not None:
                return lit
        return same_type_lit(col.kind, v, rng)

    def leaf(self, simple_only=False, exclude: set[str] = frozenset()) -> Pred:
        rng = self.rng
        pairs = [(c, w) for c, w in zip(self.columns, self.weights) if c.key not in exclude] or \
            list(zip(self.columns, self.weights))
        col = rng.choices([c for c, _ in pairs], weights=[w for _, w in pairs])[0]
        cross = not simple_only
        r = rng.random()
        if col.kind == "bool" and r < 0.3:
            return BoolCol(col)
        if col.kind == "string" and r < 0.25:
            return self.starts_with(col, simple_only)
        if r < 0.5:
            casts = [c for c in CASTS if col.kind in c[0]]
            if cross and casts and rng.random() < 0.2:
                _, target, target_kind, fn = rng.choice(casts)
                v = self.value(col)
                if target_kind == "int8" or target_kind == "int32" and col.kind in ("double", "float"):
                    lit = same_type_lit(target_kind, fn(v), rng)
                else:
                    lit = same_type_lit(target_kind, fn(v), rng) if rng.random() < 0.7 else \
                        same_type_lit(target_kind, neighbor(target_kind, fn(v), rng), rng)
                return CastCmp(col, target, target_kind, fn, rng.choice(["=", "<", "<=", ">", ">="]), lit)
            return Cmp(col, rng.choice(["=", "<", "<=", ">", ">="]), self.lit(col, allow_cross=cross))
        if r < 0.58:
            return NullSafeEq(col, self.lit(col, allow_cross=cross))
        if r < 0.75:
            return self.in_list(col, cross)
        if r < 0.87:
            a, b = self.lit(col, allow_null=False, allow_cross=False), self.lit(col, allow_null=False,
                                                                               allow_cross=False)
            if rng.random() < 0.8 and sort_key(a.domain, a.value) > sort_key(b.domain, b.value):
                a, b = b, a
            return Between(col, a, b)
        return IsNull(col, negated=rng.random() < 0.5)

    def in_list(self, col: Column, cross: bool) -> Pred:
        rng = self.rng
        n = rng.choice([1, 2, 3, 5]) if rng.random() < 0.85 else rng.randrange(11, 20)  # > 10: Spark's InSet
        first = self.lit(col, allow_null=False, allow_cross=cross)
        lits = [first]
        for _ in range(n - 1):
            v = self.value(col)
            lit = cross_type_lit(col.kind, v, rng) if first.cross else same_type_lit(col.kind, v, rng)
            if lit is not None and lit.domain == first.domain:
                lits.append(lit)
        if rng.random() < 0.2:
            lits.insert(rng.randrange(len(lits) + 1), null_lit(first.domain))
        return In(col, tuple(lits))

    def starts_with(self, col: Column, simple_only: bool) -> Pred:
        rng = self.rng
        if rng.random() < 0.75 and self.values[col.key]:
            v = rng.choice(self.bounds[col.key] or self.values[col.key]) if rng.random() < 0.5 else \
                rng.choice(self.values[col.key])
            prefix = v[:rng.randrange(0, min(len(v), 40) + 1)]
        else:
            prefix = rng.choice(specials("string"))
        special = any(ch in prefix for ch in "%_\\")
        forms = ["startswith", "like"] if not special else ["startswith"] + ([] if simple_only else ["like_escaped"])
        return StartsWith(col, prefix, rng.choice(forms))

    def simple(self) -> Pred:
        """A flat AND/OR of 1-3 simple forms, each on its own column."""
        rng = self.rng
        used: set[str] = set()
        p = self.leaf(simple_only=True)
        used |= p.columns()
        for _ in range(rng.choice([0, 0, 1, 2])):
            q = self.leaf(simple_only=True, exclude=used)
            if q.columns() & used:
                break
            used |= q.columns()
            p = And(p, q) if rng.random() < 0.5 else Or(p, q)
        return p

    def random(self, depth: int = 3) -> Pred:
        rng = self.rng
        if depth == 0 or rng.random() < 0.35:
            p = self.leaf()
            if isinstance(p, (In, Between)) and rng.random() < 0.2:
                return NotIn(p)
            return p
        r = rng.random()
        if r < 0.4:
            return And(self.random(depth - 1), self.random(depth - 1))
        if r < 0.75:
            return Or(self.random(depth - 1), self.random(depth - 1))
        return Not(self.random(depth - 1))

    def predicates(self, n: int) -> list[Pred]:
        return [self.simple() if self.rng.random() < 0.45 else self.random() for _ in range(n)]


# ----------------------------------------------------------------------------------------------
# the scan's account of itself


def _children(node) -> list:
    ch = node.children()
    return [ch.apply(i) for i in range(ch.size())]


def _class_names(node) -> list[str]:
    names, cls = [], node.getClass()
    while cls is not None:
        names.append(cls.getName())
        cls = cls.getSuperclass()
    return names


def file_scans(node) -> list:
    """Every FileSourceScanExec (or subclass) below `node`, depth-first, left to right."""
    out = []
    if FILE_SCAN in _class_names(node):
        out.append(node)
    for c in _children(node):
        out += file_scans(c)
    return out


@dataclass
class ScanInfo:
    table: str
    skipping: bool  # the rule's scan node
    num_files: int  # Spark's "number of files read"
    skipped: int | None
    before: int | None
    kept_files: list[str] | None  # what the rule's file index listed for the scan (local paths)
    text: str
    rule_index: bool = False  # the scan lists its files through the rule's DataSkippingFileIndex


def scan_info(node, list_files: bool) -> ScanInfo:
    metrics = node.metrics()

    def metric(name):
        m = metrics.get(name)
        return int(m.get().value()) if m.isDefined() else None

    skipping = SKIPPING_SCAN in _class_names(node)
    index = node.relation().location()
    rule_index = index.getClass().getName() == SKIPPING_INDEX
    kept = None
    if list_files and (skipping or rule_index):
        if rule_index:
            dirs = index.listFiles(node.partitionFilters(), node.dataFilters())
            kept = []
            for i in range(dirs.size()):
                files = dirs.apply(i).files()
                kept += [files.apply(j).getPath().toUri().getPath() for j in range(files.size())]
    ident = node.tableIdentifier()
    table = ident.get().table() if ident.isDefined() else ""
    return ScanInfo(table, skipping, metric("numFiles"), metric("filesSkippedByStats"), metric("filesBeforeSkipping"),
                    kept, node.simpleString(10_000), rule_index)


def union_branches(plan) -> dict[int, list]:
    """{q: scans} of a `select <q> as q, ... union all ...` plan (branches Spark proved empty are
    gone from the union; their scans are absent)."""
    def find_union(n):
        if n.getClass().getName().endswith(".UnionExec"):
            return n
        for c in _children(n):
            u = find_union(c)
            if u is not None:
                return u
        return None

    union = find_union(plan)
    branches = _children(union) if union is not None else [plan]
    out: dict[int, list] = {}
    for b in branches:
        q = _branch_literal(b)
        if q is None:
            raise AssertionError(f"cannot find the branch number in:\n{b.toString()}")
        out[q] = file_scans(b)
    return out


def _branch_literal(node):
    if node.getClass().getName().endswith(".ProjectExec"):
        projections = node.projectList()
        first = projections.apply(0)
        if first.name() == "q" and first.child().getClass().getName().endswith(".Literal"):
            return int(first.child().value())
    if node.getClass().getName().endswith(".LocalTableScanExec"):
        return None
    for c in _children(node):
        q = _branch_literal(c)
        if q is not None:
            return q
    return None


# ----------------------------------------------------------------------------------------------
# reading a table back


@dataclass
class TableState:
    spec: TableSpec
    qualified: str
    location: str
    rows: list[dict]  # canonical, with "_file" (local path)
    files: list[str]  # data files on disk
    exact: dict[str, FileStats] = field(default_factory=dict)
    footer: dict[str, FileStats] = field(default_factory=dict)  # parquet only
    footer_facts: dict[str, dict] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # file -> "sidecar" | "footer": what the rule should use

    def rows_by_file(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {f: [] for f in self.files}
        for r in self.rows:
            out.setdefault(r["_file"], []).append(r)
        return out

    def reference_stats(self) -> dict[str, FileStats]:
        """Per file, the statistics the rule is documented to have: the sidecar's (exact, minus long
        strings) or the footer's (parquet: as pyarrow reads it; orc: unknown here)."""
        out = {}
        for f in self.files:
            if self.source.get(f) == "sidecar":
                out[f] = sidecar_view(self.exact[f])
            elif f in self.footer:
                out[f] = self.footer[f]
            else:
                out[f] = FileStats(None, {})
        return out


def read_state(spark, spec: TableSpec, qualified: str, source: dict[str, str] | None = None) -> TableState:
    """The table's rows (rule off) with the file of each, its files on disk, exact per-file
    statistics and, for parquet, the footers' statistics."""
    select = ", ".join(["id", "_metadata.file_path as _file"] + [f"{c.canonical} as {c.key}"
                                                                  for c in table_columns(spec)])
    with confs(spark, {SKIPPING_CONF: "false"}):
        collected = spark.sql(f"select {select} from {qualified}").collect()
    rows = []
    for r in collected:
        d = r.asDict()
        d["_file"] = str(local(d["_file"]))
        rows.append(d)
    location = table_location(spark, qualified)
    in_store = "://" in location  # an object store: no footer is read here (they are not local files)
    files = data_files_in_store(spark, location) if in_store else data_files_on_disk(location)
    state = TableState(spec, qualified, location, rows, files)
    for f, rs in state.rows_by_file().items():
        state.exact[f] = exact_stats(rs, table_columns(spec))
    if spec.fmt == "parquet" and not in_store:
        for f in state.files:
            state.footer[f], state.footer_facts[f] = parquet_footer_stats(f)
    state.source = dict(source or {})
    return state


# ----------------------------------------------------------------------------------------------
# running predicates


@dataclass
class Outcome:
    pred: Pred
    rows_on: Counter | None  # None: the query failed (error_on)
    rows_off: Counter | None
    scan: ScanInfo | None  # the rule-on scan (None: Spark planned no scan)
    scan_off: ScanInfo | None
    error_on: str | None = None
    error_off: str | None = None
    note: str | None = None


# Many small scans per query: one task per scan, no code generation to compile per predicate. The
# rule works at planning, so neither changes what it decides; the other tests run Spark's defaults.
FAST = {"spark.sql.files.minPartitionNum": "1", "spark.sql.files.openCostInBytes": "1",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN", "spark.sql.codegen.wholeStage": "false"}
NO_PUSHDOWN = {"spark.sql.orc.filterPushdown": "false", "spark.sql.parquet.filterPushdown": "false"}


def run_batch(spark, state: TableState, preds: list[Pred], skipping: bool, list_files: bool):
    """One UNION ALL query, one branch (and one scan) per predicate: {index: (rows, scan)}."""
    branches = [f"select {i} as q, id, hash(*) as h from {state.qualified} where {p.sql()}"
                for i, p in enumerate(preds)]
    with confs(spark, {SKIPPING_CONF: "true" if skipping else "false", **FAST}):
        df = spark.sql("\nunion all\n".join(branches))
        collected = df.toArrow()
        plan = df._jdf.queryExecution().executedPlan()
        scans = union_branches(plan)
        infos = {q: [scan_info(s, list_files) for s in ss] for q, ss in scans.items()}
    rows = {i: Counter() for i in range(len(preds))}
    for q, i, h in zip(*(collected.column(c).to_pylist() for c in ("q", "id", "h"))):
        rows[q][(i, h)] += 1
    out = {}
    for i in range(len(preds)):
        ss = infos.get(i, [])
        if len(ss) > 1:
            raise AssertionError(f"branch {i} has {len(ss)} scans")
        out[i] = (rows[i], ss[0] if ss else None)
    return out


def _error_text(e: Exception) -> str:
    text = str(e)
    for line in text.splitlines():
        if "Exception" in line or "Error" in line or "SQLSTATE" in line:
            return line.strip()[:400]
    return text.strip().splitlines()[0][:400] if text.strip() else type(e).__name__


def _run_pair(spark, state, preds, list_files) -> list[Outcome]:
    try:
        off = run_batch(spark, state, preds, skipping=False, list_files=False)
        on = run_batch(spark, state, preds, skipping=True, list_files=list_files)
        return [Outcome(p, on[i][0], off[i][0], on[i][1], off[i][1]) for i, p in enumerate(preds)]
    except Exception as e:  # noqa: BLE001 - a failing query is isolated and reported, not hidden
        if "AssertionError" in type(e).__name__:
            raise
        if len(preds) > 1:
            half = len(preds) // 2
            return _run_pair(spark, state, preds[:half], list_files) + _run_pair(spark, state, preds[half:], list_files)
        def both(extra_conf):
            results = {}
            with confs(spark, extra_conf):
                for skipping in (False, True):
                    try:
                        results[skipping] = (run_batch(spark, state, preds, skipping, list_files and skipping)[0], None)
                    except Exception as e2:  # noqa: BLE001
                        results[skipping] = ((None, None), _error_text(e2))
            (rows_off, scan_off), err_off = results[False]
            (rows_on, scan_on), err_on = results[True]
            return Outcome(preds[0], rows_on, rows_off, scan_on, scan_off, err_on, err_off)

        first = both({})
        if first.error_on and first.error_off:
            # Spark fails the query by itself (e.g. orc's reader on a pushed-down IN list holding
            # NULL): compare the two without Spark's own filter pushdown into the reader
            second = both(NO_PUSHDOWN)
            second.note = f"without reader pushdown (with it Spark fails: {first.error_off})"
            return [second]
        return [first]


def run_predicates(spark, state: TableState, preds: list[Pred], batch: int = 60,
                   list_files: bool = True) -> list[Outcome]:
    outcomes = []
    for start in range(0, len(preds), batch):
        outcomes += _run_pair(spark, state, preds[start:start + batch], list_files)
    return outcomes


def explain_summary(spark, sql: str) -> dict | None:
    """The first skipping scan's summary in the executed plan of `sql` with skipping on (+ the plan
    text), or None when the plan has no skipping scan."""
    with confs(spark, {SKIPPING_CONF: "true"}):
        text = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    found = skipping_summaries(text)
    return {**found[0], "text": text} if found else None
