"""Build build/spark-clustering-udfs.jar from udfs/scala/src with the Scala compiler in pyspark's jars/.

No sbt/Maven (and so no network): scalac runs as `java -cp <pyspark jars> scala.tools.nsc.Main`.
Sources: src/main/scala (every Spark line) plus src/shims/spark-<line>/scala, the few classes whose
Spark internals differ between Spark lines (e.g. FileSourceScanExec's constructor), for the line of
the installed pyspark. Skips the compile when a stamp (sha256 of the sources, this script and the
pyspark version) matches.

Usage: python udfs/scala/build_jar.py [--force]
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SRC = HERE / "src" / "main" / "scala"
SHIMS = HERE / "src" / "shims"
BUILD = REPO / "build"
CLASSES = BUILD / "scala-classes"
JAR = BUILD / "spark-clustering-udfs.jar"
STAMP = BUILD / "spark-clustering-udfs.jar.sha256"


def pyspark_jars() -> tuple[str, list[Path]]:
    import pyspark

    jars_dir = Path(os.path.dirname(pyspark.__file__)) / "jars"
    # scalac does not expand `*` in a classpath, and jars/ also holds a directory (connect-repl).
    jars = sorted(p for p in jars_dir.glob("*.jar") if p.is_file())
    if not any(p.name.startswith("scala-compiler-") for p in jars):
        sys.exit(f"udf jar: no scala-compiler-*.jar in {jars_dir}; is pyspark installed correctly?")
    return pyspark.__version__, jars


def spark_line(version: str) -> str:
    """`4.1` of pyspark `4.1.4`."""
    return ".".join(version.split(".")[:2])


def format_jars() -> list[Path]:
    """The Delta, Iceberg and hadoop-aws jars scripts/setup fetched (jars/pom.xml): the format
    rewrites (commit/formats) and the S3A commit compile against them; at run time they are only
    loaded when a session reclusters a table of that format, or on s3a://."""
    jars = sorted((BUILD / "jars").glob("*.jar"))
    if not jars:
        sys.exit(f"udf jar: no Delta/Iceberg jars in {BUILD / 'jars'}; run scripts/setup (it fetches them first)")
    # S3A's pending uploads (commit/S3APendingUploads.scala): only loaded when a table is on s3a://
    # (and the AWS SDK bundle, whose types its signatures name)
    aws = sorted((BUILD / "jars" / "s3").glob("hadoop-aws-*.jar")) + sorted((BUILD / "jars" / "s3").glob("bundle-*.jar"))
    if len(aws) != 2:
        sys.exit(f"udf jar: no hadoop-aws and AWS SDK bundle jars in {BUILD / 'jars' / 's3'}; run scripts/setup "
                 "(it fetches them first)")
    return jars + aws


def sources(version: str) -> list[Path]:
    shims = SHIMS / f"spark-{spark_line(version)}" / "scala"
    if not shims.is_dir():
        lines = sorted(p.name.removeprefix("spark-") for p in SHIMS.glob("spark-*"))
        sys.exit(f"udf jar: no shims for Spark {spark_line(version)} (pyspark {version}) under {SHIMS}; "
                 f"the extension is built for Spark {', '.join(lines)}")
    return sorted(SRC.rglob("*.scala")) + sorted(shims.rglob("*.scala"))


def fingerprint(version: str, files: list[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(f"pyspark {version}\n".encode())
    for path in [Path(__file__).resolve(), *files]:
        digest.update(f"{path.relative_to(REPO)}\n".encode())
        # a fetched jar by its name and size (scripts/setup verified its bytes against
        # jars/SHA256SUMS): hashing the 640 MB AWS SDK bundle at every build would cost seconds
        digest.update(str(path.stat().st_size).encode() if path.suffix == ".jar" else path.read_bytes())
    return digest.hexdigest()


def write_jar() -> None:
    tmp = JAR.with_suffix(".jar.tmp")
    jar_tool = shutil.which("jar") or (
        str(Path(os.environ["JAVA_HOME"]) / "bin" / "jar") if os.environ.get("JAVA_HOME") else None)
    if jar_tool and Path(jar_tool).exists():
        subprocess.run([jar_tool, "cf", str(tmp), "-C", str(CLASSES), "."], check=True)
    else:  # a JRE without the jar tool: a jar is a zip with an optional manifest
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(CLASSES.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(CLASSES).as_posix())
    tmp.replace(JAR)


def main() -> int:
    force = "--force" in sys.argv[1:]
    version, jars = pyspark_jars()
    files = sources(version)
    if not files:
        print(f"udf jar: no .scala sources under {SRC}", file=sys.stderr)
        return 1
    want = fingerprint(version, files + format_jars())
    if not force and JAR.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        print("udf jar: up to date")
        return 0

    java = shutil.which("java") or (
        str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else None)
    if not java:
        print("udf jar: `java` not found (install a JDK 17+ or set JAVA_HOME)", file=sys.stderr)
        return 1

    # Stale classes from renamed sources must not end up in the jar.
    shutil.rmtree(CLASSES, ignore_errors=True)
    CLASSES.mkdir(parents=True)
    classpath = ":".join(str(p) for p in jars + format_jars())
    cmd = [java, "-Xss8m", "-cp", classpath, "scala.tools.nsc.Main",
           "-classpath", classpath, "-d", str(CLASSES), "-deprecation", "-feature",
           *[str(f) for f in files]]
    print(f"udf jar: compiling {len(files)} Scala file(s) against pyspark {version} "
          f"({len(jars)} jars) -> {CLASSES.relative_to(REPO)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        print(f"udf jar: scalac FAILED after {elapsed:.1f}s (exit {proc.returncode}):", file=sys.stderr)
        print(output, file=sys.stderr)
        STAMP.unlink(missing_ok=True)
        return proc.returncode or 1
    if output:
        print(output)
    print(f"udf jar: compiled in {elapsed:.1f}s")

    write_jar()
    STAMP.write_text(want + "\n")
    print(f"udf jar: wrote {JAR.relative_to(REPO)} ({JAR.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
