"""Box workloads over a table's clustering columns and the files a layout must read for them, from
per-file min/max boxes: the report's numeric boxes (make_workloads, pruning_scores), and the seeded
SQL box and point queries of bench_data_skipping and the format benchmarks (make_workload,
intersecting: the files a perfect min/max skipper reads)."""
from __future__ import annotations

import datetime
import math
import random
from dataclasses import dataclass

from common.datasets import LINEITEM_COLUMNS
from common.scans import set_skipping
from spark_clustering_dev.paths import local

KINDS = ["1 column", "2 columns", "3 columns", "point"]  # of make_workload's queries, a quarter each

Box = dict[str, tuple[float, float]]  # column -> [lo, hi], closed, in the column's numeric form
FileBox = dict  # {"n": rows, "<col>_lo": float | None, "<col>_hi": float | None, ...}


@dataclass
class Workload:
    name: str
    description: str
    boxes: list[Box]


def column_bounds(spark, table: str, numeric: dict[str, str]) -> dict[str, tuple[float, float]]:
    row = spark.sql("select " + ", ".join(f"min({e}), max({e})" for e in numeric.values()) + f" from {table}").first()
    return {c: (float(row[2 * i]), float(row[2 * i + 1])) for i, c in enumerate(numeric)}


def random_box(rng: random.Random, bounds: dict[str, tuple[float, float]], columns: list[str], fraction: float) -> Box:
    box = {}
    for c in columns:
        lo, hi = bounds[c]
        width = fraction * (hi - lo)
        start = rng.uniform(lo, hi - width)
        box[c] = (start, start + width)
    return box


def make_workloads(bounds: dict[str, tuple[float, float]], count: int, fraction: float, seed: int) -> list[Workload]:
    """Two seeded workloads over the clustering columns: every box on all columns, and boxes on a
    random non-empty subset of them (a layout that favours one column shows up in the second)."""
    columns = list(bounds)
    rng = random.Random(seed)
    all_columns = [random_box(rng, bounds, columns, fraction) for _ in range(count)]
    subsets = []
    for _ in range(count):
        picked = rng.sample(columns, rng.randint(1, len(columns)))
        subsets.append(random_box(rng, bounds, [c for c in columns if c in picked], fraction))
    pct = f"{fraction:.0%}"
    return [
        Workload("all columns", f"{count} boxes, each {pct} of every clustering column's range", all_columns),
        Workload("1-3 columns", f"{count} boxes, each {pct} of the range of a random non-empty subset of "
                                "the clustering columns", subsets),
    ]


def box_predicate(box: Box, numeric: dict[str, str]) -> str:
    return " and ".join(f"{numeric[c]} between {lo!r} and {hi!r}" for c, (lo, hi) in box.items())


def matching_rows(spark, table: str, numeric: dict[str, str], boxes: list[Box]) -> list[int]:
    """Rows inside each box, all boxes counted in one scan."""
    counts = ", ".join(f"count_if({box_predicate(b, numeric)})" for b in boxes)
    return [int(v) for v in spark.sql(f"select {counts} from {table}").first()]


def spark_file_boxes(spark, table: str, numeric: dict[str, str], file_column: str = "_metadata.file_path") -> list[FileBox]:
    """Exact per-file rows and min/max, computed by Spark from the rows of each file."""
    aggs = ", ".join(f"min({e}) as {c}_lo, max({e}) as {c}_hi" for c, e in numeric.items())
    return [r.asDict() for r in spark.sql(f"select count(*) as n, {aggs} from {table} group by {file_column}").collect()]


def files_hit(files: list[FileBox], box: Box) -> int:
    """Files whose [lo, hi] meets the box on every column of it (all-NULL columns never match)."""
    return len(intersecting(files, box))


def pruning_scores(files: list[FileBox], boxes: list[Box], matching: list[int]) -> dict[str, float]:
    """Mean files-scanned ratio and mean scanned / ideal, ideal = ceil(matching rows / rows per file)."""
    rows_per_file = sum(f["n"] for f in files) / len(files)
    ratios, over_ideal = [], []
    for box, rows in zip(boxes, matching):
        hit = files_hit(files, box)
        ratios.append(hit / len(files))
        over_ideal.append(hit / max(1, math.ceil(rows / rows_per_file)))
    return {"files_scanned_ratio": sum(ratios) / len(ratios), "scanned_over_ideal": sum(over_ideal) / len(over_ideal)}


