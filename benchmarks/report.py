"""One command for the benchmark report (issue #7): pruning, cost and memory of the package's
layouts against insertion order, plain ORDER BY and delta-rs Z-order, on synthetic telemetry,
TPC-DS store_sales and TPC-H lineitem, measured in one run.

    .venv/bin/python benchmarks/report.py [--rows 10000000] [--quick]

Writes build/bench/report.md and build/bench/report.json. A full run also writes the charts to
docs/img/bench_*.png, a copy of the report to docs/benchmarks.md and the results table of README.md
(between `<!-- bench:begin -->` and `<!-- bench:end -->`); `--quick` (~200k rows) is a smoke check
that writes only under build/bench/ (unless --publish). Not a test: it asserts nothing.

    .venv/bin/python benchmarks/report.py --render-only [JSON] [--publish | --no-publish]

measures nothing: rewrites the outputs from a saved run (default build/bench/report.json); publishes
as that run did unless told otherwise. Measuring is report_measure.py, rendering report_render.py.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import report_measure
import report_render
from common import BENCH


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="telemetry rows (default 10,000,000; --quick 200,000)")
    parser.add_argument("--quick", action="store_true", help="smoke check: small data, one timing round")
    parser.add_argument("--files", type=int, help="files per telemetry variant (default 64; --quick 16)")
    parser.add_argument("--tpcds-sf", type=float, help="TPC-DS scale factor (default 1 = 2.88M rows; --quick 0.1)")
    parser.add_argument("--tpcds-files", type=int, help="files per store_sales variant (default 32; --quick 16)")
    parser.add_argument("--tpch-sf", type=float, help="TPC-H scale factor (default 1 = 6.0M lineitem rows; --quick 0.1)")
    parser.add_argument("--tpch-files", type=int, help="files per lineitem variant (default 64; --quick 16)")
    parser.add_argument("--build-rounds", type=int,
                        help="times each layout is built, in turn, each round starting one layout later; "
                             "its cost is the fastest (default 5; --quick 1)")
    parser.add_argument("--boxes", type=int, default=60, help="boxes per workload")
    parser.add_argument("--box-fraction", type=float, default=0.1, help="box width per column, share of its range")
    parser.add_argument("--seed", type=int, default=11, help="seed of the box workloads")
    parser.add_argument("--recluster-rows", type=int,
                        help="--rows for bench_recluster.py (default: its own default; --quick 200,000)")
    parser.add_argument("--key-repeat", type=int, help="timed rounds of the key-throughput queries (default 3; --quick 1)")
    parser.add_argument("--render-only", nargs="?", type=Path, const=BENCH / "report.json", default=False,
                        metavar="JSON", help="measure nothing: rewrite the outputs from a saved run's JSON "
                                             "(default: the last run's build/bench/report.json)")
    parser.add_argument("--publish", action=argparse.BooleanOptionalAction, default=None,
                        help="write docs/img, docs/benchmarks.md and the README table (default: on unless --quick; "
                             "with --render-only: as the saved run did)")
    args = parser.parse_args(argv)
    if args.render_only:
        return args  # the saved run's options apply; --publish stays None unless given
    quick = args.quick
    args.rows = args.rows or (200_000 if quick else 10_000_000)
    args.files = args.files or (16 if quick else 64)
    args.tpcds_sf = args.tpcds_sf or (0.1 if quick else 1.0)
    args.tpcds_files = args.tpcds_files or (16 if quick else 32)
    args.tpch_sf = args.tpch_sf or (0.1 if quick else 1.0)
    args.tpch_files = args.tpch_files or (16 if quick else 64)
    args.build_rounds = args.build_rounds or (1 if quick else 5)
    args.key_repeat = args.key_repeat or (1 if quick else 3)
    args.recluster_rows = args.recluster_rows or (200_000 if quick else None)
    args.publish = (not quick) if args.publish is None else args.publish
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        results = json.loads(args.render_only.read_text())
        report_render.write_outputs(results, results["args"]["publish"] if args.publish is None else args.publish)
        print(f"rewrote the outputs of the run in {args.render_only}")
        return 0
    command = ".venv/bin/python benchmarks/report.py " + " ".join(sys.argv[1:] if argv is None else argv)
    results = report_measure.measure(args, command)
    report_measure.save(results, BENCH / "report.json")
    report_render.write_outputs(results, results["args"]["publish"])
    print(f"wrote {BENCH / 'report.md'} in {results['wall_seconds']:.0f} s", flush=True)
    print((BENCH / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
