"""The clustering report of the example project, computed by the package's own macros
(`clustering_information`, `files_scanned_ratio`) through `dbt run-operation`."""
from __future__ import annotations

import yaml

from harness.dbt import run_operation_json
from harness.paths import INTEGRATION_TESTS

REPORT_COLUMNS = ["mission_id", "ts", "payload_id"]


def example_workload() -> list[dict]:
    project = yaml.safe_load((INTEGRATION_TESTS / "dbt_project.yml").read_text())
    return project["vars"]["telemetry_workload"]


def clustering_report(spark, schema: str, skip: tuple[str, ...] = ("telemetry_events",)) -> list[dict]:
    workload = example_workload()
    report = []
    for row in spark.sql(f"show tables in {schema}").collect():
        table = row.tableName
        if table in skip or row.isTemporary or "__sc_" in table:
            continue
        props = {r.key: r.value for r in spark.sql(f"show tblproperties {schema}.{table}").collect()}
        method = props.get("spark_clustering.method", "insertion order")
        relation = f"{schema}.{table}"
        info = run_operation_json("clustering_information", {"relation": relation, "columns": REPORT_COLUMNS},
                                  schema=schema)
        scanned = run_operation_json("files_scanned_ratio", {"relation": relation, "workload": workload},
                                     schema=schema)
        report.append({
            "model": table, "method": method,
            "cluster_by": props.get("spark_clustering.cluster_by", ""),
            "files": info["total_files"],
            "average_depth": {c: info["columns"][c]["average_depth"] for c in REPORT_COLUMNS},
            "workload_ratio": scanned["mean_ratio"],
            "scanned_over_ideal": scanned.get("mean_scanned_over_ideal"),
        })
    return sorted(report, key=lambda r: r["workload_ratio"])


def format_report(report: list[dict]) -> str:
    head = ["model", "method", "files"] + [f"avg depth {c}" for c in REPORT_COLUMNS] + ["workload ratio", "scanned/ideal"]
    rows = [[r["model"], r["method"], str(r["files"])]
            + [f"{r['average_depth'][c]:.2f}" for c in REPORT_COLUMNS]
            + [f"{r['workload_ratio']:.3f}", f"{r['scanned_over_ideal']:.2f}" if r["scanned_over_ideal"] is not None else "-"]
            for r in report]
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h) for i, h in enumerate(head)]
    out = ["Clustering report (average depth: files overlapping at a point, 1 is perfect; workload ratio: "
           "files scanned / all files for the declared box workload, lower is better)",
           "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(x.ljust(w) for x, w in zip(row, widths)) + " |" for row in rows]
    return "\n".join(out)
