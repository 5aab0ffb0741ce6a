"""Data skipping's three-valued logic, checked against Spark itself (FileSkippingPredicate.scala).

For every expression form the evaluator accepts (=, <, <=, >, >=, <=>, IN with values, NULLs, only
NULLs or none, Spark's InSet, IS [NOT] NULL, startswith, a boolean column, order-preserving casts,
boolean literals) on every supported type, alone (every form) and under NOT and in AND / OR
combinations (samples: the logic of NOT / AND / OR over the forms' facts is checked without Spark by
the jar's unit suite, FileSkippingPredicateTest), over files whose rows are all one value, all NULL,
a value and NULL, or a range:

  - the files the rule keeps (its file index, skipping on) hold every file where Spark evaluates the
    predicate TRUE for some row (Spark's own answer: the predicate as a projected column, rule off);
  - on a file whose rows are all alike (one value, or all NULL), with exact statistics (the sidecar),
    the rule keeps the file exactly when Spark's answer for that row is TRUE: the evaluator's
    "can be TRUE / can be FALSE" is Spark's own, not an approximation, wherever it could be.

The optimizer normally rewrites many forms before the rule sees them (OptimizeIn turns `x IN ()`
into a constant, BooleanSimplification pushes NOT inward, ...): the exact check runs with those
rules excluded, so each form reaches the rule as written; a second pass with the default optimizer
checks soundness (and exactness of InSet, which only the optimizer creates).
"""
from __future__ import annotations

import random
import re
from collections import Counter
from functools import reduce

import pytest
from pyspark.sql import functions as F

from harness.plans import FILE_SCAN, SKIPPING_CONF, SKIPPING_SCAN, explain_summary
from harness.predicates import seed_from_env
from spark_clustering_dev.paths import local
from spark_clustering_dev.spark import confs
from spark_clustering_dev.sql import sql_str

SCHEMA = "it_test_skipping_three_valued"
SEED = seed_from_env(default=20261124)

# column -> (Spark type, data values low < mid < high, further literals (not in the data))
COLUMNS = {
    "b": ("boolean", ["false", "true", "true"], []),
    "ti": ("tinyint", ["-5", "0", "7"], ["-128", "-6", "3", "8", "127"]),
    "si": ("smallint", ["-5", "0", "7"], ["-6", "3", "8"]),
    "i": ("int", ["-5", "0", "7"], ["-2147483648", "-6", "3", "8"]),
    "bi": ("bigint", ["-5", "0", "7"], ["-6", "3", "8", "9223372036854775807"]),
    "f": ("float", ["-1.5", "0.0", "2.5"], ["NaN", "-0.0", "-Infinity", "Infinity", "1.0", "3.0"]),
    "d": ("double", ["-1.5", "0.0", "2.5"], ["NaN", "-0.0", "-Infinity", "Infinity", "1.0", "3.0"]),
    "dec": ("decimal(10,2)", ["-1.50", "0.00", "2.50"], ["-1.51", "1.00", "2.51"]),
    "dt": ("date", ["1969-12-31", "2000-01-01", "2024-02-29"], ["1500-03-01", "2000-01-02", "2024-03-01"]),
    "ts": ("timestamp", ["1969-12-31 23:59:59.999999", "2000-01-01 00:00:00", "2024-02-29 12:00:00"],
           ["1500-03-01 00:00:00", "2000-01-01 00:00:00.000001", "2030-01-01 00:00:00"]),
    "ntz": ("timestamp_ntz", ["1969-12-31 23:59:59.999999", "2000-01-01 00:00:00", "2024-02-29 12:00:00"],
            ["1500-03-01 00:00:00", "2000-01-01 00:00:00.000001", "2030-01-01 00:00:00"]),
    "s": ("string", ["a", "ab", "b\u00e9"], ["", "aa", "abc", "b", "c"]),
}
NAMES = list(COLUMNS)
LOW, MID, HIGH = 0, 1, 2

