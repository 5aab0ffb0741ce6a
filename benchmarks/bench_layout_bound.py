"""How few files any layout of --files equal files reads on bench_table_formats' workload: the yardstick
for its goal "files read <= 0.8 x the best native layout's". Offline (numpy over the cached TPC-H
lineitem / TPC-DS store_sales parquet of bench_table_formats, no Spark), so it takes seconds.

    .venv/bin/python benchmarks/bench_layout_bound.py [--dataset lineitem|store_sales] [--sf 1] [--files 64]
        [--queries 60] [--seed 11] [--other-seeds 30] [--json build/bench/layout_bound_<dataset>.json]

Layouts, each cut over ALL the rows (not a sample, as a build does), every file's min/max box exact:
  k-d tree, widest    a part of n files is cut at its row quantile (n // 2) / n on the column whose
                      rank range is widest in the part (the package's `kdtree(...)` candidate);
  k-d tree, in turn   the same, cutting the columns in turn by depth;
  grid                every column cut at its own global quantiles (cells of about equal rows when
                      the columns are independent), as many cuts per column as the files allow.
A file whose column is all null has no bound on it (it meets no range of that column), as in the
formats' statistics. Workload: common/workloads.py's make_workload, the seed bench_table_formats
measures with (--seed), and the mean over --other-seeds seeds after it: how hard that one draw is.

Why these stand for "any layout": a query that bounds one column reads every file whose range on it
meets the query's. On rows spread evenly, a file holding 1/F of them spans ranges whose product is
at least 1/F of the domain, so the sum of its ranges over d columns is at least d * F^(-1/d)
(AM-GM), least when every file is a cube: what these layouts make. Points and narrow boxes read about
one file in all of them. Prints a table; asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from common import BENCH
from common.datasets import DATASETS
from common.workloads import KINDS, make_workload

EPOCH = datetime.date(1970, 1, 1)


def load(dataset: str, sf: float) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, str]:
    """The dataset's clustering columns, their values (float64, dates as days; NaN = null), the null
    mask, the rows' generation order, and the type of each column ('date' or 'int')."""
    info = DATASETS[dataset]
    parquet = info["parquet"](sf, BENCH / ("tpch" if dataset == "lineitem" else "tpcds"))
    columns = info["columns"]
    table = pq.read_table(parquet, columns=[info["order_column"], *columns])
    values, kinds = [], []
    for c in columns:
        col = table.column(c)
        if str(col.type).startswith("date"):
            col = col.cast("int32")
            kinds.append("date")
        else:
            kinds.append("int")
        values.append(col.to_numpy(zero_copy_only=False).astype(np.float64))
    x = np.stack(values, axis=1)
    return columns, x, np.isnan(x), table.column(info["order_column"]).to_numpy(), kinds


def workload(columns, x, nulls, order, kinds, n: int, seed: int, dataset: str) -> list[tuple[str, dict]]:
    """bench_table_formats' workload of `seed` as (kind, {column index: (lo, hi)}) in x's units."""
    info = DATASETS[dataset]
    by_order = np.argsort(order)

    def value(i: int, j: int):
        if nulls[j, i]:
            return None
        v = int(x[j, i])
        return EPOCH + datetime.timedelta(days=v) if kinds[i] == "date" else v

    def find_rows(ids):
        rows = []
        for row_id in ids:
            j = by_order[np.searchsorted(order[by_order], row_id)]
            rows.append({info["order_column"]: row_id, **{c: value(i, j) for i, c in enumerate(columns)}})
        return rows

    domain = [{}]
    for i, c in enumerate(columns):
        lo, hi = int(np.nanmin(x[:, i])), int(np.nanmax(x[:, i]))
        domain[0][f"{c}_lo"] = EPOCH + datetime.timedelta(days=lo) if kinds[i] == "date" else lo
        domain[0][f"{c}_hi"] = EPOCH + datetime.timedelta(days=hi) if kinds[i] == "date" else hi
    queries = make_workload(None, "rows", domain, n, seed, len(order), columns, info["order_column"],
                            info["measure"], find_rows=find_rows)
    out = []
    for q in queries:
        box = {}
        for c, (lo, hi) in q["box"].items():
            if isinstance(lo, datetime.date):
                lo, hi = (lo - EPOCH).days, (hi - EPOCH).days
            box[columns.index(c)] = (lo, hi)
        out.append((q["kind"], box))
    return out


