"""Draw each data file of a table as its [min, max] box on two columns (one rectangle per file).

    scripts/plot_file_boxes --table schema.table [--table schema.other] --x col --y col --out f.png

Several `--table`s are drawn side by side on shared axes limits (e.g. clustered vs insertion order).
The CLI starts the embedded SparkSession over the example job's warehouse (`spark_clustering_dev.spark.get_spark()`
default, `build/work/session`); `plot_file_boxes(spark, table, x, y, out)` is the same for a caller
that already has a session.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence


def file_boxes(spark, table: str, x: str, y: str) -> dict[str, Any]:
    """Per data file: (x_min, x_max, y_min, y_max). Files with no non-NULL x or y have no box."""
    rows = spark.sql(
        f"select _metadata.file_path as file_path, min(`{x}`) as x_lo, max(`{x}`) as x_hi, "
        f"min(`{y}`) as y_lo, max(`{y}`) as y_hi from {table} group by _metadata.file_path"
    ).collect()
    boxes = [(r.x_lo, r.x_hi, r.y_lo, r.y_hi) for r in rows if r.x_lo is not None and r.y_lo is not None]
    return {"table": table, "file_count": len(rows), "boxes": boxes}


def _numeric_axis(values: Sequence[Any]) -> tuple[dict[Any, float] | None, str]:
    """How to place values on an axis: numbers/dates as is; other orderables by their rank."""
    sample = next((v for v in values if v is not None), None)
    if sample is None or isinstance(sample, (int, float, Decimal, dt.date, dt.datetime)):
        return None, ""
    return {v: float(i) for i, v in enumerate(sorted(set(values)))}, " (rank of value)"


def _as_float(value: Any) -> float:
    import matplotlib.dates as mdates

    if isinstance(value, (dt.date, dt.datetime)):
        return float(mdates.date2num(value))
    return float(value)


def plot_file_boxes(spark, table: str | Sequence[str], x: str, y: str, out: str | Path) -> dict[str, Any]:
    """Render the file boxes of one table (or several, side by side) to a PNG at `out`.

    Returns {"out": path, "tables": {table: {"file_count": n, "boxes": b, "rectangles": r}}}: b files
    have a box (a non-NULL value in both columns), r counts the Rectangle patches on that table's axes.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    tables = [table] if isinstance(table, str) else list(table)
    measured = [file_boxes(spark, t, x, y) for t in tables]
    all_x = [v for m in measured for b in m["boxes"] for v in b[:2]]
    all_y = [v for m in measured for b in m["boxes"] for v in b[2:]]
    x_ranks, x_note = _numeric_axis(all_x)
    y_ranks, y_note = _numeric_axis(all_y)
    to_x = (lambda v: x_ranks[v]) if x_ranks else _as_float
    to_y = (lambda v: y_ranks[v]) if y_ranks else _as_float

    fig, axes = plt.subplots(1, len(tables), figsize=(6 * len(tables), 5.5), squeeze=False)
    result: dict[str, Any] = {"out": str(out), "tables": {}}
    for ax, m in zip(axes[0], measured):
        for x_lo, x_hi, y_lo, y_hi in m["boxes"]:
            left, right, bottom, top = to_x(x_lo), to_x(x_hi), to_y(y_lo), to_y(y_hi)
            # Edges drawn too, so a constant file (zero width or height) still shows as a line.
            ax.add_patch(Rectangle((left, bottom), right - left, top - bottom, facecolor="tab:blue",
                                   edgecolor="navy", alpha=0.25, linewidth=0.8))
        if all_x and all_y:
            xs = [to_x(v) for v in all_x]
            ys = [to_y(v) for v in all_y]
            pad_x = (max(xs) - min(xs)) * 0.02 or 1.0
            pad_y = (max(ys) - min(ys)) * 0.02 or 1.0
            ax.set_xlim(min(xs) - pad_x, max(xs) + pad_x)
            ax.set_ylim(min(ys) - pad_y, max(ys) + pad_y)
        ax.set_xlabel(x + x_note)
        ax.set_ylabel(y + y_note)
        ax.set_title(f"{m['table']}: {m['file_count']} files")
        # Counted from what the axes hold, not from the loop: what will actually be rendered.
        rectangles = sum(isinstance(p, Rectangle) for p in ax.patches)
        result["tables"][m["table"]] = {"file_count": m["file_count"], "boxes": len(m["boxes"]),
                                        "rectangles": rectangles}
    fig.suptitle(f"per-file [min, max] of ({x}, {y})")
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", action="append", required=True, help="schema.table (repeat to compare)")
    parser.add_argument("--x", required=True, help="column on the x axis")
    parser.add_argument("--y", required=True, help="column on the y axis")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--work-dir", default=None,
                        help="warehouse + metastore folder (default: the example job's, build/work/session)")
    args = parser.parse_args(argv)

    from spark_clustering_dev.paths import JAR
    from spark_clustering_dev.spark import get_spark

    # The jar is only needed to compute clustering keys, not to read tables.
    spark = get_spark(args.work_dir, app_name="spark_clustering_plot", with_jar=JAR.exists())
    spark.sparkContext.setLogLevel("ERROR")
    result = plot_file_boxes(spark, args.table, args.x, args.y, args.out)
    for name, drawn in result["tables"].items():
        print(f"{name}: {drawn['rectangles']} rectangles for {drawn['file_count']} files")
    print(f"wrote {result['out']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