# The files, one INSERT each: a row is a column -> value index (None = NULL, "x" = the special
# value of the column). A file is "uniform" when its rows are identical.
SPECIAL = {"f": "NaN", "d": "-0.0"}
FILES = {
    "low": [{c: LOW for c in NAMES}] * 2,
    "mid": [{c: MID for c in NAMES}] * 2,
    "high": [{c: HIGH for c in NAMES}],
    "null": [{c: None for c in NAMES}] * 2,
    "mixed": [{c: MID for c in NAMES}, {c: None for c in NAMES}],
    "range": [{c: LOW for c in NAMES}, {c: HIGH for c in NAMES}],
    "special": [{c: ("x" if c in SPECIAL else HIGH) for c in NAMES}] * 2,
}
UNIFORM = {name for name, rows in FILES.items() if all(r == rows[0] for r in rows)}

# Optimizer rules that rewrite the forms before the rule sees them: excluded for the exact check.
RAW_FORMS = {"spark.sql.optimizer.excludedRules": ",".join(
    "org.apache.spark.sql.catalyst.optimizer." + r for r in [
        "OptimizeIn", "BooleanSimplification", "ConstantFolding", "NullPropagation", "ReplaceNullWithFalseInPredicate",
        "SimplifyBinaryComparison", "LikeSimplification", "InferFiltersFromConstraints", "UnwrapCastInBinaryComparison",
        "SimplifyConditionals", "PushFoldableIntoBranches", "PruneFilters", "ConstantPropagation"])}


def typed(column: str, text: str | None) -> str:
    """A literal of the column's type (a foldable cast of a string, as NaN and dates need)."""
    t = COLUMNS[column][0]
    return f"cast(null as {t})" if text is None else f"cast({sql_str(text)} as {t})"


def cell(column: str, value) -> str:
    if value is None:
        return typed(column, None)
    return typed(column, SPECIAL[column] if value == "x" else COLUMNS[column][1][value])


# ----------------------------------------------------------------------------------------------
# predicates: (Column, SQL text for messages, exact: every form is one the evaluator accepts)


class Pred:
    """A predicate as SQL text (`sql`), or, for what SQL cannot write (`x IN ()`), as a pyspark
    Column (`sql` None); `text` for messages; `exact`: every form is one the evaluator accepts."""

    def __init__(self, sql: str | None, exact: bool, column=None, text: str | None = None):
        self.sql = sql
        self._column = column
        self.text = text or sql
        self.exact = exact

    @property
    def column(self):
        return F.expr(self.sql) if self._column is None else self._column

    def _join(self, o, op: str, combine):
        sql = f"({self.sql}) {op} ({o.sql})" if self.sql and o.sql else None
        return Pred(sql, self.exact and o.exact, None if sql else combine(self.column, o.column),
                    f"({self.text}) {op} ({o.text})")

    def __invert__(self):
        return Pred(f"NOT ({self.sql})" if self.sql else None, self.exact, None if self.sql else ~self.column,
                    f"NOT ({self.text})")

    def __and__(self, o):
        return self._join(o, "AND", lambda a, b: a & b)

    def __or__(self, o):
        return self._join(o, "OR", lambda a, b: a | b)


def literals(c: str) -> list[str | None]:
    _, data, extra = COLUMNS[c]
    return list(dict.fromkeys(data + extra)) + [None]


