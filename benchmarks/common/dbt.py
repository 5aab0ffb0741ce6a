"""The benchmarks' own dbt project (benchmarks/dbt_project: the models they build, not the integration
tests' cases), and dbt runs with a benchmark's own target and log folders (the tests or another
benchmark may run dbt at the same time)."""
from __future__ import annotations

from pathlib import Path

from common import BENCH
from spark_clustering_dev.dbt import run_dbt

PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"


def dbt_env(name: str) -> dict[str, str]:
    """Benchmark `name`'s DBT_TARGET_PATH and DBT_LOG_PATH: build/bench/dbt-target-<name>, dbt-logs-<name>."""
    return {"DBT_TARGET_PATH": str(BENCH / f"dbt-target-{name}"), "DBT_LOG_PATH": str(BENCH / f"dbt-logs-{name}")}


def dbt_runner(name: str, project_dir: Path = PROJECT):
    """`run(args, schema, vars)`: run_dbt on `project_dir` (the benchmarks' project unless told
    otherwise) with benchmark `name`'s folders (another project's runs get folders of their own)."""
    env = dbt_env(name if project_dir == PROJECT else f"{name}-{project_dir.name}")

    def run(args: list[str], schema: str, vars: dict):
        return run_dbt(args, schema=schema, vars=vars, project_dir=project_dir, env=env)

    return run