def file_boxes(x: np.ndarray, files: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per file (0..F-1): min and max of every column over its non-null values (NaN: all null), rows."""
    order = np.argsort(files, kind="stable")
    sorted_files = files[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_files)) + 1]
    xs = x[order]
    lo = np.stack([np.fmin.reduceat(xs[:, i], starts) for i in range(x.shape[1])], axis=1)
    hi = np.stack([np.fmax.reduceat(xs[:, i], starts) for i in range(x.shape[1])], axis=1)
    return lo, hi, np.diff(np.r_[starts, len(files)])


def files_read(lo: np.ndarray, hi: np.ndarray, queries) -> dict:
    """Files whose box meets each query's, summed, in all and per kind (NaN bounds meet nothing)."""
    per_kind = {}
    for kind, box in queries:
        meets = np.ones(len(lo), dtype=bool)
        for i, (a, b) in box.items():
            meets &= (lo[:, i] <= b) & (hi[:, i] >= a)
        per_kind[kind] = per_kind.get(kind, 0) + int(meets.sum())
    return {"all": sum(per_kind.values()), **per_kind}


def ranks(x: np.ndarray) -> np.ndarray:
    """Each value's rank in its column / rows (nulls first, as range ids put them)."""
    keyed = np.where(np.isnan(x), -np.inf, x)
    return np.stack([np.argsort(np.argsort(keyed[:, i], kind="stable"), kind="stable") for i in range(x.shape[1])],
                    axis=1) / len(x)


def kdtree(r: np.ndarray, num_files: int, choose) -> np.ndarray:
    """The file of every row in a k-d tree of `num_files` leaves, cut on rank order by `choose`."""
    stack, parts = [(np.arange(len(r)), num_files, 0)], []
    while stack:
        idx, n, depth = stack.pop()
        if n == 1:
            parts.append(idx)
            continue
        col = choose(r[idx], depth)
        idx = idx[np.argsort(r[idx, col], kind="stable")]
        k = len(idx) * (n // 2) // n
        stack.append((idx[k:], n - n // 2, depth + 1))
        stack.append((idx[:k], n // 2, depth + 1))
    files = np.zeros(len(r), dtype=np.int64)
    for leaf, idx in enumerate(parts):
        files[idx] = leaf
    return files


def grid(r: np.ndarray, num_files: int) -> tuple[np.ndarray, list[int]]:
    """Files of a grid with about num_files ** (1/d) cuts per column (their product = num_files)."""
    d = r.shape[1]
    cuts, left = [], num_files
    for i in range(d):
        k = max(1, round(left ** (1 / (d - i))))
        while left % k:
            k -= 1
        cuts.append(k)
        left //= k
    files = np.zeros(len(r), dtype=np.int64)
    for i, k in enumerate(cuts):
        files = files * k + np.minimum((r[:, i] * k).astype(np.int64), k - 1)
    return files, cuts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="lineitem")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--other-seeds", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    columns, x, nulls, order, kinds = load(args.dataset, args.sf)
    measured = workload(columns, x, nulls, order, kinds, args.queries, args.seed, args.dataset)
    others = [workload(columns, x, nulls, order, kinds, args.queries, s, args.dataset)
              for s in range(args.seed + 100, args.seed + 100 + args.other_seeds)]
    r = ranks(x)
    layouts = {
        "k-d tree, widest": kdtree(r, args.files, lambda part, depth: int(np.argmax(part.max(0) - part.min(0)))),
        "k-d tree, in turn": kdtree(r, args.files, lambda part, depth: depth % part.shape[1]),
    }
    grid_files, cuts = grid(r, args.files)
    layouts[f"grid {' x '.join(map(str, cuts))}"] = grid_files
    results = {}
    print(f"{DATASETS[args.dataset]['title']} SF {args.sf:g}, {len(x):,} rows, {args.files} files, "
          f"{args.queries} queries, seed {args.seed}\n")
    kinds_order = KINDS
    print(f"| layout | files | rows per file | files read, seed {args.seed} | " + " | ".join(kinds_order)
          + f" | mean over {args.other_seeds} other seeds |")
    print("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in kinds_order) + " | ---: |")
    for name, files in layouts.items():
        lo, hi, rows = file_boxes(x, files)
        read = files_read(lo, hi, measured)
        mean = float(np.mean([files_read(lo, hi, q)["all"] for q in others]))
        results[name] = {"files": len(rows), "rows_min": int(rows.min()), "rows_max": int(rows.max()),
                         "files_read": read, "mean_other_seeds": round(mean, 1)}
        print(f"| {name} | {len(rows)} | {rows.min():,}-{rows.max():,} | {read['all']} | "
              + " | ".join(str(read.get(k, 0)) for k in kinds_order) + f" | {mean:.1f} |")
    out = args.json or BENCH / f"layout_bound_{args.dataset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "args": vars(args) | {"json": str(out)},
                               "rows": len(x), "layouts": results}, indent=1))
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
