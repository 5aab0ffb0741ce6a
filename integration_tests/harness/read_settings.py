"""Differential testing of data skipping across file writers and read settings
(test_skipping_read_settings.py).

Files are written by pyarrow (with varied options: statistics off per column, INT96, decimals as
INT32 / INT64 / FLBA, unsigned types, several row groups, nanoseconds, field ids, column names
differing only in case, dates before 1582 without Spark's metadata), by DuckDB, by pyarrow's orc
writer and by Spark itself (legacy calendar, INT96, orc). Each scenario reads one file set under
some read settings (session confs, `spark.read` options, table OPTIONS, the Hadoop configuration)
and runs seeded random predicates over the columns Spark reads, each as its own scan, with the rule
on and off: the rows (a multiset of row hashes) must be equal. Spark is the only reference, so any
file, type or setting can be thrown at it.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from functools import reduce
from pathlib import Path
from typing import Callable

from pyspark.sql import functions as F

from harness.plans import SKIPPING_CONF
from harness.runner import FAST, error_text
from spark_clustering_dev.spark import confs
from spark_clustering_dev.sql import sql_str

FILES = 6
ROWS = 12

# ----------------------------------------------------------------------------------------------
# the logical data: per file a range of its own (so min/max separate the files), NULLs in some files,
# one file all NULL


def _rows(seed: int, ancient: bool = False) -> list[list[dict]]:
    rng = random.Random(seed)
    files = []
    for k in range(FILES):
        all_null = k == FILES - 1
        rows = []
        for j in range(ROWS):
            def v(x):
                return None if all_null or (k % 3 == 1 and rng.random() < 0.3) else x
            base = k * 100 + rng.randrange(100)
            day = (dt.date(1500, 3, 1) if ancient and k < 3 else dt.date(1960, 1, 1)) + \
                dt.timedelta(days=k * 4000 + rng.randrange(3000))
            fl = [float("nan"), -0.0, 0.0][rng.randrange(3)] if rng.random() < 0.1 else base / 7.0 - 300
            rows.append({
                "i8": v(k * 15 - 60 + rng.randrange(15)), "i16": v(base - 400), "i32": v(base * 1000 - 400_000),
                "i64": v(base * 10**12), "f32": v(fl), "f64": v(fl),
                "dec_s": v(Decimal(base - 400) / 100), "dec_l": v(Decimal(base * 10**9 + rng.randrange(10**6)) / 10**4),
                "d": v(day),
                "ts": v(dt.datetime.combine(day, dt.time(rng.randrange(24), rng.randrange(60)), dt.timezone.utc)),
                "ts_ntz": v(dt.datetime.combine(day, dt.time(rng.randrange(24), 0, 0, rng.randrange(10**6)))),
                "s": v(["", "a", "\u00e9t\u00e9", "zz", "prefix_"][k % 5] + f"{base:04d}"),
                "bo": v(k % 2 == 0 if rng.random() < 0.8 else k % 2 == 1),
                "bin": v(bytes([k, j])),
            })
        files.append(rows)
    return files


def _arrow_table(rows: list[dict], columns: list[str] | None = None, types: dict | None = None):
    import pyarrow as pa
    base = {
        "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(), "f32": pa.float32(),
        "f64": pa.float64(), "dec_s": pa.decimal128(9, 2), "dec_l": pa.decimal128(20, 4), "d": pa.date32(),
        "ts": pa.timestamp("us", tz="UTC"), "ts_ntz": pa.timestamp("us"), "s": pa.string(), "bo": pa.bool_(),
        "bin": pa.binary(),
    }
    base.update(types or {})
    names = columns or list(base)
    return pa.table({c: pa.array([r[c] for r in rows], type=base[c]) for c in names})


# ----------------------------------------------------------------------------------------------
# writers: each fills a directory with FILES files


def pyarrow_parquet(seed: int, ancient=False, columns=None, types=None, rename=None, **options) -> Callable[[Path], None]:
    def write(d: Path):
        import pyarrow.parquet as pq
        for k, rows in enumerate(_rows(seed, ancient)):
            t = _arrow_table(rows, columns, types)
            if rename:
                t = t.rename_columns([rename.get(c, c) for c in t.column_names])
            pq.write_table(t, d / f"part-{k:02d}.parquet", **options)
    return write


def pyarrow_case_columns(seed: int) -> Callable[[Path], None]:
    """`A` (int32) and `a` (uint16, read as int) in some files, only `A` in the others."""
    def write(d: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq
        rng = random.Random(seed)
        for k in range(FILES):
            cols = {"A": pa.array([k * 10 + rng.randrange(10) for _ in range(ROWS)], pa.int32())}
            if k % 2 == 0:
                cols["a"] = pa.array([k * 1000 + rng.randrange(100) for _ in range(ROWS)], pa.uint16())
            if k % 4 == 0:
                cols["B"] = pa.array([k * 7 + rng.randrange(5) for _ in range(ROWS)], pa.int64())
            elif k % 4 == 2:
                cols["b"] = pa.array([-k * 7 - rng.randrange(5) for _ in range(ROWS)], pa.int64())
            pq.write_table(pa.table(cols), d / f"part-{k:02d}.parquet")
    return write


def pyarrow_field_ids(seed: int) -> Callable[[Path], None]:
    """Columns whose names and field ids disagree between files: `x` has id 1 in even files and id
    2 in odd ones (where `y` has id 1)."""
    def write(d: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq
        rng = random.Random(seed)
        for k in range(FILES):
            ids = ("1", "2") if k % 2 == 0 else ("2", "1")
            schema = pa.schema([pa.field("x", pa.int32(), metadata={b"PARQUET:field_id": ids[0].encode()}),
                                pa.field("y", pa.int32(), metadata={b"PARQUET:field_id": ids[1].encode()})])
            x = [k * 10 + rng.randrange(10) for _ in range(ROWS)]
            y = [-k * 10 - rng.randrange(10) for _ in range(ROWS)]
            pq.write_table(pa.table([pa.array(x, pa.int32()), pa.array(y, pa.int32())], schema=schema),
                           d / f"part-{k:02d}.parquet")
    return write


def duckdb_parquet(seed: int, **copy_options) -> Callable[[Path], None]:
    def write(d: Path):
        import duckdb
        con = duckdb.connect()
        try:
            con.execute("SET TimeZone = 'UTC'")
            for k, rows in enumerate(_rows(seed)):
                arrow = _arrow_table(rows, [c for c in rows[0] if c != "bin"])  # noqa: F841 - read by duckdb
                opts = ", ".join(["FORMAT parquet"] + [f"{k2} {v}" for k2, v in copy_options.items()])
                con.execute(f"COPY (SELECT *, CAST(i64 AS HUGEINT) AS huge, CAST(ts AS TIMESTAMPTZ) AS tstz, "
                            f"CAST(dec_l AS DOUBLE) AS dbl FROM arrow) TO '{d / f'part-{k:02d}.parquet'}' ({opts})")
        finally:
            con.close()
    return write


def pyarrow_orc(seed: int, columns=None, rename=None) -> Callable[[Path], None]:
    def write(d: Path):
        import pyarrow.orc as po
        for k, rows in enumerate(_rows(seed)):
            t = _arrow_table(rows, columns or [c for c in rows[0] if c not in ("ts", "ts_ntz")])
            if rename:
                t = t.rename_columns([rename.get(c, c) for c in t.column_names])
            po.write_table(t, str(d / f"part-{k:02d}.orc"))
    return write


def spark_written(spark, source: Path, fmt: str, write_confs: dict[str, str]) -> Callable[[Path], None]:
    """Spark re-writes the pyarrow parquet files of `source`, one file each, under `write_confs`."""
    def write(d: Path):
        with confs(spark, {"spark.sql.session.timeZone": "UTC", **write_confs}):
            for f in sorted(source.glob("*.parquet")):
                spark.read.parquet(str(f)).drop("bin").coalesce(1).write.mode("append").format(fmt).save(str(d))
    return write


# ----------------------------------------------------------------------------------------------
# scenarios


@dataclass
class Scenario:
    name: str
    files: str  # the FileSet it reads
    read: Callable  # (spark, directory) -> DataFrame
    confs: dict[str, str] = field(default_factory=dict)  # session confs while it runs
    hadoop: dict[str, str] = field(default_factory=dict)  # set on the SparkContext's Hadoop configuration
    # "skips": the rule must skip files; "off": the rule must say the read setting is not modelled
    # and skip nothing; "any": either (e.g. statistics the footers cannot give)
    expect: str = "skips"
    setup: Callable | None = None  # (spark, directory) -> None, before reading (e.g. a table)


def parquet(**options):
    return lambda spark, d: spark.read.options(**options).parquet(str(d))


def orc(schema: str | None = None, **options):
    def read(spark, d):
        r = spark.read.options(**options)
        return (r.schema(schema) if schema else r).orc(str(d))
    return read


def parquet_schema(schema: str, **options):
    return lambda spark, d: spark.read.options(**options).schema(schema).parquet(str(d))


def table(name: str):
    return lambda spark, d: spark.table(name)


@contextlib.contextmanager
def hadoop_conf(spark, values: dict[str, str]):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    saved = {k: conf.get(k) for k in values}
    try:
        for k, v in values.items():
            conf.set(k, v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)


# ----------------------------------------------------------------------------------------------
# predicates over whatever Spark reads


SUPPORTED = ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "date",
             "timestamp", "timestamp_ntz", "string")


@dataclass
class Pred:
    column: object  # pyspark Column
    text: str
    sql: str | None = None  # the same as SQL text, when SQL can write it (not `x IN ()`)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Generator:
    """Random predicates over a DataFrame's columns; literals from its files' own min / max (where
    skipping decides), its values and each type's special values, as typed literals."""

    def __init__(self, rng: random.Random, columns: dict[str, str], samples: dict[str, list[str]]):
        self.rng = rng
        self.columns = {c: t for c, t in columns.items() if t.split("(")[0] in SUPPORTED}
        self.others = [c for c in columns if c not in self.columns]
        self.samples = samples

    def lit(self, c: str, allow_null: bool = True) -> str:
        t = self.columns[c]
        rng = self.rng
        if allow_null and rng.random() < 0.05:
            return f"cast(null as {t})"
        specials = {
            "float": ["NaN", "-0.0", "0.0", "Infinity", "-Infinity"], "double": ["NaN", "-0.0", "0.0", "-Infinity"],
            "string": ["", "a", "zz"], "boolean": ["true", "false"], "date": ["1582-10-15", "1500-01-01"],
            "timestamp": ["1970-01-01 00:00:00"], "timestamp_ntz": ["1582-10-14 00:00:00"],
        }.get(t.split("(")[0], ["0", "-1", "1"])
        pool = self.samples.get(c) or specials
        text = rng.choice(pool) if rng.random() < 0.85 else rng.choice(specials)
        return f"cast({sql_str(text)} as {t})"

    def leaf(self) -> Pred:
        rng = self.rng
        if not self.columns or (self.others and rng.random() < 0.05):
            c = rng.choice(self.others or list(self.columns))
            null = rng.choice(["IS NULL", "IS NOT NULL"])
            return self._sql(f"{_quote(c)} {null}")
        c = rng.choice(list(self.columns))
        q, t = _quote(c), self.columns[c]
        r = rng.random()
        if t == "boolean" and r < 0.3:
            return self._sql(q)
        if t == "string" and r < 0.25:
            prefix = rng.choice(self.samples.get(c) or ["a"])[:rng.randrange(0, 4)]
            return self._sql(rng.choice([f"startswith({q}, {sql_str(prefix)})", f"{q} LIKE {sql_str(prefix + '%')}"]))
        if r < 0.5:
            return self._sql(f"{q} {rng.choice(['=', '<', '<=', '>', '>=', '<=>'])} {self.lit(c)}")
        if r < 0.58 and t in ("tinyint", "smallint", "int", "bigint"):
            return self._sql(f"{q} {rng.choice(['=', '<', '>='])} {rng.randrange(-500, 900000)}.5D")
        if r < 0.62:
            return Pred(F.col(c).isin([]), f"{q} IN ()")
        if r < 0.78:
            n = rng.choice([1, 2, 3, 12])
            items = [self.lit(c, allow_null=rng.random() < 0.3) for _ in range(n)]
            return self._sql(f"{q} IN ({', '.join(items)})")
        if r < 0.88:
            return self._sql(f"{q} BETWEEN {self.lit(c, False)} AND {self.lit(c, False)}")
        if r < 0.92:
            return self._sql(f"coalesce({q}, {self.lit(c, False)}) = {self.lit(c, False)}")  # not understood
        return self._sql(f"{q} {rng.choice(['IS NULL', 'IS NOT NULL'])}")

    @staticmethod
    def _sql(text: str) -> Pred:
        return Pred(F.expr(text), text, text)

    def tree(self, depth: int = 3) -> Pred:
        rng = self.rng
        if depth == 0 or rng.random() < 0.4:
            return self.leaf()
        r = rng.random()
        if r < 0.75:
            a, b = self.tree(depth - 1), self.tree(depth - 1)
            op = "AND" if r < 0.4 else "OR"
            text = f"({a.text}) {op} ({b.text})"
            column = a.column & b.column if op == "AND" else a.column | b.column
            return Pred(column, text, text if a.sql and b.sql else None)
        a = self.tree(depth - 1)
        return Pred(~a.column, f"NOT ({a.text})", f"NOT ({a.sql})" if a.sql else None)

    def predicates(self, n: int) -> list[Pred]:
        return [self.tree() for _ in range(n)]


