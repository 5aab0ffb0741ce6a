"""The Spark lines the jar is built for (spark_lines/lines.json) and where each line's pieces live.

One jar per line, `build/spark-clustering-udfs_<line>_<scala>.jar`, compiled against that line's
pyspark (its own virtualenv) and the Delta / Iceberg / hadoop-aws jars of that line. The default line
is the project's own venv (`.venv`, requirements.lock) and jars (jars/pom.xml and
jars/compile/pom.xml, in build/jars); every other line has `spark_lines/<line>/` (requirements.lock,
pom.xml, SHA256SUMS), a virtualenv in the cache (kept between clean clones, keyed by its lock file)
and its compile jars in `build/lines/<line>/jars`.

Used by scripts/setup (through `python -m spark_clustering_dev.lines`), udfs/scala/build_jar.py, the
tests and the benchmarks.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINES_DIR = REPO / "spark_lines"
BUILD = REPO / "build"


def config() -> dict:
    return json.loads((LINES_DIR / "lines.json").read_text())


def default_line() -> str:
    return config()["default"]


def lines() -> list[str]:
    return list(config()["lines"])


def spec(line: str) -> dict:
    known = config()["lines"]
    if line not in known:
        raise KeyError(f"Spark {line}: the package is built for Spark {', '.join(known)} (spark_lines/lines.json)")
    return known[line]


def line_of(version: str) -> str:
    """`4.1` of `4.1.4`."""
    return ".".join(version.split(".")[:2])


def jar_name(line: str) -> str:
    return f"spark-clustering-udfs_{line}_{spec(line)['scala']}.jar"


def jar(line: str) -> Path:
    return BUILD / jar_name(line)


def cache_dir() -> Path:
    """Kept between clean clones of the repo (CI): virtualenvs and jars whose inputs did not change."""
    return Path(os.environ.get("SPARK_CLUSTERING_CACHE") or Path.home() / ".cache" / "spark_clustering")


def requirements(line: str) -> Path:
    return REPO / "requirements.lock" if line == default_line() else LINES_DIR / line / "requirements.lock"


def venv(line: str) -> Path:
    """The line's virtualenv: `.venv` for the default line, else one in the cache per lock file."""
    if line == default_line():
        return REPO / ".venv"
    digest = hashlib.sha256(requirements(line).read_bytes()).hexdigest()[:12]
    return cache_dir() / "venvs" / f"spark-{line}-{digest}"


def python(line: str) -> Path:
    return venv(line) / "bin" / "python"


def pyspark_jars(line: str) -> Path:
    """pyspark's jars/ in the line's virtualenv."""
    found = sorted(venv(line).glob("lib/python*/site-packages/pyspark/jars"))
    if not found:
        raise FileNotFoundError(f"no pyspark in {venv(line)}: run scripts/setup --lines {line}")
    return found[0]


def compile_jars(line: str) -> list[Path]:
    """The Maven jars the line's extension compiles against (Delta, Iceberg, hadoop-aws and the AWS SDK
    classes it names), fetched by scripts/setup: for the default line build/jars (jars/pom.xml) and
    build/jars/compile (jars/compile/pom.xml), never build/jars/s3 (S3A's runtime jars, there only
    after scripts/setup --s3: the jar and its fingerprint must not depend on them); for another line
    build/lines/<line>/jars (spark_lines/<line>/pom.xml)."""
    if line == default_line():
        return sorted((BUILD / "jars").glob("*.jar")) + sorted((BUILD / "jars" / "compile").glob("*.jar"))
    return sorted((BUILD / "lines" / line / "jars").glob("*.jar"))


def main(argv: list[str]) -> int:
    """`python -m spark_clustering_dev.lines <what> [line]`: one value per line of output, for
    scripts/setup (what: lines, default, venv, requirements, jar)."""
    what = argv[0]
    if what == "lines":
        print("\n".join(lines()))
    elif what == "default":
        print(default_line())
    else:
        print({"venv": venv, "requirements": requirements, "jar": jar, "pyspark": lambda l: spec(l)["pyspark"]}[what](argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
