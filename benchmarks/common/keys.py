"""The curve-key throughput queries: `SELECT sum(xxhash64(<expr>))` over ids derived from
`range(rows)`, a key function (the jar's native hilbert_key / zorder_key / range_id) against the plain
scan of the same ids (bench_curve_keys.py adds the Python UDF and SQL variants; the report times the
native ones)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from common.timing import JvmCpu

BITS = 10
RANGES = 1000  # ids in [0, 1000) fit 10 bits
BOUNDARY_COUNT = 1000

# Inputs shared by every query: 4 ids in [0, 1000) and a double for range_id.
SOURCE = f"""
SELECT
  CAST(pmod(xxhash64(id, 1), {RANGES}) AS INT) AS a,
  CAST(pmod(xxhash64(id, 2), {RANGES}) AS INT) AS b,
  CAST(pmod(xxhash64(id, 3), {RANGES}) AS INT) AS c,
  CAST(pmod(xxhash64(id, 4), {RANGES}) AS INT) AS d,
  CAST(pmod(xxhash64(id, 5), 1000000) AS DOUBLE) / 1000.0D AS v
FROM range({{rows}})
"""


def boundaries_sql() -> str:
    # Evenly spaced over v's domain [0, 1000): 1000 sorted, distinct doubles.
    return "array(" + ", ".join(f"{i * 1000.0 / BOUNDARY_COUNT!r}D" for i in range(BOUNDARY_COUNT)) + ")"


@dataclass
class Variant:
    name: str
    expr: str  # hashed and summed per row
    baseline: str  # name of the baseline variant its ratio is computed against
    slow: bool = False  # Python / SQL variants: fewer repetitions
    cpu_in_jvm: bool = True  # False when work happens outside the JVM (Python UDF workers)


def native_variants(boundaries: str) -> list[Variant]:
    return [
        Variant("baseline: 3 ids (scan + hash)", "xxhash64(a, b, c)", "ids3"),
        Variant("native hilbert_key 3 cols", f"xxhash64(hilbert_key({BITS}, a, b, c))", "ids3"),
        Variant("native zorder_key 3 cols", f"xxhash64(zorder_key({BITS}, a, b, c))", "ids3"),
        Variant("baseline: 4 ids (scan + hash)", "xxhash64(a, b, c, d)", "ids4"),
        Variant("native hilbert_key 4 cols", f"xxhash64(hilbert_key({BITS}, a, b, c, d))", "ids4"),
        Variant("native zorder_key 4 cols", f"xxhash64(zorder_key({BITS}, a, b, c, d))", "ids4"),
        Variant("baseline: 1 double (scan + hash)", "xxhash64(v)", "value"),
        Variant(f"native range_id {BOUNDARY_COUNT} boundaries", f"xxhash64(range_id(v, {boundaries}))", "value"),
    ]


def run_once(spark, expr: str, rows: int, cpu: JvmCpu | None = None) -> tuple[float, float | None]:
    """(wall seconds, JVM CPU seconds or None)."""
    query = f"SELECT sum({expr}) AS s FROM ({SOURCE.format(rows=rows)})"
    cpu_start = cpu.seconds() if cpu else None
    start = time.perf_counter()
    spark.sql(query).collect()
    wall = time.perf_counter() - start
    cpu_end = cpu.seconds() if cpu else None
    return wall, (cpu_end - cpu_start) if cpu_start is not None and cpu_end is not None else None


def warm_up(spark, variant: Variant, rows: int) -> None:
    run_once(spark, variant.expr, rows)
    run_once(spark, variant.expr, rows)
