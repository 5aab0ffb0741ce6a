"""What the benchmarks share; a benchmark imports these modules, never another benchmark.

    machine.py      the machine and the commit a run ran on; a run's figures written with them
    timing.py       wall time and the Spark JVM's CPU time of a step, a timed CTAS
    dbt.py          the benchmarks' own dbt project (benchmarks/dbt_project) and a runner per benchmark
    datasets.py     the source rows: TPC-H lineitem and TPC-DS store_sales (DuckDB), the telemetry model
    workloads.py    box queries over the clustering columns, per-file min/max boxes, the files a box
                    must read (pruning scores)
    scans.py        what a query's scans read: Spark's numFiles metric, the data-skipping rule's own
    small_files.py  planning time on many small files (bench_data_skipping's part 2, on a bucket
                    in bench_object_store)
    formats.py      Delta Lake / Iceberg sessions, tables and the formats' own clustering
    keys.py         the curve-key throughput queries (bench_curve_keys, the report's key throughput)

The benchmarks run as scripts (`.venv/bin/python benchmarks/<name>.py`): Python puts the script's
folder, benchmarks/, first on the path, so `common` is found there without any path set-up.
"""
from __future__ import annotations

from spark_clustering_dev.paths import BUILD

BENCH = BUILD / "bench"  # the benchmarks' output: JSON figures, generated data, dbt's target and logs