def mean_file_span(files: list[FileBox], bounds: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Per column: mean over files of (file max - file min) / (column max - column min); 1 = every
    file spans the whole column, so no predicate on that column alone skips anything."""
    spans = {}
    for c, (lo, hi) in bounds.items():
        widths = [(f[f"{c}_hi"] - f[f"{c}_lo"]) / (hi - lo) for f in files if f[f"{c}_lo"] is not None and hi > lo]
        spans[c] = sum(widths) / len(widths) if widths else 0.0
    return spans


# ----------------------------------------------------------------------------------------------
# SQL box queries

def literal(value) -> str:
    if isinstance(value, datetime.date):
        return f"date'{value.isoformat()}'"
    return str(int(value))


def box_where(box: dict) -> str:
    parts = []
    for c, (lo, hi) in box.items():
        parts.append(f"{c} = {literal(lo)}" if lo == hi else f"{c} between {literal(lo)} and {literal(hi)}")
    return " and ".join(parts)


def make_workload(spark, table: str, boxes: list[dict], n: int, seed: int, rows: int,
                  columns: list[str] = LINEITEM_COLUMNS, order_column: str = "l_insert_order",
                  measure: str = "l_extendedprice", find_rows=None) -> list[dict]:
    """`n` box queries over `columns` (lineitem's by default) within the bounds of `boxes`, a quarter
    of each kind: one-, two- and three-column ranges of log-uniform widths (0.5 % to 20 % of the
    column's span) and points (a row's values, the row picked by its `order_column` id 1..rows;
    a null value leaves its column out of the point's box). Each query counts and sums `measure`.
    `find_rows(ids)`, when given, returns those rows (mappings by column name) instead of a query
    of `table` through `spark`."""
    rng = random.Random(seed)
    # a file whose column is all null has no bound on it
    lo = {c: min(f[f"{c}_lo"] for f in boxes if f[f"{c}_lo"] is not None) for c in columns}
    hi = {c: max(f[f"{c}_hi"] for f in boxes if f[f"{c}_hi"] is not None) for c in columns}
    kinds = [KINDS[i % len(KINDS)] for i in range(n)]
    point_ids = sorted(rng.randint(1, rows) for _ in range(kinds.count("point")))
    points = []
    if point_ids:
        found = find_rows(point_ids) if find_rows else spark.sql(
            f"select {order_column}, {', '.join(columns)} from {table} "
            f"where {order_column} in ({', '.join(map(str, point_ids))})").collect()
        by_id = {r[order_column]: r for r in found}
        points = [by_id[i] for i in point_ids]
        rng.shuffle(points)
    queries = []
    for kind in kinds:
        if kind == "point":
            r = points.pop()
            box = {c: (r[c], r[c]) for c in columns if r[c] is not None}
        else:
            box = {}
            for c in sorted(rng.sample(columns, int(kind[0])), key=columns.index):
                if isinstance(lo[c], datetime.date):
                    span = (hi[c] - lo[c]).days
                    width = max(0, round(span * math.exp(rng.uniform(math.log(0.005), math.log(0.2)))))
                    start = lo[c] + datetime.timedelta(days=rng.randint(0, span - width))
                    box[c] = (start, start + datetime.timedelta(days=width))
                else:
                    span = hi[c] - lo[c]
                    width = max(0, round(span * math.exp(rng.uniform(math.log(0.005), math.log(0.2)))))
                    start = lo[c] + rng.randint(0, span - width)
                    box[c] = (start, start + width)
        where = box_where(box)
        queries.append({"kind": kind, "box": box, "where": where,
                        "sql": f"select count(*), sum({measure}) from {table} where {where}"})
    return queries


def intersecting(boxes: list[dict], box: dict) -> list[dict]:
    """The files whose min/max box meets `box` (a file whose column is all null meets no range of it)."""
    return [f for f in boxes if all(f[f"{c}_lo"] is not None and f[f"{c}_lo"] <= hi and f[f"{c}_hi"] >= lo
                                    for c, (lo, hi) in box.items())]


def file_boxes(spark, table: str, columns: list[str] = LINEITEM_COLUMNS) -> list[dict]:
    """Each file's rows and exact min/max box over `columns` (rule off), with its local path."""
    set_skipping(spark, False)
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in columns)
    rows = spark.sql(f"select _metadata.file_path as path, count(*) as n, {aggs} from {table} "
                     "group by _metadata.file_path").collect()
    return [{**r.asDict(), "path": str(local(r["path"]))} for r in rows]


def declared_workload(spark, source: str, n: int, seed: int, rows: int, dataset: dict) -> list[dict]:
    """A workload to declare in `cluster_workload` for `cluster_method: auto`: queries drawn by the
    same generator as the measured workload, with another seed (the layout is chosen on queries like
    the ones it serves, not on those it is measured with), as boxes {column: [lo, hi]}."""
    columns = dataset["columns"]
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in columns)
    domain = [spark.sql(f"select {aggs} from {source}").first().asDict()]
    return [{c: [str(lo) if isinstance(lo, datetime.date) else lo, str(hi) if isinstance(hi, datetime.date) else hi]
             for c, (lo, hi) in q["box"].items()}
            for q in make_workload(spark, source, domain, n, seed, rows, columns, dataset["order_column"],
                                   dataset["measure"])]