def samples(df, per_column: int = 40) -> dict[str, list[str]]:
    """Per supported column, text of its values Spark reads: every file's min and max (the
    boundaries skipping decides on) and some values."""
    out: dict[str, list[str]] = {}
    cols = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    usable = [(c, t) for c, t in cols if t.split("(")[0] in SUPPORTED and t != "boolean"]
    if not usable:
        return out
    aggs = []
    for c, _ in usable:
        aggs += [F.min(F.col(_quote(c))).cast("string").alias(f"min_{len(aggs)}"),
                 F.max(F.col(_quote(c))).cast("string").alias(f"max_{len(aggs) + 1}")]
    per_file = df.groupBy(F.col("_metadata.file_path")).agg(*aggs).collect()
    some = df.select(*[F.col(_quote(c)).cast("string").alias(f"v{i}") for i, (c, _) in enumerate(usable)]).limit(
        per_column).collect()
    for i, (c, _) in enumerate(usable):
        values = {r[1 + 2 * i] for r in per_file} | {r[2 + 2 * i] for r in per_file} | {r[i] for r in some}
        out[c] = sorted(v for v in values if v is not None)
    return out


# ----------------------------------------------------------------------------------------------
# running


@dataclass
class Outcome:
    pred: Pred
    rows_on: Counter | None
    rows_off: Counter | None
    error_on: str | None = None
    error_off: str | None = None


