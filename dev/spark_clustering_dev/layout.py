"""Independent checks of a table's physical layout, computed straight from Spark (not the package)."""
from __future__ import annotations

import random


def fingerprint(spark, table: str, columns: list[str] | None = None) -> tuple[int, int, int]:
    """(rows, sum of 32-bit row hashes, xor of 64-bit row hashes): equal for the same rows in any order."""
    if columns is None:
        columns = [f.name for f in spark.table(table).schema.fields]
    cols = ", ".join("`" + c.replace("`", "``") + "`" for c in columns)
    row = spark.sql(
        f"select count(*), coalesce(sum(cast(hash({cols}) as bigint)), 0), coalesce(bit_xor(xxhash64({cols})), 0) "
        f"from {table}"
    ).first()
    return int(row[0]), int(row[1]), int(row[2])


def file_ranges(spark, table: str, columns: list[str]) -> list[dict]:
    """One dict per data file: path, rows, and lo/hi per column (numeric or orderable values)."""
    aggs = ", ".join(f"min(`{c}`) as `{c}__lo`, max(`{c}`) as `{c}__hi`" for c in columns)
    rows = spark.sql(
        f"select _metadata.file_path as path, count(*) as n, {aggs} from {table} group by 1"
    ).collect()
    return [r.asDict() for r in rows]


def mean_width_ratio(spark, table: str, column: str) -> float:
    """Mean over files of (file max - file min) / (table max - table min) for a numeric column."""
    row = spark.sql(
        f"""select avg(w) / (max(hi_all) - min(lo_all)) from (
              select _metadata.file_path, cast(max(`{column}`) as double) - cast(min(`{column}`) as double) as w,
                     max(max(cast(`{column}` as double))) over () as hi_all,
                     min(min(cast(`{column}` as double))) over () as lo_all
              from {table} group by 1)"""
    ).first()
    return float(row[0])


def random_boxes(spark, table: str, columns: list[str], count: int, fraction: float, seed: int = 7) -> list[dict]:
    """`count` boxes, each covering `fraction` of every column's numeric range, placed at random."""
    bounds = spark.sql(
        "select " + ", ".join(f"min(`{c}`), max(`{c}`)" for c in columns) + f" from {table}"
    ).first()
    rng = random.Random(seed)
    boxes = []
    for _ in range(count):
        box = {}
        for i, c in enumerate(columns):
            lo, hi = float(bounds[2 * i]), float(bounds[2 * i + 1])
            width = (hi - lo) * fraction
            start = rng.uniform(lo, hi - width)
            box[c] = (start, start + width)
        boxes.append(box)
    return boxes


def skewed_boxes(bounds: dict[str, tuple[float, float]], time_column: str, key_column: str, count: int, seed: int,
                 shares: tuple[float, float, float] = (0.7, 0.2, 0.1), fraction: float = 0.1) -> list[dict]:
    """A workload queried unevenly: shares[0] of the `count` boxes are ranges on `time_column` alone,
    shares[1] on `key_column` alone, the rest boxes on every column of `bounds` ({column: (lo, hi)});
    each range `fraction` of its column's span, placed at random."""
    rng = random.Random(seed)
    n_time, n_key = round(count * shares[0]), round(count * shares[1])

    def box(columns):
        out = {}
        for c in columns:
            lo, hi = bounds[c]
            start = rng.uniform(lo, hi - (hi - lo) * fraction)
            out[c] = (start, start + (hi - lo) * fraction)
        return out

    return ([box([time_column]) for _ in range(n_time)] + [box([key_column]) for _ in range(n_key)]
            + [box(list(bounds)) for _ in range(count - n_time - n_key)])


def mean_files_scanned(ranges: list[dict], boxes: list[dict]) -> float:
    """Mean number of files whose [lo, hi] intersects a box on every column of the box."""
    total = 0
    for box in boxes:
        total += sum(
            all(f[f"{c}__lo"] is not None and f[f"{c}__lo"] <= hi and f[f"{c}__hi"] >= lo for c, (lo, hi) in box.items())
            for f in ranges
        )
    return total / len(boxes)
