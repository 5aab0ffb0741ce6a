"""Box workloads and how many files each layout must read for them, from per-file min/max."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

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
    return sum(
        all(f[f"{c}_lo"] is not None and f[f"{c}_lo"] <= hi and f[f"{c}_hi"] >= lo for c, (lo, hi) in box.items())
        for f in files
    )


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