KEPT = re.compile(r"DataSkipping: kept (\d+) of (\d+) files")
KEPT_ALL = re.compile(r"DataSkipping: off \(.*?; kept all (\d+) files\)")
VIEW = "read_settings_source"


def _batch(spark, df, preds: list[Pred], skipping: bool) -> tuple[dict[int, Counter], int, int]:
    """One UNION ALL query, a branch per predicate: ({index: row-hash multiset}, files skipped,
    files listed) (the two counts over every scan of the rule, from its EXPLAIN text). Branches are
    SQL text over a view of `df` (one analysis), DataFrames where SQL cannot write the predicate."""
    columns = ", ".join(_quote(c) for c in df.columns)
    df.createOrReplaceTempView(VIEW)
    text = "\nunion all\n".join(f"select {i} as q, xxhash64({columns}) as h from {VIEW} where {p.sql}"
                                 for i, p in enumerate(preds) if p.sql)
    row_hash = F.xxhash64(*[F.col(_quote(c)) for c in df.columns]).alias("h")
    with confs(spark, {SKIPPING_CONF: "true" if skipping else "false", **FAST}):
        branches = ([spark.sql(text)] if text else []) + [
            df.where(p.column).select(F.lit(i).alias("q"), row_hash) for i, p in enumerate(preds) if not p.sql]
        q = reduce(lambda a, b: a.unionAll(b), branches)
        table = q.toArrow()
        skipped = before = 0
        if skipping:
            plan = q._jdf.queryExecution().executedPlan().toString()
            for kept, total in KEPT.findall(plan):
                skipped += int(total) - int(kept)
                before += int(total)
            before += sum(int(total) for total in KEPT_ALL.findall(plan))
    rows = {i: Counter() for i in range(len(preds))}
    for qi, h in zip(table.column("q").to_pylist(), table.column("h").to_pylist()):
        rows[qi][h] += 1
    return rows, skipped, before