def leaves(c: str, rng: random.Random) -> list[Pred]:
    """Every form on column `c`, with the data's values, NULL and two further literals."""
    t = COLUMNS[c][0]
    lits = literals(c)
    data = list(dict.fromkeys(COLUMNS[c][1]))
    chosen = data + rng.sample(COLUMNS[c][2], min(2, len(COLUMNS[c][2]))) + [None]
    out: list[Pred] = []
    for v in chosen:
        lit = typed(c, v)
        for op in ("=", "<", "<=", ">", ">=", "<=>"):
            out.append(Pred(f"{c} {op} {lit}", True))
        out.append(Pred(f"{lit} < {c}", True))
        out.append(Pred(f"{lit} = {c}", True))
        out.append(Pred(f"{c} IN ({lit})", True))
        other = typed(c, rng.choice(lits[:-1]))
        out.append(Pred(f"{c} IN ({lit}, {other})", True))
        out.append(Pred(f"{c} IN ({lit}, cast(null as {t}))", True))
    out.append(Pred(f"{c} IN (cast(null as {t}))", True))
    out.append(Pred(f"{c} IN (cast(null as {t}), cast(null as {t}))", True))
    out.append(Pred(None, True, F.col(c).isin([]), f"{c} IN ()"))
    lo, hi = sorted(rng.sample(lits[:-1], 2), key=lits.index)
    out.append(Pred(f"{c} BETWEEN {typed(c, lo)} AND {typed(c, hi)}", True))
    out.append(Pred(f"{c} IS NULL", True))
    out.append(Pred(f"{c} IS NOT NULL", True))
    if t == "boolean":
        out.append(Pred(c, True))
        out.append(Pred(f"{c} = true", True))
    if t == "string":
        for prefix in ["", "a", "ab", "abc", "b", "b\u00e9", "c"]:
            out.append(Pred(f"startswith({c}, {sql_str(prefix)})", True))
            # LIKE becomes startswith only through LikeSimplification (excluded for the exact check)
            out.append(Pred(f"{c} LIKE {sql_str(prefix + '%')}", False))
        out.append(Pred(f"upper({c}) = 'AB'", False))
    if t in ("tinyint", "smallint", "int", "bigint"):
        # a widening cast of the column, which Spark inserts against a double literal
        for v in ["-5.0", "-4.5", "0.5", "7.0"]:
            out.append(Pred(f"{c} = {v}D", True))
            out.append(Pred(f"{c} < {v}D", True))
        out.append(Pred(f"abs({c}) = 5", False))
    if t == "date":
        out.append(Pred(f"{c} < timestamp'2000-01-01 00:00:01'", True))
        out.append(Pred(f"{c} >= timestamp_ntz'1969-12-31 12:00:00'", True))
    if t in ("float", "double"):
        out.append(Pred(f"isnan({c})", False))
    return out


def in_sets(c: str) -> list[Pred]:
    """More than 10 values: the optimizer makes an InSet of the list (default optimizer only)."""
    lits = [x for x in literals(c) if x is not None]
    if len(lits) < 2:
        return []
    many = (lits * 12)[:12]
    wide = ", ".join(typed(c, v) for v in many)
    return [Pred(f"{c} IN ({wide})", True), Pred(f"{c} IN ({wide}, cast(null as {COLUMNS[c][0]}))", True)]


