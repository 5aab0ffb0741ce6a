"""Running generated predicates against a data-skipping test table: the table read back (its rows,
files and statistics), then each predicate as its own scan of one UNION ALL query, rule off and on,
with the rows and the scan's account of each."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from harness.plans import SKIPPING_CONF, ScanInfo, scan_info, union_branches
from harness.predicates import Pred
from harness.statistics import FileStats, exact_stats, parquet_footer_stats, sidecar_view
from harness.tables import TableSpec, data_files_in_store, data_files_on_disk, table_columns, table_location
from spark_clustering_dev.paths import local
from spark_clustering_dev.spark import confs

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


def error_text(e: Exception) -> str:
    text = str(e)
    for line in text.splitlines():
        if "Exception" in line or "Error" in line or "SQLSTATE" in line:
            return line.strip()[:400]
    return text.strip().splitlines()[0][:400] if text.strip() else type(e).__name__


def reference_rows(spark, state: TableState, preds: list[Pred]) -> dict[int, Counter]:
    """Spark's answers without the rule from one scan of the table: each predicate a column of the
    projection (a row answers it where it evaluates to TRUE, as WHERE keeps it). One scan where a
    branch per predicate reads the table once each (in test_data_skipping ~45 % of a batch's time).
    No reader pushdown: where the rule's answer differs, _run_pair asks Spark's own WHERE again."""
    checks = ", ".join(f"coalesce({p.sql()}, false) as c{i}" for i, p in enumerate(preds))
    with confs(spark, {SKIPPING_CONF: "false", **FAST}):
        collected = spark.sql(f"select id, hash(*) as h, {checks} from {state.qualified}").toArrow()
    ids, hashes = (collected.column(c).to_pylist() for c in ("id", "h"))
    rows = {}
    for i in range(len(preds)):
        answers = rows[i] = Counter()
        for row_id, h, hit in zip(ids, hashes, collected.column(f"c{i}").to_pylist()):
            if hit:
                answers[(row_id, h)] += 1
    return rows


def _run_pair(spark, state, preds, list_files) -> list[Outcome]:
    try:
        on = run_batch(spark, state, preds, skipping=True, list_files=list_files)
        try:
            reference = reference_rows(spark, state, preds)
        except Exception as e:  # noqa: BLE001 - a predicate that fails evaluated on every row: WHERE decides
            if "AssertionError" in type(e).__name__:
                raise
            reference = {}
        # rule off, each predicate its own WHERE (Spark's reader pushdown included), only where the
        # one-scan reference differs from the rule's answer: then the two are compared as before
        differ = [i for i in range(len(preds)) if reference.get(i) != on[i][0]]
        off = {i: (reference[i], None) for i in range(len(preds)) if i not in differ}
        if differ:
            again = run_batch(spark, state, [preds[i] for i in differ], skipping=False, list_files=False)
            off.update({i: again[n] for n, i in enumerate(differ)})
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
                        results[skipping] = ((None, None), error_text(e2))
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