def run(spark, df, preds: list[Pred], batch: int = 60) -> tuple[list[Outcome], int, int]:
    """Every predicate rule on and off: (outcomes, files skipped, files before skipping)."""
    outcomes: list[Outcome] = []
    totals = [0, 0]

    def pair(chunk: list[Pred]) -> list[Outcome]:
        try:
            off, _, _ = _batch(spark, df, chunk, skipping=False)
            on, skipped, before = _batch(spark, df, chunk, skipping=True)
            totals[0] += skipped
            totals[1] += before
            return [Outcome(p, on[i], off[i]) for i, p in enumerate(chunk)]
        except Exception as e:  # noqa: BLE001 - isolated below, then reported per predicate
            if "AssertionError" in type(e).__name__:
                raise
            if len(chunk) > 1:
                half = len(chunk) // 2
                return pair(chunk[:half]) + pair(chunk[half:])
            results = {}
            for skipping in (False, True):
                try:
                    rows, skipped, before = _batch(spark, df, chunk, skipping)
                    if skipping:
                        totals[0] += skipped
                        totals[1] += before
                    results[skipping] = (rows[0], None)
                except Exception as e2:  # noqa: BLE001
                    results[skipping] = (None, error_text(e2))
            return [Outcome(chunk[0], results[True][0], results[False][0], results[True][1], results[False][1])]

    for start in range(0, len(preds), batch):
        outcomes += pair(preds[start:start + batch])
    return outcomes, totals[0], totals[1]
