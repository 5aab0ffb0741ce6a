"""What ran a benchmark: the machine and the commit; a run's figures written to JSON with them."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import time
from pathlib import Path

from spark_clustering_dev.paths import REPO


def machine_facts() -> dict:
    """Cores, RAM (GiB), CPU model, OS and Python of this machine."""
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ram = 0.0
    try:
        ram = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")) / 2**20
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(), "ram_gib": round(ram, 1), "cpu": cpu, "os": platform.platform(),
            "python": platform.python_version()}


def git_head() -> str:
    """The checkout's commit: `<short hash> <subject>` ("?" outside a git checkout)."""
    try:
        return subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, check=True).stdout.strip()[:120]
    except Exception:  # noqa: BLE001
        return "?"


def write_results(json_path: Path, spark, args, started: float, load_before, **figures) -> dict:
    """The run's figures with when, where and what ran them, written to `json_path`."""
    results = {"date": datetime.date.today().isoformat(), "machine": machine_facts(), "spark": spark.version,
               "commit": git_head(), "args": {k: str(v) for k, v in vars(args).items()}, **figures,
               "seconds": round(time.monotonic() - started, 1), "loadavg_before": load_before,
               "loadavg_after": os.getloadavg()}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1, default=str))
    print(f"{results['seconds']:.0f} s; load average before {load_before[0]:.2f}, after {results['loadavg_after'][0]:.2f}; "
          f"figures in {json_path}")
    return results
