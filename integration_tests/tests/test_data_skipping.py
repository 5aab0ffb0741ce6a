"""Planning-time data skipping (DataSkipping.scala, FileSkippingPredicate.scala, FileStatsStore.scala)
against Spark without it and against a Python reference, on real parquet and orc tables
(harness/tables.py: the data; predicates.py: the predicate generator and the Python reference;
statistics.py: per-file statistics; plans.py: the scan metrics; runner.py: running them).

Seeded random predicates (the seed is printed; SPARK_CLUSTERING_SKIPPING_SEED=<n> replays a run,
=random draws one; SPARK_CLUSTERING_SKIPPING_N sets the predicates per table and scenario, 40 by
default: about 730 in all; 60 gave 1,100, which CI's time no longer affords), each run as its own scan (one UNION ALL branch per predicate), rule
on and rule off:
  - the rows (id, hash of the whole row) with the rule on equal those with it off, and equal the
    rows for which the predicate is TRUE in Python (harness.predicates.Pred.truth); where Spark
    without the rule disagrees with Python because of its own reader pushdown (orc with NULL in an
    IN list or -0.0, parquet with a date in the 1582 calendar gap), the predicate is compared
    without that pushdown and listed in the summary;
  - every file holding a matching row is among the files the rule's file index kept, and Spark's
    numFiles metric counts exactly those files;
  - (exact check) for NOT-free AND/OR trees of comparisons, <=>, IN, BETWEEN, IS [NOT] NULL,
    startswith / LIKE and boolean columns (each column once, literals of the column's type) the
    files read equal the files a min/max skipper must read given the statistics the rule has: the
    sidecar's (exact, from the rows) or parquet footers' as pyarrow reads them (computed in Python);
  - over the whole run the rule skips (nearly) every file the reference proves skippable.
Scenarios: footers only, the sidecar, rows appended by INSERT, a data file deleted or replaced
(by a pyarrow-written file) behind the sidecar's back, a corrupt sidecar, an external table at a
location with unusual characters, a bucketed table, the rule switched off, EXPLAIN, filters Spark
derives from joins, partition pruning before skipping, dynamic partition pruning, and the query
shape `count(*), sum(hash(*)), bit_xor(hash(*))`.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections import Counter, defaultdict
from functools import reduce

import pytest

from harness.plans import SKIPPING_CONF, SKIPPING_SCAN, explain_summary, file_scans, scan_info
from harness.predicates import SEED_ENV, Cmp, Pred, PredicateGenerator, same_type_lit, seed_from_env
from harness.runner import NO_PUSHDOWN, Outcome, TableState, read_state, run_batch, run_predicates
from harness.statistics import FileStats
from harness.storage import database_on
from harness.tables import (BY_KEY, PARTITION_COLUMNS, TableSpec, append_rows, data_files_on_disk, dataframe,
                            generate_rows, table_columns, write_conf, write_parquet_with_pyarrow, write_table)
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import confs
from spark_clustering_dev.sql import sql_str

SCHEMA = "it_test_data_skipping"
SEED = seed_from_env(default=20261122)
# predicates per table and scenario (x 7 tables for the first two scenarios)
N_FOOTERS = int(os.environ.get("SPARK_CLUSTERING_SKIPPING_N", "40"))
N_SIDECAR = N_FOOTERS
N_SMALL = max(10, N_FOOTERS * 2 // 7)

TABLES = [
    TableSpec("pq_sorted", "parquet", "sorted", ts_type="INT96"),
    TableSpec("pq_random", "parquet", "random", ts_type="TIMESTAMP_MICROS", block_size=4096),
    TableSpec("pq_part", "parquet", "sorted", partition="p", ts_type="TIMESTAMP_MILLIS"),
    TableSpec("pq_legacy", "parquet", "sorted", ts_type="TIMESTAMP_MICROS", rebase="LEGACY"),
    TableSpec("orc_sorted", "orc", "sorted"),
    TableSpec("orc_random", "orc", "random"),
    TableSpec("orc_part", "orc", "sorted", partition="ps"),
]

# what the run saw, for the summary and the overall skip assertion
STATS: dict[str, Counter] = defaultdict(Counter)
PREDICATES_RUN = Counter()
SPARK_ERRORS: list[str] = []
STARTED = time.time()


def qualified(name: str) -> str:
    return f"{SCHEMA}.{name}"


def table_seed(name: str) -> int:
    return SEED * 1000 + sum(map(ord, name))


@pytest.fixture(scope="module")
def session(spark):
    print(f"\ntest_data_skipping: seed {SEED} (set {SEED_ENV} to replay or to `random`)")
    spark.sql(f"create database if not exists {SCHEMA}")
    with confs(spark, {"spark.sql.adaptive.enabled": "false", SKIPPING_CONF: "true"}):
        yield spark
    spark.sql(f"drop database if exists {SCHEMA} cascade")


def build(spark, spec: TableSpec, name: str | None = None) -> TableState:
    name = name or spec.name
    rows = generate_rows(spec, table_seed(spec.name))
    write_table(spark, spec, qualified(name), rows)
    state = read_state(spark, spec, qualified(name))
    assert len(state.rows) == spec.rows, f"{name}: wrote {spec.rows} rows, read {len(state.rows)}"
    assert spec.files - 1 <= len(state.files) <= spec.files + 3, f"{name}: {len(state.files)} files"
    return state


@pytest.fixture(scope="module")
def tables(session):
    return {spec.name: build(session, spec) for spec in TABLES}


def write_sidecar(spark, state: TableState, expect_scanned: int | None = None) -> dict:
    row = spark.sql(f"select * from write_file_stats('{state.qualified}', 'false')").collect()[0]
    result = {"files": row[1], "files_scanned": row[2], "sidecar": row[3]}
    assert result["files"] == len(state.files), f"{state.qualified}: write_file_stats {result}, {len(state.files)} files"
    if expect_scanned is not None:
        assert result["files_scanned"] == expect_scanned, f"{state.qualified}: write_file_stats {result}"
    state.source = {f: "sidecar" for f in state.files}
    return result


def with_sidecar(spark, state: TableState) -> TableState:
    """`state`, its sidecar written first unless every file already has its stats there."""
    if not all(state.source.get(f) == "sidecar" for f in state.files):
        write_sidecar(spark, state)
    return state


def usable_filter_sql(state: TableState) -> str:
    return f"select id from {state.qualified} where i > 0"


def check_explain_sources(spark, state: TableState, context: str) -> dict:
    """EXPLAIN names as many files from the sidecar and from footers as the test expects."""
    summary = explain_summary(spark, usable_filter_sql(state))
    assert summary is not None, f"{context}: no 'DataSkipping: kept' in the plan of {usable_filter_sql(state)}"
    want_sidecar = sum(1 for f in state.files if state.source.get(f) == "sidecar")
    got = {k: summary[k] for k in ("total", "sidecar", "footers", "unknown")}
    want = {"total": len(state.files), "sidecar": want_sidecar, "footers": len(state.files) - want_sidecar,
            "unknown": 0}
    assert got == want, f"{context}: {state.qualified} EXPLAIN stats sources {got}, expected {want}\n{summary['text']}"
    return summary


# ----------------------------------------------------------------------------------------------
# checking one scenario's outcomes


def describe_file(state: TableState, f: str, columns: set[str]) -> str:
    ex = state.exact.get(f)
    ref = state.reference_stats().get(f)
    parts = [f"{os.path.relpath(f, state.location)} (source {state.source.get(f, 'footer')})"]
    for c in sorted(columns):
        e = ex.cols[c] if ex else None
        r = ref.cols.get(c) if ref else None
        parts.append(f"    {c}: exact min={e.lo!r:.80} max={e.hi!r:.80} nulls={e.nulls} non-null={e.nonnull}"
                     if e else f"    {c}: no rows")
        if r is not None and ref is not ex:
            parts.append(f"    {c}: reference min={r.lo!r:.80} max={r.hi!r:.80} nulls={r.nulls}")
    return "\n".join(parts)


def exact_b_allowed(state: TableState, pred: Pred) -> bool:
    """(b) needs the rule's statistics to be known here: every file from the sidecar, or parquet
    footers for columns whose footer statistics are what Spark reads."""
    if not pred.simple:
        return False
    cols = pred.columns()
    if cols & set(PARTITION_COLUMNS):
        return False  # Spark prunes partitions or keeps only the data-column part of the filter
    for f in state.files:
        if state.source.get(f) == "sidecar":
            continue
        if state.spec.fmt != "parquet":
            return False
        facts = state.footer_facts[f]
        for c in cols:
            kind = BY_KEY[c].kind
            if kind in ("float", "double"):
                return False  # a footer's float max is kept only from some writers: not modelled here
            if kind in ("date", "ts", "ntz") and facts["legacy_datetime"]:
                return False
            if kind == "ts" and facts["ts_physical"] == "INT96":
                return False  # documented: no statistics used (not even the footer's NULL count)
    return True


def truth_ids(state: TableState, pred: Pred) -> set[int]:
    fn = pred.fn
    return {r["id"] for r in state.rows if fn(r) is True}


def check(state: TableState, outcomes: list[Outcome], scenario: str, exact: bool = True,
          truths: list[set[int]] | None = None) -> list[str]:
    failures = []
    spec = state.spec
    ref_stats = state.reference_stats()
    where = f"[{scenario}] table {spec.describe()}, seed {SEED}"
    for n, o in enumerate(outcomes):
        p = o.pred
        sql = f"select count(*) from {state.qualified} where {p.sql()}"
        STATS[scenario]["predicates"] += 1
        PREDICATES_RUN[scenario] += 1
        if o.note:
            SPARK_ERRORS.append(f"{where}: {sql}\n    {o.note}")
            STATS[scenario]["spark_errors"] += 1
        if o.error_off or o.error_on:
            if o.error_off and o.error_on:
                failures.append(f"SPARK FAILS THE QUERY, rule on and off, even without reader pushdown {where}\n"
                                f"  {sql}\n  {o.error_off}")
            elif o.error_on:
                failures.append(f"FAILS WITH THE RULE ONLY {where}\n  {sql}\n  {o.error_on}")
            else:
                failures.append(f"FAILS WITHOUT THE RULE ONLY {where}\n  {sql}\n  {o.error_off}")
            continue
        truth = truths[n] if truths is not None else truth_ids(state, p)
        on_partitions = bool(p.columns() & set(PARTITION_COLUMNS))  # Spark prunes partitions first
        ids_on = {i for i, _ in o.rows_on}
        ids_off = {i for i, _ in o.rows_off}
        if o.rows_on != o.rows_off:
            lost = sorted(ids_off - ids_on)[:10]
            extra = sorted(ids_on - ids_off)[:10]
            files = sorted({r["_file"] for r in state.rows if r["id"] in set(lost)})
            failures.append(f"WRONG ANSWER {where}\n  {sql}\n  rule on {sum(o.rows_on.values())} rows, rule off "
                            f"{sum(o.rows_off.values())}; rows lost (ids) {lost}, extra {extra}\n  files of lost rows:\n"
                            + "\n".join(describe_file(state, f, p.columns()) for f in files))
            continue
        if ids_off != truth or sum(o.rows_off.values()) != len(truth):
            failures.append(f"REFERENCE DISAGREES (rule off vs Python) {where}\n  {sql}\n  Spark {len(ids_off)} rows, "
                            f"Python {len(truth)}; only Spark {sorted(ids_off - truth)[:10]}, only Python "
                            f"{sorted(truth - ids_off)[:10]}")
            continue
        matching_files = {r["_file"] for r in state.rows if r["id"] in truth}
        scan = o.scan
        read = 0 if scan is None else scan.num_files
        if scan is None:
            if truth:
                failures.append(f"NO SCAN but rows match {where}\n  {sql}")
                continue
        else:
            if scan.kept_files is not None:
                kept = set(scan.kept_files)
                missing = matching_files - kept
                if missing:
                    failures.append(f"MATCHING FILE NOT READ {where}\n  {sql}\n" + "\n".join(
                        describe_file(state, f, p.columns()) for f in sorted(missing)))
                    continue
                if len(scan.kept_files) != scan.num_files:
                    failures.append(f"METRIC MISMATCH {where}\n  {sql}\n  numFiles {scan.num_files}, index kept "
                                    f"{len(scan.kept_files)}")
            if scan.skipping and scan.before is not None and scan.before != len(state.files) and not on_partitions:
                failures.append(f"FILES BEFORE SKIPPING {where}\n  {sql}\n  filesBeforeSkipping {scan.before}, "
                                f"files {len(state.files)}")
            if not scan.skipping and scan.rule_index:
                failures.append(f"RULE SCAN REPLACED BY A PLAIN FileSourceScanExec {where}\n  {sql}\n  the scan lists "
                                f"through DataSkippingFileIndex (read {scan.num_files} of {len(state.files)} files) but "
                                f"is not a {SKIPPING_SCAN}: no EXPLAIN text, no skipping metrics\n  {scan.text}")
            elif not scan.skipping and scan.num_files != len(state.files) and not on_partitions:
                failures.append(f"PLAIN SCAN READ {scan.num_files} of {len(state.files)} files {where}\n  {sql}")
        may = [f for f in state.files if p.may_match(ref_stats[f])]
        ideal = [f for f in state.files if p.may_match(state.exact.get(f, FileStats(0, {})))]
        s = STATS[scenario]
        s["files"] += len(state.files)
        s["read"] += read
        s["reference"] += len(may)
        s["ideal"] += len(ideal)
        s["matching"] += len(matching_files)
        if exact and exact_b_allowed(state, p):
            s["exact_checked"] += 1
            s["exact_files"] += len(state.files)
            s["exact_read"] += read
            s["exact_reference"] += len(may)
            if read != len(may):
                if scan is not None and scan.kept_files is not None:
                    kept = set(scan.kept_files)
                    diff = sorted((kept - set(may)) | (set(may) - kept))
                else:
                    diff = []
                kind = "MISSED SKIP" if read > len(may) else "READ FEWER THAN MIN/MAX ALLOWS"
                failures.append(f"{kind} {where}\n  {sql}\n  read {read} files, reference {len(may)} "
                                f"(of {len(state.files)}); plan: {scan.text if scan else 'no scan'}\n"
                                f"  files that differ:\n" + "\n".join(describe_file(state, f, p.columns())
                                                                       for f in diff[:4]))
    return failures


def assert_no_failures(failures: list[str], scenario: str):
    if failures:
        kinds = Counter(f.split(" [", 1)[0] for f in failures)
        shown = "\n\n".join(failures[:12])
        pytest.fail(f"{scenario}: {len(failures)} failures {dict(kinds)} (seed {SEED}):\n\n{shown}", pytrace=False)


def run_scenario(spark, state: TableState, n: int, scenario: str, rng: random.Random, exact: bool = True,
                 generator: PredicateGenerator | None = None) -> list[str]:
    gen = generator or PredicateGenerator(rng, state.rows, state.exact, columns=table_columns(state.spec))
    preds = gen.predicates(n)
    # orc's reader fails on a pushed-down IN list holding NULL and drops -0.0 against 0.0 bounds
    # (Spark's own pushdown, rule on and off alike): orc scans here run without reader pushdown
    extra = NO_PUSHDOWN if state.spec.fmt == "orc" else {}
    with confs(spark, extra):
        outcomes = run_predicates(spark, state, preds)
    truths = [truth_ids(state, p) for p in preds]
    # a disagreement between Spark (rule off) and Python is re-run without Spark's reader pushdown
    redo = [i for i, o in enumerate(outcomes) if o.rows_off is not None and not o.note and
            truths[i] != {row_id for row_id, _ in o.rows_off}]
    if redo and not extra:
        with confs(spark, NO_PUSHDOWN):
            again = run_predicates(spark, state, [outcomes[i].pred for i in redo])
        for i, o in zip(redo, again):
            o.note = "without reader pushdown (with it, rule on and off alike, Spark disagrees with Python)"
            outcomes[i] = o
    return check(state, outcomes, scenario, exact, truths)


# ----------------------------------------------------------------------------------------------
# scenarios


def test_footers_only(session, tables):
    """No sidecar: statistics from parquet / orc footers."""
    rng = random.Random(SEED + 1)
    failures = []
    for state in tables.values():
        check_explain_sources(session, state, "footers only")
        failures += run_scenario(session, state, N_FOOTERS, "footers", rng)
    assert_no_failures(failures, "footers only")


def test_sidecar(session, tables):
    """After write_file_stats: exact statistics from the rows for every file."""
    rng = random.Random(SEED + 2)
    failures = []
    for state in tables.values():
        write_sidecar(session, state, expect_scanned=len(state.files))
        check_explain_sources(session, state, "sidecar")
        failures += run_scenario(session, state, N_SIDECAR, "sidecar", rng)
    assert_no_failures(failures, "sidecar")


FRESH = [
    TableSpec("m_pq", "parquet", "sorted", ts_type="TIMESTAMP_MICROS"),
    TableSpec("m_orc", "orc", "sorted"),
    TableSpec("m_pq_part", "parquet", "sorted", partition="p", ts_type="TIMESTAMP_MICROS"),
]


def fresh(spark, spec: TableSpec, scenario: str) -> TableState:
    state = build(spark, spec, f"{spec.name}_{scenario}")
    write_sidecar(spark, state, expect_scanned=len(state.files))
    return state


def test_appended_rows(session):
    """INSERT INTO adds files the sidecar does not know: those come from footers, the others stay
    on the sidecar; write_file_stats then scans only the new files."""
    rng = random.Random(SEED + 3)
    failures = []
    for spec in FRESH:
        state = fresh(session, spec, "append")
        old = set(state.files)
        extra = generate_rows(TableSpec(spec.name, spec.fmt, "random", spec.partition, spec.ts_type, rows=600,
                                              files=3), table_seed(spec.name) + 7, first_id=100_000)
        append_rows(session, spec, state.qualified, extra, files=3)
        state = read_state(session, spec, state.qualified,
                              source={f: ("sidecar" if f in old else "footer") for f in data_files_on_disk(state.location)})
        new = set(state.files) - old
        assert new and old <= set(state.files), f"{state.qualified}: append made no new file"
        check_explain_sources(session, state, "appended")
        failures += run_scenario(session, state, N_SMALL, "appended", rng)
        write_sidecar(session, state, expect_scanned=len(new))
        check_explain_sources(session, state, "appended, sidecar rewritten")
        failures += run_scenario(session, state, N_SMALL // 2, "appended+sidecar", rng)
    assert_no_failures(failures, "appended rows")


def remove_with_checksum(path: str):
    os.remove(path)
    crc = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")
    if os.path.exists(crc):
        os.remove(crc)


def test_deleted_file(session):
    """A data file deleted behind the sidecar's back (then REFRESH TABLE)."""
    rng = random.Random(SEED + 4)
    failures = []
    for spec in FRESH[:2]:
        state = fresh(session, spec, "deleted")
        victim = state.files[len(state.files) // 2]
        remove_with_checksum(victim)
        session.sql(f"refresh table {state.qualified}")
        state = read_state(session, spec, state.qualified, source={f: "sidecar" for f in state.files if f != victim})
        assert victim not in state.files
        check_explain_sources(session, state, "deleted file")
        failures += run_scenario(session, state, N_SMALL, "deleted file", rng)
        # the next write_file_stats drops the entry and scans nothing
        write_sidecar(session, state, expect_scanned=0)
        check_explain_sources(session, state, "deleted file, sidecar rewritten")
    assert_no_failures(failures, "deleted file")


def test_replaced_file(session, tmp_path):
    """A data file overwritten in place (same name) by a file of the same schema holding other
    values; the sidecar still has the old file's statistics under that name."""
    rng = random.Random(SEED + 5)
    failures = []
    for spec in FRESH[:2]:
        state = fresh(session, spec, "replaced")
        victim = state.files[len(state.files) // 2]
        old_ids = {r["id"] for r in state.rows if r["_file"] == victim}
        # values of another region of the table (the first file's), new ids
        donor = generate_rows(spec, table_seed(spec.name) + 11, first_id=200_000)[: spec.rows // spec.files]
        out = tmp_path / f"replacement_{spec.name}"
        if spec.fmt == "parquet":
            # another writer: pyarrow (no Spark metadata in the footer, several row groups)
            out.mkdir()
            write_parquet_with_pyarrow(donor, str(out / "replacement.parquet"), row_group_size=64)
        else:
            with confs(session, write_conf(spec)):
                dataframe(session, spec, donor, 1).write.format(spec.fmt).save(str(out))
        written = data_files_on_disk(str(out))
        assert len(written) == 1, written
        before = os.stat(victim)
        remove_with_checksum(victim)
        shutil.copyfile(written[0], victim)
        crc = os.path.join(os.path.dirname(written[0]), f".{os.path.basename(written[0])}.crc")
        if os.path.exists(crc):
            shutil.copyfile(crc, os.path.join(os.path.dirname(victim), f".{os.path.basename(victim)}.crc"))
        after = os.stat(victim)
        session.sql(f"refresh table {state.qualified}")
        state = read_state(session, spec, state.qualified, source={f: "sidecar" for f in state.files if f != victim})
        assert not old_ids & {r["id"] for r in state.rows}, "the replaced file's old rows are still read"
        assert {r["id"] for r in state.rows if r["_file"] == victim} == {r["id"] for r in donor}
        check_explain_sources(session, state, f"replaced file (size {before.st_size} -> {after.st_size})")
        # half the literals from the replacement's values, which the stale statistics would exclude
        donor_rows = [r for r in state.rows if r["_file"] == victim]
        gen = PredicateGenerator(rng, donor_rows, {victim: state.exact[victim]})
        failures += run_scenario(session, state, N_SMALL, "replaced file", rng, generator=gen)
        failures += run_scenario(session, state, N_SMALL // 2, "replaced file", rng)
        # the next write_file_stats scans the replaced file only
        write_sidecar(session, state, expect_scanned=1)
        check_explain_sources(session, state, "replaced file, sidecar rewritten")
        failures += run_scenario(session, state, N_SMALL // 2, "replaced+sidecar", rng, generator=gen)
    assert_no_failures(failures, "replaced file")


def sidecar_files(state: TableState) -> list[str]:
    d = os.path.join(state.location, "_sc_file_stats")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("stats-") and f.endswith(".json"))


def test_corrupt_sidecar(session):
    """Garbage in the sidecar: parquet's truncated in the middle of a line (complete lines still
    count, the torn one does not), orc's overwritten with bytes that are not JSON (its checksum file
    left stale)."""
    rng = random.Random(SEED + 6)
    failures = []
    for spec in FRESH[:2]:
        state = fresh(session, spec, "corrupt")
        files = sidecar_files(state)
        assert len(files) == 1, files
        if spec.fmt == "parquet":
            with open(files[0], "rb") as fh:
                content = fh.read()
            cut = content[: len(content) // 2 + 17]
            with open(files[0], "wb") as fh:
                fh.write(cut)
            # as on a file system without Hadoop's .crc files (HDFS, object stores): with the local
            # file system's stale checksum the whole file would be unreadable (the orc case below)
            crc = os.path.join(os.path.dirname(files[0]), f".{os.path.basename(files[0])}.crc")
            if os.path.exists(crc):
                os.remove(crc)
            complete = [json.loads(line) for line in cut.split(b"\n")[:-1] if line.strip()]
            covered = {os.path.join(state.location, e["path"]) for e in complete}
            assert 0 < len(covered) < len(state.files), f"the cut kept {len(covered)} of {len(state.files)} entries"
        else:
            with open(files[0], "wb") as fh:
                fh.write(b"\x00\xff{not json\n" + os.urandom(300) + b"\n{\"v\": 1, \"path\": 5}\n")
            covered = set()
        state.source = {f: ("sidecar" if f in covered else "footer") for f in state.files}
        check_explain_sources(session, state, "corrupt sidecar")
        failures += run_scenario(session, state, N_SMALL, "corrupt sidecar", rng)
    assert_no_failures(failures, "corrupt sidecar")


def test_a_table_in_a_bucket(session, s3):
    """A sample of the differential check on S3 (S3A against the test process's S3 server): a
    parquet table and a partitioned orc table in a bucket, their sidecars written there; rule on =
    rule off = Python, every matching file kept, and files skipped."""
    rng = random.Random(SEED + 13)
    schema = database_on(session, s3, SCHEMA, "s3a")
    failures = []
    for spec in (TABLES[1], TABLES[6]):
        name = f"{schema}.{spec.name}"
        write_table(session, spec, name, generate_rows(spec, table_seed(spec.name)))
        state = read_state(session, spec, name)
        assert state.location.startswith("s3a://") and len(state.rows) == spec.rows, (state.location, len(state.rows))
        write_sidecar(session, state, expect_scanned=len(state.files))
        check_explain_sources(session, state, "in a bucket")
        before = STATS["in a bucket"]["read"]
        failures += run_scenario(session, state, N_SMALL, "in a bucket", rng)
        assert STATS["in a bucket"]["read"] - before < N_SMALL * len(state.files), "no file was skipped"
    assert_no_failures(failures, "in a bucket")


def test_unusual_paths(session, tmp_path):
    """An external table whose location holds a space, '%' and non-ASCII letters, partitioned by
    strings Spark escapes in directory names: the sidecar still covers every file."""
    rng = random.Random(SEED + 11)
    spec = TableSpec("odd_paths", "parquet", "sorted", partition="ps", ts_type="TIMESTAMP_MICROS", rows=1200,
                        files=6)
    location = tmp_path / "dir with space %41 \u00fc" / "t"
    rows = generate_rows(spec, table_seed(spec.name))
    with confs(session, write_conf(spec)):
        dataframe(session, spec, rows, spec.files).write.format("parquet").partitionBy("ps") \
            .option("path", str(location)).saveAsTable(qualified(spec.name))
    state = read_state(session, spec, qualified(spec.name))
    assert len(state.rows) == spec.rows and state.location == str(location), (state.location, len(state.rows))
    write_sidecar(session, state, expect_scanned=len(state.files))
    check_explain_sources(session, state, "unusual paths")
    failures = run_scenario(session, state, N_SMALL, "unusual paths", rng)
    assert_no_failures(failures, "unusual paths")


def test_disabled(session, tables):
    """spark.sparkclustering.skipping.enabled=false: Spark's own scan, every file read."""
    rng = random.Random(SEED + 7)
    for state in tables.values():
        gen = PredicateGenerator(rng, state.rows, state.exact)
        preds = [gen.simple() for _ in range(8)]
        with confs(session, reader_conf(state)):
            results = run_batch(session, state, preds, skipping=False, list_files=False)
        for i, p in enumerate(preds):
            rows, scan = results[i]
            if scan is None:
                continue
            assert not scan.skipping, f"rule off but the scan is {SKIPPING_SCAN}: {p.sql()}"
            assert scan.num_files == len(state.files), (
                f"rule off read {scan.num_files} of {len(state.files)} files: {state.qualified} where {p.sql()}")
        with confs(session, {SKIPPING_CONF: "false"}):
            text = session.sql(usable_filter_sql(state))._jdf.queryExecution().executedPlan().toString()
        assert "DataSkipping" not in text, text


def test_explain(session, tables):
    """EXPLAIN (the plan's text and EXPLAIN FORMATTED) says what the scan kept; it equals numFiles."""
    state = tables["pq_sorted"]
    lo = sorted(state.exact.values(), key=lambda s: s.cols["i"].lo if s.cols["i"].lo is not None else 0)
    bound = [s.cols["i"].hi for s in lo if s.cols["i"].hi is not None][2]
    sql = f"select count(*) from {state.qualified} where i <= {bound}"
    df = session.sql(sql)
    df.collect()
    text = df._jdf.queryExecution().executedPlan().toString()
    assert "DataSkipping: kept" in text, text
    formatted = session.sql("explain formatted " + sql).collect()[0][0]
    assert "DataSkipping: kept" in formatted, formatted
    summary = explain_summary(session, sql)
    scans = file_scans(df._jdf.queryExecution().executedPlan())
    assert len(scans) == 1
    info = scan_info(scans[0], list_files=True)
    assert info.skipping and summary["kept"] == info.num_files == len(info.kept_files), (summary, info)
    assert info.skipped == summary["total"] - summary["kept"] and info.before == summary["total"], (summary, info)
    assert info.num_files < len(state.files), f"nothing skipped for {sql}: {text}"


def test_path_based_read(session, tables):
    """A path read (`parquet.`<dir>``, `orc.`<dir>``: Spark's in-memory file index, no catalog
    table) is skipped with the sidecar at that directory; same answer as without the rule."""
    rng = random.Random(SEED + 13)
    failures = []
    for name in ("pq_sorted", "orc_random"):
        state = with_sidecar(session, tables[name])
        gen = PredicateGenerator(rng, state.rows, state.exact)
        for _ in range(4):
            pred = gen.simple()
            sql = f"select id, hash(*) from {state.spec.fmt}.`{state.location}` where {pred.sql()}"
            res = run_query_both(session, sql, reader_conf(state))
            (rows_on, scans_on), (rows_off, _) = res[True], res[False]
            truth = sorted(r["id"] for r in state.rows if pred.truth(r) is True)
            if sorted(map(tuple, rows_on)) != sorted(map(tuple, rows_off)) or sorted(r[0] for r in rows_on) != truth:
                failures.append(f"WRONG ANSWER [path read] seed {SEED}\n  {sql}\n  on {len(rows_on)}, off "
                                f"{len(rows_off)}, Python {len(truth)} rows")
                continue
            may = [f for f in state.files if pred.may_match(state.reference_stats()[f])]
            summary = explain_summary(session, sql)
            if not scans_on or not scans_on[0].skipping or summary is None:
                if truth:
                    failures.append(f"NO RULE SCAN [path read]\n  {sql}\n  {[s.text for s in scans_on]}")
                continue
            if summary["sidecar"] != summary["total"]:
                failures.append(f"SIDECAR NOT USED [path read] seed {SEED}\n  {sql}\n  EXPLAIN {summary}")
            if pred.simple and scans_on[0].num_files != len(may):
                failures.append(f"MISSED SKIP [path read] seed {SEED}\n  {sql}\n  read {scans_on[0].num_files}, "
                                f"reference {len(may)}")
            PREDICATES_RUN["path read"] += 1
    assert_no_failures(failures, "path-based read")


def reader_conf(state: TableState) -> dict[str, str]:
    """orc scans run without Spark's reader pushdown (it fails on IN lists holding NULL)."""
    return NO_PUSHDOWN if state.spec.fmt == "orc" else {}


def run_query_both(spark, sql: str, extra: dict[str, str] | None = None):
    out = {}
    for on in (True, False):
        with confs(spark, {SKIPPING_CONF: str(on).lower(), **(extra or {})}):
            df = spark.sql(sql)
            rows = df.collect()
            scans = [scan_info(s, list_files=on) for s in file_scans(df._jdf.queryExecution().executedPlan())]
        out[on] = (rows, scans)
    return out


def test_join_derived_filters(session, tables):
    """Filters Spark derives at planning from joins reach the rule: a constant propagated from a
    one-row side, and `t.c = u.c AND u.c < x` inferring `t.c < x`."""
    rng = random.Random(SEED + 8)
    t, u = tables["pq_sorted"], tables["orc_sorted"]
    for state in (t, u):
        with_sidecar(session, state)
    failures = []
    checked = 0
    for _ in range(6):
        col = BY_KEY[rng.choice(["i", "bi", "dt", "dsm", "s"])]
        gen = PredicateGenerator(rng, t.rows, t.exact, columns=[col])
        lit = same_type_lit(col.kind, gen.value(col), rng)
        # a constant from a one-row side of a join
        sql = (f"select count(*), sum(cast(hash(t.*) as bigint)) from {t.qualified} t "
               f"join (select {lit.sql} as k) j on t.{col.key} = j.k")
        res = run_query_both(session, sql)
        pred = Cmp(col, "=", lit)
        failures += join_check(t, sql, res, {t.spec.name: pred})
        # an inferred filter: t.c = u.c and u.c < x
        op = rng.choice(["<", "<=", ">", ">="])
        sql = (f"select count(*), sum(cast(hash(t.*, u.*) as bigint)) from {t.qualified} t join {u.qualified} u "
               f"on t.{col.key} = u.{col.key} where u.{col.key} {op} {lit.sql}")
        res = run_query_both(session, sql)
        failures += join_check(t, sql, res, {t.spec.name: Cmp(col, op, lit), u.spec.name: Cmp(col, op, lit)},
                               states={t.spec.name: t, u.spec.name: u})
        checked += 2
    PREDICATES_RUN["join-derived"] += checked
    assert_no_failures(failures, "join-derived filters")


def join_check(t: TableState, sql: str, res: dict, preds: dict, states: dict | None = None) -> list[str]:
    states = states or {t.spec.name: t}
    rows_on, scans_on = res[True]
    rows_off, _ = res[False]
    out = []
    if rows_on != rows_off:
        return [f"WRONG ANSWER [join] seed {SEED}\n  {sql}\n  rule on {rows_on}, rule off {rows_off}"]
    for name, state in states.items():
        pred = preds[name]
        may = [f for f in state.files if pred.may_match(state.reference_stats()[f])]
        matching = {r["_file"] for r in state.rows if pred.truth(r) is True}
        scans = [s for s in scans_on if s.table == name]
        if not scans:
            if matching:
                out.append(f"NO SCAN of {name} [join] seed {SEED}\n  {sql}")
            continue
        scan = scans[0]
        if not scan.skipping:
            out.append(f"MISSED SKIP [join] {name} is not scanned by the rule\n  {sql}\n  {scan.text}")
            continue
        if not matching <= set(scan.kept_files):
            out.append(f"MATCHING FILE NOT READ [join] {name} seed {SEED}\n  {sql}")
        if scan.num_files != len(may):
            out.append(f"MISSED SKIP [join] {name}: read {scan.num_files}, reference for `{pred.sql()}` "
                       f"{len(may)} seed {SEED}\n  {sql}\n  {scan.text}")
    return out


def test_dynamic_partition_pruning(session, tables):
    """Dynamic partition pruning (a runtime partition filter from a broadcast join) on top of the
    rule: same answer as without the rule, the rule's scan keeps Spark's dynamic filter."""
    t, u = tables["pq_part"], tables["orc_sorted"]
    failures = []
    for lo, hi, bound in [(0, 1, 0), (2, 2, 5000), (-5, 0, -9000)]:
        sql = (f"select count(*), sum(cast(hash(t.*) as bigint)) from {t.qualified} t join {u.qualified} u "
               f"on t.p = u.ti where u.ti between {lo} and {hi} and t.dsm > {bound}")
        res = run_query_both(session, sql)
        (rows_on, scans_on), (rows_off, _) = res[True], res[False]
        scans = [s for s in scans_on if s.table == t.spec.name]
        if rows_on != rows_off:
            failures.append(f"WRONG ANSWER [dpp] seed {SEED}\n  {sql}\n  on {rows_on} off {rows_off}")
        elif not scans or not scans[0].skipping or "dynamicpruning" not in scans[0].text.lower():
            failures.append(f"NO RULE SCAN WITH DYNAMIC PRUNING [dpp]\n  {sql}\n  {[s.text for s in scans_on]}")
        u_per_ti = Counter(x["ti"] for x in u.rows if x["ti"] is not None and lo <= x["ti"] <= hi)
        expected = sum(u_per_ti[r["p"]] for r in t.rows if r["dsm"] is not None and r["dsm"] > bound)
        if rows_on and rows_on[0][0] != expected:
            failures.append(f"REFERENCE DISAGREES [dpp]\n  {sql}\n  Spark {rows_on[0][0]} rows, Python {expected}")
        PREDICATES_RUN["dynamic pruning"] += 1
    assert_no_failures(failures, "dynamic partition pruning")


def test_aggregate_query_form(session, tables):
    """`select count(*), sum(hash(*)), bit_xor(hash(*)) from t where p`: rule on = rule off = the
    union runs' rows."""
    rng = random.Random(SEED + 10)
    failures = []
    for state in tables.values():
        gen = PredicateGenerator(rng, state.rows, state.exact, columns=table_columns(state.spec))
        preds = gen.predicates(3)
        with confs(session, reader_conf(state)):
            union = run_batch(session, state, preds, skipping=False, list_files=False)
        for i, p in enumerate(preds):
            sql = (f"select count(*), sum(cast(hash(*) as bigint)), bit_xor(hash(*)) from {state.qualified} "
                   f"where {p.sql()}")
            res = run_query_both(session, sql, reader_conf(state))
            on, off = tuple(res[True][0][0]), tuple(res[False][0][0])
            rows = union[i][0]
            expected = (sum(rows.values()), sum(h * n for (_, h), n in rows.items()) if rows else None,
                        reduce(lambda a, b: a ^ b, [h for (_, h), n in rows.items() for _ in range(n)]) if rows else None)
            if on != off or on != expected:
                failures.append(f"WRONG ANSWER [aggregate] {state.spec.describe()} seed {SEED}\n  {sql}\n  on {on}, "
                                f"off {off}, from the rows {expected}")
            PREDICATES_RUN["aggregate form"] += 1
    assert_no_failures(failures, "aggregate query form")


def test_summary_skipping_works():
    """Over the run: the rule skipped files, close to what the min/max reference proves skippable
    (so the test fails if skipping silently stops working)."""
    total = sum(PREDICATES_RUN.values())
    lines = [f"seed {SEED}; predicates run: {total} {dict(PREDICATES_RUN)}; {time.time() - STARTED:.0f} s"]
    for scenario, s in STATS.items():
        if not s["files"]:
            continue
        lines.append(f"  {scenario:18s} predicates {s['predicates']:5d}  files listed {s['files']:6d}  read "
                     f"{s['read']:6d} ({1 - s['read'] / s['files']:.0%} skipped)  reference {s['reference']:6d}  "
                     f"ideal (exact min/max) {s['ideal']:6d}  holding matches {s['matching']:6d}  exact-checked "
                     f"{s['exact_checked']}")
    if SPARK_ERRORS:
        lines.append(f"  queries Spark fails with its reader pushdown, rule on and off ({len(SPARK_ERRORS)}; compared "
                     f"without that pushdown):")
        lines += [f"    {e}" for e in SPARK_ERRORS[:20]]
    report = "\n".join(lines)
    print("\n" + report)
    out = WORK / "pytest" / "data_skipping_summary.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report + "\n")
    side = STATS.get("sidecar")
    if side is None or not side["files"]:
        pytest.skip("the sidecar scenario did not run in this session")
    ref_skippable = side["files"] - side["reference"]
    assert ref_skippable >= 0.25 * side["files"], f"the workload is not selective enough to test skipping:\n{report}"
    skipped = side["files"] - side["read"]
    assert skipped >= 0.9 * ref_skippable, (
        f"with the sidecar the rule skipped {skipped} file reads, the min/max reference {ref_skippable}:\n{report}")


def test_partition_pruning_first(session, tables):
    """A filter on the partition column and a data column: the rule sees only the selected
    partition's files (EXPLAIN's total), and reads no more than the min/max reference over them."""
    rng = random.Random(SEED + 9)
    failures = []
    for name in ("pq_part", "orc_part"):
        state = with_sidecar(session, tables[name])
        part_col = state.spec.partition
        values = sorted({r[0] for r in session.sql(f"select distinct {part_col} from {state.qualified}")
                        .collect()})
        for _ in range(6):
            value = rng.choice(values)
            part_sql = f"{part_col} = {value}" if part_col == "p" else f"{part_col} = {sql_str(value)}"
            in_part = [f for f in state.files if f"/{part_col}=" in f and
                       _partition_value(f, part_col) == str(value)]
            gen = PredicateGenerator(rng, state.rows, state.exact)
            pred = gen.simple()
            sql = f"select id, hash(*) from {state.qualified} where {part_sql} and ({pred.sql()})"
            res = run_query_both(session, sql, reader_conf(state))
            rows_on, scans_on = res[True]
            rows_off, scans_off = res[False]
            if sorted(map(tuple, rows_on)) != sorted(map(tuple, rows_off)):
                failures.append(f"WRONG ANSWER [partition] seed {SEED}\n  {sql}")
                continue
            if not scans_on:
                continue
            scan = scans_on[0]
            may = [f for f in in_part if pred.may_match(state.reference_stats()[f])]
            summary = explain_summary(session, sql)
            if scan.num_files > len(in_part) or scans_off[0].num_files != len(in_part):
                failures.append(f"PARTITIONS NOT PRUNED [partition] seed {SEED}\n  {sql}\n  read {scan.num_files}, "
                                f"partition holds {len(in_part)}")
            if summary is not None and summary["total"] != len(in_part):
                failures.append(f"SKIPPING BEFORE PRUNING [partition] seed {SEED}\n  {sql}\n  EXPLAIN total "
                                f"{summary['total']}, partition files {len(in_part)}")
            if summary is not None and summary["sidecar"] != summary["total"]:
                failures.append(f"SIDECAR NOT USED AFTER PARTITION PRUNING [partition] {state.spec.describe()} seed "
                                f"{SEED}\n  {sql}\n  EXPLAIN: stats from sidecar {summary['sidecar']}, footers "
                                f"{summary['footers']} of {summary['total']} files (every file is in the sidecar)")
            if scan.skipping and scan.num_files != len(may):
                failures.append(f"MISSED SKIP [partition] seed {SEED}\n  {sql}\n  read {scan.num_files}, reference "
                                f"{len(may)} of {len(in_part)}\n  {scan.text}")
            PREDICATES_RUN["partition"] += 1
    assert_no_failures(failures, "partition pruning")


def _partition_value(path: str, col: str) -> str:
    from urllib.parse import unquote as u

    part = [seg for seg in path.split("/") if seg.startswith(col + "=")][0]
    return u(part.split("=", 1)[1])


def test_bucketed_table(session):
    """A bucketed table: bucket pruning, then skipping; a bucketed join keeps its plan (no new
    shuffle) and its answer."""
    rng = random.Random(SEED + 12)
    spec = TableSpec("bucketed", "parquet", "sorted", ts_type="TIMESTAMP_MICROS", rows=1200, files=6)
    rows = generate_rows(spec, table_seed(spec.name))
    with confs(session, write_conf(spec)):
        dataframe(session, spec, rows, spec.files).write.format("parquet").bucketBy(4, "i").sortBy("i") \
            .saveAsTable(qualified(spec.name))
    state = read_state(session, spec, qualified(spec.name))
    assert len(state.rows) == spec.rows and len(state.files) > spec.files, len(state.files)
    write_sidecar(session, state, expect_scanned=len(state.files))
    failures = []
    try:
        check_explain_sources(session, state, "bucketed")
    except AssertionError as e:
        failures.append(f"EXPLAIN [bucketed] {e}")
    failures += run_scenario(session, state, N_SMALL, "bucketed", rng)
    bound = sorted(r["i"] for r in state.rows if r["i"] is not None)[len(state.rows) // 3]
    sql = (f"select count(*), sum(cast(hash(a.*, b.*) as bigint)) from {state.qualified} a join {state.qualified} b "
           f"on a.i = b.i where a.i < {bound}")
    shuffles = {}
    for on in (True, False):
        with confs(session, {SKIPPING_CONF: str(on).lower(), "spark.sql.autoBroadcastJoinThreshold": "-1"}):
            df = session.sql(sql)
            shuffles[on] = (df.collect(), df._jdf.queryExecution().executedPlan().toString().count("Exchange hashpartitioning"))
    if shuffles[True] != shuffles[False]:
        failures.append(f"BUCKETED JOIN DIFFERS [bucketed]\n  {sql}\n  rule on (rows, shuffles) {shuffles[True]}, "
                        f"off {shuffles[False]}")
    assert_no_failures(failures, "bucketed table")
