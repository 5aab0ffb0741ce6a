"""Throughput of the curve-key functions against a plain scan, in one Spark session.

    .venv/bin/python benchmarks/bench_curve_keys.py [--rows 5000000] [--repeat 5] [--no-python]

Every query is `SELECT sum(xxhash64(<expr>)) FROM <spark.range(rows) with derived columns>`, so
nothing is optimized away and the only difference between a variant and its baseline is <expr>.
Each variant first runs twice untimed (JIT + codegen warm-up; Python/SQL variants on a slice), then
`--repeat` timed rounds interleave all variants; the table reports medians of wall time and of the
Spark JVM's CPU time (more robust when other jobs share the machine). Variants:

* native: the Scala Catalyst functions from the jar of the running Spark line (the extension).
* python: `spark_clustering_udfs.register(spark, prefix="py_")` (Arrow UDFs), when importable.
* sql: the dbt SQL fallback expressions; see `sql_fallback_expression` (a hook, not wired yet).

Not a test: it prints a markdown table and asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

from common.keys import BITS, BOUNDARY_COUNT, RANGES, Variant, boundaries_sql, native_variants, run_once, warm_up
from common.timing import JvmCpu


# --------------------------------------------------------------------------------------------
# Hook: Python UDFs (udfs/python/spark_clustering_udfs)
# --------------------------------------------------------------------------------------------

def python_udf_variants(spark, boundaries: str) -> list[Variant]:
    """The Arrow UDFs registered as py_range_id / py_zorder_key / py_hilbert_key."""
    try:
        import spark_clustering_udfs
    except ImportError as exc:
        print(f"note: Python UDF rows skipped (cannot import spark_clustering_udfs: {exc})")
        return []
    try:
        spark_clustering_udfs.register(spark, prefix="py_")
    except Exception as exc:  # noqa: BLE001 - a broken work-in-progress package must not stop the run
        print(f"note: Python UDF rows skipped (register failed: {type(exc).__name__}: {exc})")
        return []
    return [
        Variant("python hilbert_key 3 cols", f"xxhash64(py_hilbert_key({BITS}, a, b, c))", "ids3", slow=True, cpu_in_jvm=False),
        Variant("python hilbert_key 4 cols", f"xxhash64(py_hilbert_key({BITS}, a, b, c, d))", "ids4", slow=True, cpu_in_jvm=False),
        Variant("python zorder_key 3 cols", f"xxhash64(py_zorder_key({BITS}, a, b, c))", "ids3", slow=True, cpu_in_jvm=False),
        Variant("python zorder_key 4 cols", f"xxhash64(py_zorder_key({BITS}, a, b, c, d))", "ids4", slow=True, cpu_in_jvm=False),
        Variant(f"python range_id {BOUNDARY_COUNT} boundaries", f"xxhash64(py_range_id(v, {boundaries}))",
                "value", slow=True, cpu_in_jvm=False),
    ]


# --------------------------------------------------------------------------------------------
# Hook: SQL fallback (the dbt macros' pure-SQL expressions)
# --------------------------------------------------------------------------------------------

def sql_fallback_expression(function: str, bits: int, args: list[str]) -> str | None:
    """The SQL text the dbt fallback macros generate for `function(bits, *args)` (or for
    range_id(args[0], args[1])), rendered by dbt itself (`run-operation`, backend `sql`)."""
    from spark_clustering_dev.dbt import run_operation_json

    if function == "range_id":
        spec = {"function": function, "value": args[0], "boundaries": args[1], "backend": "sql"}
    else:
        spec = {"function": function, "bits": bits, "ids": args, "backend": "sql"}
    return run_operation_json("print_curve_key_expression", {"spec": spec}, prefix="curve_key_expression")


def sql_fallback_variants(boundaries: str) -> list[Variant]:
    wanted = [
        ("sql hilbert_key 3 cols", "hilbert_key", ["a", "b", "c"], "ids3"),
        ("sql hilbert_key 4 cols", "hilbert_key", ["a", "b", "c", "d"], "ids4"),
        ("sql zorder_key 3 cols", "zorder_key", ["a", "b", "c"], "ids3"),
        ("sql zorder_key 4 cols", "zorder_key", ["a", "b", "c", "d"], "ids4"),
        (f"sql range_id {BOUNDARY_COUNT} boundaries", "range_id", ["v", boundaries], "value"),
    ]
    variants = []
    for name, function, args, baseline in wanted:
        expr = sql_fallback_expression(function, BITS, args)
        if expr is not None:
            variants.append(Variant(name, f"xxhash64({expr})", baseline, slow=True))
    if not variants:
        print("note: SQL fallback rows skipped (hook sql_fallback_expression in "
              "benchmarks/bench_curve_keys.py is not wired to the dbt macros yet)")
    return variants


# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each native variant")
    parser.add_argument("--slow-repeat", type=int, default=1, help="timed runs of each Python/SQL variant")
    parser.add_argument("--warmup-rows", type=int, default=500_000,
                        help="rows of the warm-up runs of Python/SQL variants (native ones warm up on --rows)")
    parser.add_argument("--no-python", action="store_true", help="skip the Python UDF rows")
    args = parser.parse_args(argv)

    from spark_clustering_dev.paths import WORK
    from spark_clustering_dev.spark import get_spark

    # Python UDF workers must run this interpreter (the venv with numpy/pyarrow), not `python3`.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    spark = get_spark(WORK / "bench", app_name="bench_curve_keys")
    spark.sparkContext.setLogLevel("ERROR")
    boundaries = boundaries_sql()

    variants = native_variants(boundaries)
    if not args.no_python:
        variants += python_udf_variants(spark, boundaries)
    variants += sql_fallback_variants(boundaries)

    cores = spark.sparkContext.defaultParallelism
    print(f"\nrows={args.rows:,}  master={spark.sparkContext.master}  parallelism={cores}  "
          f"spark={spark.version}  bits={BITS}  ids in [0, {RANGES})\n", flush=True)
    # Rounds interleave the variants, so a burst of load from other processes on the machine hits
    # a baseline and its variants alike instead of one variant's every run.
    cpu = JvmCpu(spark)
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    for variant in list(variants):
        try:
            warm_up(spark, variant, min(args.rows, args.warmup_rows) if variant.slow else args.rows)
        except Exception as exc:  # noqa: BLE001 - report the row and keep benchmarking the others
            if not variant.slow:
                raise
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(f"  {variant.name}: FAILED ({type(exc).__name__}: {first_line[:200]})", flush=True)
            variants.remove(variant)
            continue
        walls[variant.name], cpus[variant.name] = [], []
    for round_ in range(max(args.repeat, args.slow_repeat)):
        done = []
        for variant in variants:
            if round_ < (args.slow_repeat if variant.slow else args.repeat):
                wall, cpu_seconds = run_once(spark, variant.expr, args.rows, cpu)
                walls[variant.name].append(wall)
                if cpu_seconds is not None:
                    cpus[variant.name].append(cpu_seconds)
                done.append(f"{variant.name.split(' (')[0]} {wall:.2f}s")
        print(f"  round {round_ + 1}: " + ", ".join(done), flush=True)

    wall = {name: statistics.median(runs) for name, runs in walls.items()}
    cpu_median = {name: statistics.median(runs) if runs else None for name, runs in cpus.items()}
    base_of = {v.baseline: v.name for v in variants if v.name.startswith("baseline")}

    print("\n| variant | wall s (median) | rows/s | ratio to baseline | JVM CPU s | ratio by CPU time |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant in variants:
        base = base_of[variant.baseline]
        t, c, base_c = wall[variant.name], cpu_median[variant.name], cpu_median[base]
        cpu_cells = f"{c:.2f} | {base_c / c:.2f}x" if c and base_c and variant.cpu_in_jvm else "n/a | n/a"
        print(f"| {variant.name} | {t:.2f} | {args.rows / t:,.0f} | {wall[base] / t:.2f}x | {cpu_cells} |")
    print("\nratio = baseline / variant (1.00x = as fast as the scan; wall time and the Spark JVM's CPU "
          "time, n/a for Python UDFs whose work is in Python workers); each key row is compared with the baseline on the same ids, range_id with the 1-double "
          f"baseline. {args.repeat} rounds (Python/SQL rows: {args.slow_repeat}), medians.")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