def predicates(rng: random.Random, with_in_sets: bool, sample: int | None = None, combined: bool = True) -> list[Pred]:
    """Every leaf and its NOT, then AND / OR of two random leaves (a quarter as many), or a random
    `sample` of all that; `combined=False`: every leaf alone."""
    by_column = {c: leaves(c, rng) + (in_sets(c) if with_in_sets else []) for c in NAMES}
    if not combined:
        return [p for c in NAMES for p in by_column[c]]
    out = []
    for c in NAMES:
        for p in by_column[c]:
            out += [p, ~p]
    every = [p for ps in by_column.values() for p in ps]
    for _ in range(len(out) // 6):
        p, q = rng.sample(every, 2)
        combined = rng.choice([p & q, p | q])
        out.append(~combined if rng.random() < 0.4 else combined)
    return out if sample is None else rng.sample(out, min(sample, len(out)))


# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(spark):
    spark.sql(f"create database if not exists {SCHEMA}")
    with confs(spark, {"spark.sql.adaptive.enabled": "false", SKIPPING_CONF: "true"}):
        yield spark
    spark.sql(f"drop database if exists {SCHEMA} cascade")


def build(spark, fmt: str) -> tuple[str, dict[str, str]]:
    """The table, one file per FILES entry: (name, {file path: FILES key})."""
    table = f"{SCHEMA}.alike_{fmt}"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (name string, {', '.join(f'{c} {COLUMNS[c][0]}' for c in NAMES)}) using {fmt}")
    for name, rows in FILES.items():
        values = ", ".join("(" + ", ".join([sql_str(name)] + [cell(c, r[c]) for c in NAMES]) + ")" for r in rows)
        spark.sql(f"insert into {table} select /*+ REPARTITION(1) */ * from values {values}")
    files = {str(local(r[0])): r[1] for r in
             spark.sql(f"select distinct _metadata.file_path, name from {table}").collect()}
    assert sorted(files.values()) == sorted(FILES), files
    return table, files


def truths(spark, table: str, preds: list[Pred]) -> list[set[str]]:
    """Per predicate, the files where Spark evaluates it TRUE for some row (as a projected column:
    Spark's own three-valued answer, rule off)."""
    out = [set() for _ in preds]
    with confs(spark, {SKIPPING_CONF: "false"}):
        for start in range(0, len(preds), 200):
            chunk = preds[start:start + 200]
            df = spark.table(table).select(F.col("_metadata.file_path").alias("_file"),
                                           *[p.column.alias(f"p{i}") for i, p in enumerate(chunk)])
            for row in df.collect():
                f = str(local(row["_file"]))
                for i in range(len(chunk)):
                    if row[f"p{i}"] is True:
                        out[start + i].add(f)
    return out


KEPT_PATH = re.compile(r"path=([^;]+);")
BRANCH = re.compile(r"Project \[(\d+) AS q#")


def kept_files(spark, table: str, preds: list[Pred]) -> list[set[str] | None]:
    """Per predicate, the files the rule's index keeps for a scan filtered by it (planned, not run);
    an empty set where Spark planned no scan (it proved the filter false), None where the scan is
    not the rule's. A few JVM calls per predicate: the union's branches, each branch's scan and its
    listing as text."""
    out: dict[int, set[str] | None] = {}
    source = spark.table(table)
    for start in range(0, len(preds), 100):
        chunk = list(enumerate(preds[start:start + 100], start))
        # SQL text where SQL can say it (one analysis), DataFrames for the rest
        text = "\nunion all\n".join(f"select {i} as q, name from {table} where {p.sql}" for i, p in chunk if p.sql)
        branches = ([spark.sql(text)] if text else []) + [
            source.where(p.column).select(F.lit(i).alias("q"), "name") for i, p in chunk if not p.sql]
        plan = reduce(lambda a, b: a.unionAll(b), branches)._jdf.queryExecution().executedPlan()
        while plan.nodeName() != "Union":  # below a code generation stage, when there is one
            assert plan.children().size() == 1, plan.toString()
            plan = plan.children().apply(0)
        children = plan.children()
        for k in range(children.size()):
            child = children.apply(k)
            q = int(BRANCH.search(child.toString()).group(1))
            leaves = child.collectLeaves()
            scans = [leaves.apply(j) for j in range(leaves.size())
                     if leaves.apply(j).getClass().getName() in (SKIPPING_SCAN, FILE_SCAN)]
            assert len(scans) <= 1, child.toString()
            if not scans:
                out[q] = set()
            elif scans[0].getClass().getName() != SKIPPING_SCAN:
                out[q] = None
            else:
                s = scans[0]
                listed = s.relation().location().listFiles(s.partitionFilters(), s.dataFilters()).toString()
                out[q] = {str(local(m)) for m in KEPT_PATH.findall(listed)}
    # a branch Spark proved empty is gone from the union: nothing kept
    return [out.get(i, set()) for i in range(len(preds))]


def check(spark, table: str, files: dict[str, str], preds: list[Pred], exact: bool, context: str,
          exact_only=None) -> Counter:
    got = kept_files(spark, table, preds)
    want = truths(spark, table, preds)
    failures, seen = [], Counter()
    for p, kept, truth in zip(preds, got, want):
        seen["predicates"] += 1
        if kept is None:
            # a plain scan reads every file; the rule plans only filters with a form it tests
            seen["not the rule's scan"] += 1
            if p.exact:
                failures.append(f"NOT PLANNED BY THE RULE: {p.text}")
            continue
        missing = truth - kept
        if missing:
            failures.append(f"SKIPPED A FILE WITH A TRUE ROW: {p.text}\n    files {sorted(files[f] for f in missing)}")
            continue
        if exact and p.exact and (exact_only is None or exact_only(p)):
            seen["exact checked"] += 1
            uniform = {f for f, name in files.items() if name in UNIFORM}
            extra = (kept - truth) & uniform
            if extra:
                failures.append(f"KEPT A UNIFORM FILE WITHOUT A TRUE ROW: {p.text}\n    files "
                                f"{sorted(files[f] for f in extra)} (Spark: TRUE in {sorted(files[f] for f in truth)})")
        seen["files kept"] += len(kept)
        seen["files with a TRUE row"] += len(truth)
    print(f"\n{context}: {dict(seen)}")
    assert not failures, f"{context}: {len(failures)} of {len(preds)} predicates (seed {SEED}):\n" + \
        "\n".join(failures[:30])
    return seen


def test_alike_files_exact_as_spark(session):
    """Exact statistics (sidecar), forms as written: kept exactly where Spark says TRUE. (The
    evaluator sees statistics, not files: one format is enough; both formats' footers below.)"""
    fmt = "parquet"
    table, files = build(session, fmt)
    session.sql(f"select * from write_file_stats('{table}', true)").collect()
    summary = explain_summary(session, f"select * from {table} where i > 0")
    assert summary is not None and summary["sidecar"] == len(FILES), summary
    # every form on every type as written: planned by the rule and exact on the alike files. NOT, AND
    # and OR over the forms are three-valued logic over the same facts: the jar's unit suite checks
    # that against Spark's evaluation of each row, the samples below through Spark
    preds = predicates(random.Random(SEED), with_in_sets=False, combined=False)
    assert len(preds) > 800
    with confs(session, RAW_FORMS):
        seen = check(session, table, files, preds, exact=True, context=f"{fmt}, sidecar, forms as written")
    assert seen["exact checked"] > 800, seen
    # the rule did skip: far fewer files kept than listed
    assert seen["files kept"] < 0.6 * len(FILES) * seen["predicates"], seen

    # ANSI mode changes what `NULL IN ()` is (FALSE, not NULL): the forms as written again, a sample
    with confs(session, {**RAW_FORMS, "spark.sql.ansi.enabled": "true"}):
        check(session, table, files, predicates(random.Random(SEED + 3), with_in_sets=False, sample=400),
              exact=True, context=f"{fmt}, sidecar, forms as written, ANSI mode")

    # the default optimizer: sound everywhere; InSet (made by the optimizer from > 10 values) exact
    preds = predicates(random.Random(SEED + 1), with_in_sets=True, sample=300)
    preds += [q for c in NAMES for p in in_sets(c) for q in (p, ~p)]
    in_set_texts = {p.text for c in NAMES for p in in_sets(c)}
    in_set_texts |= {f"NOT ({t})" for t in in_set_texts}
    check(session, table, files, preds, exact=True, context=f"{fmt}, sidecar, default optimizer",
          exact_only=lambda p: p.text in in_set_texts)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_alike_files_sound_from_footers(session, fmt):
    """Footer statistics (looser: a float's maximum, orc timestamps, ... are unknown): never a file
    with a TRUE row skipped."""
    table, files = build(session, fmt)
    summary = explain_summary(session, f"select * from {table} where i > 0")
    assert summary is not None and summary["footers"] == len(FILES), summary
    preds = predicates(random.Random(SEED + 2), with_in_sets=True, sample=300)
    with confs(session, RAW_FORMS):
        check(session, table, files, preds, exact=False, context=f"{fmt}, footers, forms as written")
    check(session, table, files, preds, exact=False, context=f"{fmt}, footers, default optimizer")
