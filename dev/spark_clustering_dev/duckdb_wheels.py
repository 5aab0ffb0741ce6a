"""DuckDB extensions from their PyPI wheels (duckdb-extension-<name>, pinned in requirements-dev.lock):
`INSTALL <name>` would download them from outside the package registries. Used for the benchmarks'
data (tpch, tpcds: benchmarks/common/datasets.py) and the other readers of the package's tables
(delta, iceberg, avro: other_readers.py)."""
from __future__ import annotations

import glob
import importlib
from pathlib import Path


def wheel_extension(name: str) -> Path:
    """The file of extension `name` inside its wheel's package (duckdb_extension_<name>/extensions/v<duckdb>/)."""
    package_dir = Path(importlib.import_module(f"duckdb_extension_{name}").__file__).parent
    found = sorted(glob.glob(str(package_dir / "extensions" / "*" / f"{name}.duckdb_extension")))
    if not found:
        raise FileNotFoundError(f"no {name}.duckdb_extension under {package_dir}")
    return Path(found[-1])
