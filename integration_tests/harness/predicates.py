"""Random predicates for differential testing of data skipping, and a Python reference for them.

  - `Pred.truth(row)` evaluates a generated predicate on one row with Spark SQL's semantics
    (three-valued logic, NaN the largest and equal to itself, -0.0 = 0.0, strings in UTF-8 byte
    order, the implicit casts Spark inserts for the literal kinds generated here);
  - `Pred.possible(stats)` is a min/max evaluator written for these predicate forms: it says whether
    a file whose per-column bounds are `stats` may hold a row for which the predicate is TRUE;
  - `PredicateGenerator` draws them from a table's rows, its files' bounds and each type's special
    values (seeded: `seed_from_env`).
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
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from harness.statistics import UNKNOWN_COL, ColStats, FileStats
from harness.tables import (COLUMNS, DAY_MICROS, DBL_MAX, DEC, DEC_MAX, DEC_UNIT, EPOCH_DATE, EPOCH_TS, FLT_MAX,
                            MAX_DAY, MAX_MICROS, MIN_DAY, MIN_MICROS, PARTITION_COLUMNS, Column, days_of, domain_of,
                            f32, micros_of, sort_key)
from spark_clustering_dev.sql import sql_str

SEED_ENV = "SPARK_CLUSTERING_SKIPPING_SEED"


def seed_from_env(default: int) -> int:
    """A test's seed: SPARK_CLUSTERING_SKIPPING_SEED (`random` draws one) or `default`."""
    value = os.environ.get(SEED_ENV, "").strip()
    if value.lower() == "random":
        return random.SystemRandom().randrange(1, 2**31)
    return int(value) if value else default


# ----------------------------------------------------------------------------------------------
# values of the literals' types

INT_RANGE = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
             "int64": (-2**63, 2**63 - 1)}


def f32_next(x: float, up: bool) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    bits = struct.unpack("<i", struct.pack("<f", x))[0]
    if x == 0.0:
        bits = 1 if up else -2**31 + 1
        return struct.unpack("<f", struct.pack("<i", bits))[0]
    bits += 1 if (x > 0) == up else -1
    return struct.unpack("<f", struct.pack("<i", bits))[0]


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
        return [0, -1, MIN_DAY, MAX_DAY, days_of("1582-10-04"), days_of("1582-10-15"), days_of("1582-10-10"),
                days_of("1900-01-01"), days_of("1000-01-01")]
    if kind in ("ts", "ntz"):
        return [0, -1, 1, MIN_MICROS, MAX_MICROS, micros_of("1582-10-15 00:00:00"), micros_of("1900-01-01 00:00:00"),
                micros_of("1000-01-01 00:00:00")]
    if kind == "string":
        return ["", " ", "0", "A", "prefix_", "prefix_prefix_prefix_prefix_", "prefix_prefix_prefix_prefiy",
                "\u00e9", "\u4e2d\u6587", "\uff61", "\U0001F600", "\U0001F601", "\uffff", "zzz", "\u007f",
                "\u0080"]
    raise ValueError(kind)


# ----------------------------------------------------------------------------------------------
# predicates

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
