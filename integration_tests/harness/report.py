"""The clustering report of the example project: the latest run's rows of the package's
`spark_clustering_audit` model (computed by `clustering_information` / `files_scanned_ratio`)."""
from __future__ import annotations

import json


def clustering_report(spark, schema: str) -> list[dict]:
    rows = spark.sql(f"""
        select * from {schema}.spark_clustering_audit
        where run_id = (select max_by(run_id, run_started_at) from {schema}.spark_clustering_audit)
        order by relation_name, column_name""").collect()
    by_model: dict[str, dict] = {}
    for r in rows:
        entry = by_model.setdefault(r.relation_name, {
            "model": r.relation_name.split(".")[-1], "method": r.clustering_method, "files": 0, "average_depth": {},
            "box_average_overlaps": r.box_average_overlaps, "workload_ratio": r.workload_mean_ratio})
        entry["files"] = max(entry["files"], r.total_file_count + r.null_only_file_count)
        entry["average_depth"][r.column_name] = r.average_depth
        entry.setdefault("histograms", {})[r.column_name] = json.loads(r.depth_histogram)
    return sorted(by_model.values(), key=lambda e: (e["workload_ratio"] is None, e["workload_ratio"] or 0))


def format_report(report: list[dict]) -> str:
    columns = sorted({c for r in report for c in r["average_depth"]})
    head = ["model", "method", "files"] + [f"avg depth {c}" for c in columns] + ["box overlaps", "workload ratio"]
    rows = [[r["model"], r["method"], str(r["files"])]
            + [f"{r['average_depth'][c]:.2f}" if c in r["average_depth"] else "-" for c in columns]
            + [f"{r['box_average_overlaps']:.2f}",
               f"{r['workload_ratio']:.3f}" if r["workload_ratio"] is not None else "-"]
            for r in report]
    widths = [max([len(h)] + [len(x[i]) for x in rows]) for i, h in enumerate(head)]
    out = ["Clustering report (avg depth: files stacked over a point of the column, 1 = perfect; box overlaps:",
           "other files a file's box intersects on every column; workload ratio: files scanned / all files",
           "for the declared cluster_workload, lower is better)",
           "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(x.ljust(w) for x, w in zip(row, widths)) + " |" for row in rows]
    return "\n".join(out)
